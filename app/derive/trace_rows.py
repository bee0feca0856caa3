"""What the derive job writes back to a trace row: its derived values, remembered as ours.

A value the telemetry gave explicitly is kept; what the job derived is also recorded under
``telltale.derived`` (:mod:`app.derive.trace_fields`) so a later run may replace it. The
update matches on the ``updated_at`` the trace was read with: a trace that grew meanwhile
is left to be derived again. A successful derivation clears ``derive_error``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, update

from app.derive.groups import INPUT_GROUP
from app.derive.trace_fields import DERIVED, DerivedFields, is_explicit, owned
from app.models import Trace

LOOP = "telltale.loop"

TRACE_UPDATE = (
    update(Trace)
    .where(
        Trace.id == bindparam("b_id"),
        Trace.updated_at == bindparam("b_seen", type_=Trace.updated_at.type),
    )
    .values(
        input_hash=bindparam("b_hash"),
        source=bindparam("b_source"),
        counterfactual_of=bindparam("b_pair"),
        attributes=bindparam("b_attributes", type_=Trace.attributes.type),
        derived_at=bindparam("b_now", type_=Trace.derived_at.type),
        step_profile=bindparam("b_profile"),
        loop_tool=bindparam("b_loop_tool"),
        loop_calls=bindparam("b_loop_calls"),
        derive_error=None,
    )
)


def update_row(
    t: dict[str, Any],
    sig: DerivedFields,
    final_hash: str | None,
    group: str | None,
    pair: str | None,
    embedded: tuple[str, Any] | None,
    now: datetime,
) -> dict[str, Any]:
    attrs = dict(t["attributes"] or {})
    mine = dict(owned(t))

    def put(name: str, value: Any) -> None:
        if value is None:
            attrs.pop(name, None)
            mine.pop(name, None)
        else:
            attrs[name] = mine[name] = value

    for name, value in (("decision", sig.decision), ("confidence", sig.confidence)):
        if not is_explicit(t, name, attrs.get(name)):
            put(name, value)
    if group is not None:
        put(INPUT_GROUP, group)
    if not is_explicit(t, "input_hash", t["input_hash"]):
        mine["input_hash"] = final_hash
    counterfactual = t["counterfactual_of"]
    if not is_explicit(t, "counterfactual_of", counterfactual):
        counterfactual = mine["counterfactual_of"] = pair
    source = t["source"]
    if sig.source is not None:
        source = mine["source"] = sig.source
    if embedded is not None:
        mine["embedded"] = embedded[0]
    loop = sig.loop
    # What a loop wasted, beside its columns (app/derive/loops.py).
    put(LOOP, None if loop is None or loop.tool is None else {
        "wasted_calls": loop.wasted_calls, "wasted_tokens": loop.wasted_tokens,
        "wasted_cost": loop.wasted_cost,
    })  # fmt: skip
    attrs[DERIVED] = {k: v for k, v in mine.items() if v is not None}
    return {
        "b_id": t["id"],
        "b_seen": t["updated_at"],
        "b_hash": final_hash,
        "b_source": source,
        "b_pair": counterfactual,
        "b_attributes": attrs,
        "b_now": now,
        "b_loop_tool": None if loop is None else loop.tool,
        "b_loop_calls": None if loop is None else loop.calls,
    }
