"""Failure issues (#53): grouping throughput, and the issues τ-bench airline's real failed
tool results group into, against a grouping by hand.

Prints JSON:

* ``grouping``: messages mined into templates and fingerprinted
  (:class:`app.issues.templates.FailureTemplates`, :func:`app.issues.grouping.fingerprint`)
  on one core, the work the derive job adds per failure event: events/s, median of
  ``--runs``. The messages: 40 shapes of tool and step errors (ids, numbers, dates, uuids,
  e-mails varying), seeded. Target: >= 1,000 events/s.
* ``record``: the derive job's whole write of failure events (:func:`app.issues.record.
  record_failures`: take back the traces' old events, mine, create issues, insert events,
  move counts) into a fresh SQLite file and PostgreSQL database (``--db``), 256 traces of
  2 failures per transaction: events/s including the commits.
* ``tau_bench``: the 200 gpt-4o airline trajectories (tests/data/tau_bench, the data of
  bench/real_traffic.py): each failed tool result (``error``: its text starts with
  "Error") is a failure of its trace, recorded through ``record_failures`` as the derive
  job records it; then the issues read back with their counts, each one's purity against
  a grouping by hand (:data:`BY_HAND`: what a person reading the 73 messages calls the
  same failure, per tool), the issues mixing two tools (must be 0), and the hand groups
  split over several issues.

    .venv/bin/python -m bench.issues_grouping
    .venv/bin/python -m bench.issues_grouping --events 20000 --runs 3
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy import insert, select

from app import migrate
from app.db import make_engine, write_transaction
from app.issues.failures import Failure
from app.issues.grouping import fingerprint, forget
from app.issues.record import record_failures
from app.issues.templates import FailureTemplates
from app.models import FailureEvent, FailureIssue, Project
from bench.common import fresh_db
from bench.real_traffic import DATA, load_trajectories

# A person's reading of τ-bench airline's failed tool results: one group per cause.
BY_HAND = (
    (r"^Error: flight \S+ not available on date", "flight not available on the date"),
    (r"^Error: not enough seats on flight", "not enough seats"),
    (r"^Error: gift card balance is not enough", "gift card balance too low"),
    (r"^Error: not enough balance in payment method", "payment method balance too low"),
    (r"^Error: payment amount does not add up", "payment does not add up"),
    (r"^Error: payment method (\S+ )?not found", "payment method not found"),
    (r"^Error: certificate cannot be used", "certificate not allowed for updates"),
)
START = datetime(2026, 12, 1, tzinfo=UTC)


def hand_group(text: str) -> str:
    return next((name for pattern, name in BY_HAND if re.search(pattern, text)), "other: " + text)


def _shapes() -> list[str]:
    words = ["reservation", "flight", "order", "user", "payment", "seat", "ticket", "refund"]
    verbs = ["not found", "is locked", "was cancelled", "cannot be changed", "has expired"]
    shapes = [f"Error: {w} {{id}} {v}" for w in words[:8] for v in verbs[:4]]  # 32
    shapes += [
        "Timeout after {n} ms calling {host}", "HTTP {code} from upstream: rate limited",
        "ValueError: invalid literal for int() with base 10: '{id}'",
        "connection reset by peer ({host}:{code})", "quota exceeded for key {uuid}",
        "user {email} has no permission for {id}", "price changed from {n} to {n} since {date}",
        "database is locked (attempt {n})",
    ]  # fmt: skip
    return shapes


def synthetic_messages(n: int, seed: int = 7) -> list[tuple[int, str]]:
    """``(shape index, message)``: the shape is the grouping a person would make."""
    rng = np.random.default_rng(seed)
    shapes = _shapes()
    letters = np.array(list("ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"))
    out = []
    for i in rng.integers(0, len(shapes), n):
        out.append((int(i), shapes[i].format(
            id="".join(rng.choice(letters, 6)), n=int(rng.integers(1, 10_000)),
            host=f"10.0.{rng.integers(0, 255)}.{rng.integers(1, 255)}",
            code=int(rng.choice([429, 500, 502, 503])),
            uuid=f"{int(rng.integers(0, 2**31)):08x}-0000-4000-8000-{int(rng.integers(0, 2**40)):012x}",
            email=f"u{rng.integers(0, 999)}@example.com",
            date=f"2026-11-{rng.integers(10, 28)}",
        )))  # fmt: skip
    return out


def bench_grouping(n: int, runs: int) -> dict[str, Any]:
    """Throughput on one core, and the templates against the shapes (purity: the share of
    messages in their template's majority shape; split: shapes over several templates)."""
    messages = synthetic_messages(n)
    rates: list[float] = []
    for _ in range(runs):
        book = FailureTemplates()
        t0 = time.perf_counter()
        for _shape, m in messages:
            tid = book.add(m)
            fingerprint(agent="a", span_kind="tool", tool="t", error_type="E", template_id=tid)
        rates.append(n / (time.perf_counter() - t0))
    book = FailureTemplates()  # once more, untimed, counting the shapes in each template
    by_template: dict[int, Counter[int]] = defaultdict(Counter)
    for shape, m in messages:
        by_template[book.add(m)][shape] += 1
    split: dict[int, set[int]] = defaultdict(set)
    for tid, shapes in by_template.items():
        for shape in shapes:
            split[shape].add(tid)
    return {
        "events": n, "runs": runs, "events_per_s_median": round(statistics.median(rates)),
        "events_per_s_min": round(min(rates)), "shapes": len(_shapes()),
        "templates_found": len(book),
        "purity": round(sum(c.most_common(1)[0][1] for c in by_template.values()) / n, 3),
        "shapes_split": sum(len(t) > 1 for t in split.values()),
    }  # fmt: skip


def _database(kind: str = "sqlite") -> Any:
    return fresh_db(kind)


def _project(engine: Any, name: str) -> int:
    with write_transaction(engine) as conn:
        return int(
            conn.execute(insert(Project).values(name=name).returning(Project.id)).scalar_one()
        )


def bench_record(n_traces: int, kind: str = "sqlite") -> dict[str, Any]:
    messages = synthetic_messages(2 * n_traces, seed=11)
    with _database(kind) as url:
        migrate.upgrade(url)
        engine = make_engine(url)
        pid = _project(engine, "bench")
        forget()
        t0 = time.perf_counter()
        for start in range(0, n_traces, 256):
            traces, failures = [], {}
            for i in range(start, min(start + 256, n_traces)):
                t = {"project_id": pid, "trace_id": f"t{i}", "agent": "a", "agent_version": "v1",
                     "started_at": START + timedelta(seconds=i)}  # fmt: skip
                traces.append(t)
                failures[(pid, t["trace_id"])] = [
                    Failure("tool", f"s{k}", None, "tool", f"tool{k}", "ToolError",
                            messages[2 * i + k][1]) for k in (0, 1)
                ]  # fmt: skip
            with write_transaction(engine) as conn:
                record_failures(conn, traces=traces, failures=failures, now=START)
        seconds = time.perf_counter() - t0
        with engine.connect() as conn:
            issues = len(conn.execute(select(FailureIssue.id)).all())
        engine.dispose()
    return {"database": kind, "traces": n_traces, "events": 2 * n_traces,
            "seconds": round(seconds, 2), "events_per_s": round(2 * n_traces / seconds),
            "issues": issues}  # fmt: skip


def bench_tau() -> dict[str, Any]:
    data = load_trajectories(DATA)
    with _database() as url:
        migrate.upgrade(url)
        engine = make_engine(url)
        pid = _project(engine, "airline")
        forget()
        for n, traj in enumerate(data["trajectories"]):
            t = {"project_id": pid, "trace_id": f"{traj['task_id']}-{traj['trial']}",
                 "agent": "airline-agent", "agent_version": "gpt-4o",
                 "started_at": START + timedelta(minutes=n)}  # fmt: skip
            found = [
                Failure("tool", f"s{i}", None, "tool", m.get("name", ""), "ToolError", m["text"])
                for i, m in enumerate(traj["messages"]) if m["role"] == "tool" and m.get("error")
            ]  # fmt: skip
            with write_transaction(engine) as conn:
                record_failures(conn, traces=[t], failures={(pid, t["trace_id"]): found}, now=START)
        with engine.connect() as conn:
            issues = conn.execute(select(FailureIssue.id, FailureIssue.tool, FailureIssue.title,
                                         FailureIssue.event_count, FailureIssue.trace_count)
                                  .order_by(FailureIssue.event_count.desc())).all()  # fmt: skip
            events = conn.execute(select(FailureEvent.issue_id, FailureEvent.tool,
                                         FailureEvent.message)).all()  # fmt: skip
        engine.dispose()
    by_issue: dict[int, Counter[tuple[str, str]]] = defaultdict(Counter)
    for issue_id, tool, message in events:
        by_issue[issue_id][(tool, hand_group(message))] += 1
    majority = sum(c.most_common(1)[0][1] for c in by_issue.values())
    issues_of_hand: dict[tuple[str, str], set[int]] = defaultdict(set)
    for issue_id, c in by_issue.items():
        for key in c:
            issues_of_hand[key].add(issue_id)
    return {
        "trajectories": len(data["trajectories"]), "failed_tool_results": len(events),
        "issues": [{"tool": tool, "template": title, "events": e, "traces": tr,
                    "by_hand": by_issue[i].most_common(1)[0][0][1],
                    "purity": round(by_issue[i].most_common(1)[0][1] / e, 3)}
                   for i, tool, title, e, tr in issues],
        "hand_groups": len(issues_of_hand),
        "purity": round(majority / len(events), 3),
        "issues_mixing_tools": sum(len({tool for tool, _ in c}) > 1 for c in by_issue.values()),
        "hand_groups_split": {f"{t}: {g}": len(ids) for (t, g), ids in issues_of_hand.items()
                              if len(ids) > 1},
    }  # fmt: skip


# The rising-issue simulation: τ-bench-like issue shares (the most frequent airline
# failure hits 6.5% of traces), 80 traces/h, the ISSUES monitor's windows (current 1 h,
# reference 6 h ending 1 h before it) run every 15 minutes at its calibrated alpha.
SHARES = (0.065, 0.025, 0.025, 0.02, 0.02, 0.01, 0.01, 0.005, 0.005, 0.005)
ALPHA = 900 / (2 * 30 * 86400)  # 15-min runs, 30 days between false alerts, half to the chart


def bench_rising(seeds: int = 200, rate: float = 80.0, clean_hours: int = 48) -> dict[str, Any]:
    """Detector-level power and false alarms (no frozen baseline, no sequential chart): the
    top issue's share doubles at the onset; the delay to its first alert, and the runs of
    the clean hours before the onset that alerted."""
    from detectors.issue_rates import IssueCount, IssueRateDetector

    det = IssueRateDetector(alpha=ALPHA)
    bins_h, onset = 4, clean_hours * 4  # 15-minute bins
    delays: list[float] = []
    false_runs = clean_runs = 0
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        n = rng.poisson(rate / bins_h, onset + 4 * bins_h)
        shares = np.tile(np.array(SHARES), (len(n), 1))
        shares[onset:, 0] *= 2
        hits = rng.binomial(n[:, None], shares)

        def window(a: int, b: int, n: Any = n, hits: Any = hits) -> list[IssueCount]:
            traces = int(n[a:b].sum())
            return [IssueCount(i, f"e{i}", f"t{i}", "agent", "E", int(hits[a:b, i].sum()), traces)
                    for i in range(len(SHARES))]  # fmt: skip

        found = None
        for end in range(9 * bins_h, len(n) + 1):
            cur, ref = window(end - bins_h, end), window(end - 8 * bins_h, end - 2 * bins_h)
            fired = det.test(ref, cur).fired
            if end <= onset:
                clean_runs += 1
                false_runs += fired
            elif fired and found is None:
                found = (end - onset) / bins_h
        delays.append(found if found is not None else float("inf"))
    caught = np.array(delays)
    return {
        "seeds": seeds, "rate_per_h": rate, "alpha_per_run": ALPHA,
        "doubling_of_share": [SHARES[0], 2 * SHARES[0]],
        "caught_within_2h": round(float(np.mean(caught <= 2)), 3),
        "caught_within_4h": round(float(np.mean(caught <= 4)), 3),
        # None: fewer than half caught in the 4 hours simulated after the onset
        "median_delay_h": float(np.median(caught)) if np.isfinite(np.median(caught)) else None,
        "clean_runs": clean_runs, "clean_runs_alerting": false_runs,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--record-traces", type=int, default=5_000)
    parser.add_argument("--seeds", type=int, default=200, help="rising-issue simulations")
    parser.add_argument("--db", choices=["sqlite", "postgresql", "both"], default="both",
                        help="where the record bench writes")  # fmt: skip
    args = parser.parse_args()
    kinds = ["sqlite", "postgresql"] if args.db == "both" else [args.db]
    print(json.dumps({
        "grouping": bench_grouping(args.events, args.runs),
        "record": [bench_record(args.record_traces, kind) for kind in kinds],
        "tau_bench": bench_tau(),
        "rising": [bench_rising(args.seeds, rate) for rate in (80.0, 800.0)],
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
