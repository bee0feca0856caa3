"""The derive job: derived fields for every settled trace, in batches, leader-only.

A periodic job of the scheduler (:mod:`app.scheduler.jobs`, one process per interval
through the DB lease, like data retention). Each batch: read the settled traces with their
spans and GenAI events (:mod:`app.derive.load`), derive each one's fields
(:mod:`app.derive.trace_fields`), embed the input and output texts in one encoder call
and store them (:mod:`app.derive.text_vectors`), price the LLM calls sent without a cost
(:mod:`app.pricing.span_costs`), then in one short write transaction assign input groups,
pair counterfactuals, write the traces and the calls' costs.

The embedding runs before the write transaction (on SQLite the lock would hold ingest up
for the whole forward pass). A trace that grew meanwhile is not overwritten: its update
matches on the ``updated_at`` it was read with, and the growth cleared ``derived_at``, so
it is derived again once it settles; its vectors, already written, are not written twice
(event ids hash their text). :func:`derive_pending` is what tests and benches call.

Each trace is isolated (:mod:`app.derive.failures`): a batch that fails is derived again
one trace at a time, and a trace that fails alone is set aside with its reason.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.db import write_transaction
from app.derive.evaluations import enqueue_derived
from app.derive.failure_events import trace_failures
from app.derive.failures import OUTAGES, mark_failed
from app.derive.groups import load_groups, save_new_groups
from app.derive.load import DEFAULT_BATCH_SPANS, Batch, Keyset, pending_batch
from app.derive.pairs import pair_batch
from app.derive.patterns import MAX_TEXT_CHARS
from app.derive.text_vectors import (
    MINILM_NAME,
    SharedMiniLM,
    TextEncoder,
    TextItem,
    embed_items,
    write_vectors,
)
from app.derive.trace_fields import DerivedFields, derive_trace, is_explicit, owned
from app.derive.trace_rows import TRACE_UPDATE, update_row
from app.issues.record import record_failures
from app.models.base import utcnow
from app.models.rollups import mark_started
from app.monitors.windows.trace_window import step_profiles_of
from app.pricing.span_costs import batch_costs, write_costs
from app.settings import Settings

log = logging.getLogger("telltale.derive")

DERIVE_EVERY_SECONDS = 5.0
_NEVER = datetime.max.replace(tzinfo=UTC)  # traces without a start go last
Key = tuple[int, str]


@dataclass
class DeriveReport:
    traces: int = 0
    embeddings: int = 0
    batches: int = 0


def derive_job(engine: Engine, _sessionmaker: Any, settings: Settings) -> None:
    """The periodic job: derive what settled, for at most 80% of the interval."""
    if not settings.derive_enabled:
        return
    report = derive_pending(
        engine,
        now=utcnow(),
        settle_seconds=settings.derive_settle_seconds,
        batch_size=settings.derive_batch_traces,
        batch_spans=settings.derive_batch_spans,
        text_embeddings=settings.derive_text_embeddings,
        embed_device=settings.derive_embed_device,
        time_budget_s=0.8 * DERIVE_EVERY_SECONDS,
    )
    if report.traces:
        log.info("derived %d traces (%d embeddings)", report.traces, report.embeddings)


def derive_pending(
    engine: Engine,
    *,
    now: datetime,
    settle_seconds: float = 30.0,
    batch_size: int = 256,
    batch_spans: int = DEFAULT_BATCH_SPANS,
    text_embeddings: bool = True,
    encoder: TextEncoder | None = None,
    embed_device: str = "auto",
    time_budget_s: float | None = None,
) -> DeriveReport:
    """Derive every trace settled at ``now`` (no arrival for ``settle_seconds``).

    ``text_embeddings=False`` skips the text embeddings for every project (a project turns
    them off with ``text_embeddings.enabled``); ``encoder`` replaces the shared MiniLM.
    ``time_budget_s`` stops after the batch that passes it (the rest waits for the next run).
    """
    cutoff = now - timedelta(seconds=settle_seconds)
    if text_embeddings and encoder is None:
        encoder = SharedMiniLM(device=embed_device)
    report = DeriveReport()
    started = time.perf_counter()
    after: dict[int, Keyset] = {}  # per project: traces at or before it were read this run
    while True:
        with engine.connect() as conn:
            batch = pending_batch(
                conn, cutoff=cutoff, limit=batch_size, span_budget=batch_spans, after=after
            )
        if not batch.traces:
            break
        for t in batch.traces:  # each project's rows come oldest first
            after[t["project_id"]] = (t["updated_at"], t["id"])
        report.embeddings += _derive_batch(engine, batch, now=now, encoder=encoder)
        report.traces += len(batch.traces)
        report.batches += 1
        if time_budget_s is not None and time.perf_counter() - started > time_budget_s:
            break
    return report


def _digest(sig: DerivedFields) -> str:
    return hashlib.sha256(f"{sig.input_text}\x00{sig.output_text}".encode()).hexdigest()[:16]


def _derive_batch(
    engine: Engine, batch: Batch, *, now: datetime, encoder: TextEncoder | None
) -> int:
    """Derive the batch together; if that fails, each trace alone, setting aside those
    that fail alone. Returns the vectors written."""
    try:
        return _derive_together(engine, batch, now=now, encoder=encoder)
    except OUTAGES:
        raise
    except Exception as exc:
        if len(batch.traces) == 1:
            mark_failed(engine, batch.traces[0], exc, now=now)
            return 0
        log.warning("derive: a batch of %d traces failed (%s); one by one", len(batch.traces),
                    type(exc).__name__)  # fmt: skip
    written = 0
    for t in batch.traces:
        try:
            written += _derive_together(engine, _only(batch, t), now=now, encoder=encoder)
        except OUTAGES:
            raise
        except Exception as exc:
            mark_failed(engine, t, exc, now=now)
    return written


def _only(batch: Batch, t: dict[str, Any]) -> Batch:
    key = (t["project_id"], t["trace_id"])
    return Batch(
        traces=[t],
        spans={key: batch.spans[key]},
        events={key: batch.events[key]},
        configs={t["project_id"]: batch.configs[t["project_id"]]},
        prices={t["project_id"]: batch.prices[t["project_id"]]},
    )


def _derive_together(
    engine: Engine, batch: Batch, *, now: datetime, encoder: TextEncoder | None
) -> int:
    costs = batch_costs(batch.traces, batch.spans, batch.prices)
    priced: dict[Key, dict[str, float]] = {}
    for c in costs:
        if c["b_cost"] is not None:
            priced.setdefault((c["b_project"], c["b_trace"]), {})[c["b_span"]] = c["b_cost"]
    derived: dict[Key, DerivedFields] = {}
    for t in batch.traces:
        key = (t["project_id"], t["trace_id"])
        derived[key] = derive_trace(
            t, batch.spans[key], batch.events[key], batch.configs[t["project_id"]],
            priced.get(key),
        )  # fmt: skip
    hashes = {
        key: (
            t["input_hash"]
            if is_explicit(t, "input_hash", t["input_hash"])
            else derived[key].input_hash
        )
        for t in batch.traces
        for key in [(t["project_id"], t["trace_id"])]
    }
    embedded, written = _embed(engine, batch, derived, encoder)
    profiles = _step_profiles(engine, batch)
    with write_transaction(engine) as conn:
        groups = _assign_groups(conn, batch, hashes, embedded)
        pairs = pair_batch(conn, traces=batch.traces, configs=batch.configs, hashes=hashes)
        rows = []
        for t in batch.traces:
            key = (t["project_id"], t["trace_id"])
            found = (groups.get(key), pairs.get(key), embedded.get(key))
            row = update_row(t, derived[key], hashes[key], *found, now)
            row["b_profile"] = profiles.get(key)
            rows.append(row)
        conn.execute(TRACE_UPDATE, rows)
        # Failures grouped into issues, in this transaction: a re-derived trace replaces its
        # events, a crash leaves counts and events as one (app/issues/record.py).
        record_failures(conn, traces=batch.traces, failures={
            key: trace_failures(t, batch.spans[key], derived[key].loop)
            for t in batch.traces for key in [(t["project_id"], t["trace_id"])]
        }, now=now)  # fmt: skip
        # LLM calls sent without a cost, priced before their buckets are marked (app/pricing).
        write_costs(conn, costs)
        # The rollups count settled traces: their buckets are rebuilt (app/rollups).
        mark_started(conn, ((t["project_id"], t["started_at"]) for t in batch.traces))
        # Online evaluators judge derived traces (app/evaluators/queue.py).
        enqueue_derived(conn, [
            {**t, "source": derived[(t["project_id"], t["trace_id"])].source or t["source"]}
            for t in batch.traces
        ], now=now)  # fmt: skip
    return written


def _step_profiles(engine: Engine, batch: Batch) -> dict[Key, str]:
    """The batch's step profiles, stored with its derived fields so that the monitors' sampled
    windows find them (app/monitors/windows/profiles.py) instead of reading spans in the
    cycle: at 100,000 traces/h profiling one interval's traffic there took ~14 s of it."""
    by_project: dict[int, list[str]] = {}
    for t in batch.traces:
        by_project.setdefault(t["project_id"], []).append(t["trace_id"])
    out: dict[Key, str] = {}
    with Session(engine) as session:
        for project_id, trace_ids in by_project.items():
            found = step_profiles_of(session, project_id=project_id, trace_ids=trace_ids)
            out.update(((project_id, tid), p) for tid, p in found.items())
    return out


