"""The scheduler's step cache (app/monitors/windows/step_cache.py): a window read again reuses the
steps of unchanged traces and re-reads the rest, and gives exactly the records a load
without the cache gives — on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy.orm import Session

from app.monitors.windows import trace_window as windows
from app.monitors.windows.step_cache import StepCache
from tests.app.engine_helpers import T0, ingest, setup_project

N = 120


def _events(i: int) -> list[dict[str, Any]]:
    start = T0 + timedelta(seconds=30 * i)
    out: list[dict[str, Any]] = [{"id": f"t{i}", "type": "trace", "body": {
        "trace_id": f"t{i}", "agent": "bot", "started_at": start.isoformat(),
        "ended_at": (start + timedelta(seconds=5)).isoformat()}}]  # fmt: skip
    for k in range(2 + i % 3):
        out.append({"id": f"s{i}.{k}", "type": "span", "body": {
            "trace_id": f"t{i}", "span_id": f"{i}-{k}", "step_index": k,
            "kind": "tool" if k % 2 == 0 else "llm", "name": f"step{k}",
            "tool_name": "db" if k % 2 == 0 else None,
            "status": "error" if (i + k) % 4 == 0 else "ok",
            "started_at": (start + timedelta(seconds=k)).isoformat()}})  # fmt: skip
    return out


def _load(engine: Engine, pid: int, cache: StepCache | None) -> list[Any]:
    with Session(engine) as session:
        return windows.load_trace_window(
            session, windows.TraceSelection(project_id=pid),
            start=T0, end=T0 + timedelta(hours=3), with_embeddings=False, step_cache=cache,
        ).records  # fmt: skip


class _SpanReads:
    """Counts the statements that read the spans table."""

    def __init__(self, engine: Engine) -> None:
        self.n = 0
        event.listen(engine, "before_cursor_execute", self._seen)

    def _seen(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "FROM spans" in statement:
            self.n += 1


def test_a_window_read_again_reuses_unchanged_steps_and_rereads_grown_traces(
    engine: Engine,
) -> None:
    pid = setup_project(engine, "p1")
    ingest(engine, pid, [e for i in range(N) for e in _events(i)])
    cache = StepCache()
    first = _load(engine, pid, cache)
    assert first == _load(engine, pid, None) and len(first) == N
    assert cache.hits == 0 and len(cache) == N
    cache.end_cycle()

    reads = _SpanReads(engine)
    second = _load(engine, pid, cache)
    assert second == first
    assert cache.hits == N and reads.n == 0  # no span read at all

    # A trace grows (a failed step), another gets a late label, a third a trace merge.
    ingest(engine, pid, [
        {"id": "late-span", "type": "span", "body": {
            "trace_id": "t5", "span_id": "5-9", "step_index": 9, "kind": "tool",
            "name": "retry", "tool_name": "db", "status": "error",
            "started_at": (T0 + timedelta(seconds=155)).isoformat()}},
        {"id": "late-label", "type": "score", "body": {
            "trace_id": "t7", "name": "resolved", "value": 0.0, "kind": "true",
            "source": "delayed"}},
        {"id": "t9-again", "type": "trace", "body": {
            "trace_id": "t9", "agent": "bot", "status": "error",
            "started_at": (T0 + timedelta(seconds=270)).isoformat(),
            "ended_at": (T0 + timedelta(seconds=280)).isoformat()}},
    ])  # fmt: skip
    cache.end_cycle()
    hits = cache.hits
    third = _load(engine, pid, cache)
    assert third == _load(engine, pid, None)
    by_id = {r.trace_id: r for r in third}
    assert [s.name for s in by_id["t5"].steps][-1] == "retry" and by_id["t5"].steps[-1].failed
    assert by_id["t7"].label is not None and by_id["t7"].label.value == 0.0
    assert by_id["t9"].status == "error"
    # Only the grown and merged traces were read again (a score does not touch its trace).
    assert cache.hits - hits == N - 2


def test_end_cycle_forgets_the_traces_a_cycle_did_not_read() -> None:
    cache = StepCache()
    cache.put(1, "a", 1, ())
    cache.put(1, "b", 1, ())
    cache.end_cycle()
    assert cache.get(1, "a", 1) == () and len(cache) == 2
    assert cache.get(1, "b", 2) is None  # grown: a miss, and not used
    cache.end_cycle()
    assert len(cache) == 1 and cache.get(1, "b", 1) is None
    assert cache.get(2, "a", 1) is None  # another project's trace of the same id