def _embed(
    engine: Engine, batch: Batch, derived: dict[Key, DerivedFields], encoder: TextEncoder | None
) -> tuple[dict[Key, tuple[str, Any]], int]:
    """Embed what changed; ``({key: (digest, input vector or None)}, vectors written)``."""
    if encoder is None:
        return {}, 0
    items: list[TextItem] = []
    digests: dict[Key, str] = {}
    for t in batch.traces:
        key = (t["project_id"], t["trace_id"])
        sig = derived[key]
        if not batch.configs[t["project_id"]].text_embeddings.enabled:
            continue
        if sig.input_text is None and sig.output_text is None:
            continue
        digests[key] = _digest(sig)
        if owned(t).get("embedded") == digests[key]:
            continue  # re-derived, same texts: the vectors are stored already
        for side, full in (("input", sig.input_text), ("output", sig.output_text)):
            # Both sides bounded alike: MiniLM reads 256 tokens, and a megabyte of output
            # would cost the tokenizer its whole length for nothing.
            text = full[:MAX_TEXT_CHARS] if full else None
            if text:
                items.append(TextItem(t["project_id"], t["trace_id"], t["agent"], side, text,
                                     t.get("started_at")))  # fmt: skip
    vectors = embed_items(encoder, items)
    model = getattr(encoder, "name", MINILM_NAME)
    written = write_vectors(engine, items=items, vectors=vectors, model=model)
    pairs = zip(items, vectors, strict=True)
    inputs = {(i.project_id, i.trace_id): v for i, v in pairs if i.side == "input"}
    return {key: (digest, inputs.get(key)) for key, digest in digests.items()}, written


def _assign_groups(
    conn: Any, batch: Batch, hashes: dict[Key, str | None], embedded: dict[Key, tuple[str, Any]]
) -> dict[Key, str]:
    """The input group of each trace whose input was embedded now or grouped before."""
    todo = [t for t in batch.traces if (t["project_id"], t["trace_id"]) in embedded]
    todo = [t for t in todo if hashes[(t["project_id"], t["trace_id"])] and t["agent"]]
    todo.sort(key=lambda t: (t["started_at"] or _NEVER, t["trace_id"]))
    wanted: dict[tuple[int, str], set[str]] = {}
    for t in todo:
        wanted.setdefault((t["project_id"], t["agent"]), set()).add(
            str(hashes[(t["project_id"], t["trace_id"])])
        )
    by_agent = {
        (p, agent): load_groups(conn, project_id=p, agent=agent, input_hashes=hashes_of_agent)
        for (p, agent), hashes_of_agent in wanted.items()
    }
    out: dict[Key, str] = {}
    for t in todo:
        key = (t["project_id"], t["trace_id"])
        input_hash = str(hashes[key])
        groups = by_agent[(t["project_id"], t["agent"])]
        vector = embedded[key][1]
        threshold = batch.configs[t["project_id"]].input_identity.group_threshold
        if vector is not None:
            out[key] = groups.assign(input_hash, vector, threshold=threshold)
        elif input_hash in groups.known:
            out[key] = groups.known[input_hash]
    for project_id in {p for p, _ in by_agent}:
        mine = {agent: g for (p, agent), g in by_agent.items() if p == project_id}
        save_new_groups(conn, project_id=project_id, groups=mine)
    return out
