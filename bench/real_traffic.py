"""Real agent trajectories, replayed as on-call would live them: does anything page?

    .venv/bin/python bench/real_traffic.py --scenario regression --clean-hours 28 --hours 20
    .venv/bin/python bench/real_traffic.py --scenario clean --clean-hours 48 --monitors all

τ-bench's 200 gpt-4o airline trajectories (50 tasks x 4 trials; tests/data/tau_bench, MIT)
become GenAI spans through the real OpenTelemetry SDK: an ``invoke_agent`` root, a
``chat`` span per model reply (its input and output messages, the tool calls it
requested), an ``execute_tool`` span per tool result (ERROR when the result is an error),
exported over OTLP/HTTP to a real Telltale server on 127.0.0.1, with Poisson arrivals at
``--rate`` traces/h on a simulated clock. Each trajectory's reward goes to
``POST /api/v1/scores`` as ``task_success`` (``source: delayed``), 0.5-3 h after the trace,
with ``PUT /api/v1/project/score-roles {"task_success": "true"}``: what the README tells a
team to send. The default monitors run every 15 simulated minutes (``run now`` with the
simulated time); the derive job runs in this process between ticks.

Scenarios, after ``--clean-hours`` of clean traffic (trajectories drawn uniformly: task
success 0.42):

* ``clean``: nothing changes.
* ``regression``: each trace draws a task, then one of its failing trials when it has one
  (the real failures of the same tasks): success 0.42 -> 0.20, the size of the gap between
  gpt-4o and gpt-4o-mini on this domain.
* ``regression-25``: the same, with 25% of traces labeled (before and after).
* ``domain-shift``: half the traces become Who&When's multi-agent runs on GAIA and
  AssistantBench questions (tests/data/who_and_when, MIT): another domain, code
  execution instead of airline tools, every run failed.
* ``stop``: no trace arrives (the agent died, or its exporter broke).
* ``fall-20``: a fifth of the traffic arrives.
* ``content-off``: traces keep coming without their messages (content capture turned off).
* ``tool-break``: 70% of the calls of the most called tool fail (an ERROR tool span).
* ``judge-bias``: nothing changes in the traffic; the judge (``--judge-agreement``) starts
  saying "resolved" on a third of the traces it called unresolved (+0.2 on its mean).
* ``tokens-2x``: every model call's input and output tokens doubled (a prompt that grew, a
  context that stopped being trimmed); latency and outcomes unchanged.
* ``loops``: a tenth of the traces repeat one of their real tool calls, unchanged, twice
  more right after it (the same tool and arguments three times in a row: a loop).

``--judge-agreement 0.85`` adds an online evaluator: a loopback OpenAI-compatible judge
(:mod:`bench.fake_judge`, called by the real ``openai`` client) that answers from each
trajectory's hidden reward, agreeing with it on 85% of traces, scoring every trace as
``resolved_judge`` with ``objective: task_success``; ``--label-share 0.05`` sends 5% of
the labels. OUTCOME then reads the judge corrected by the labels (prediction-powered).

``--recover-after-hours`` ends the change that long after the onset (the report says
when each alert resolved); ``--night 0.3`` runs the traffic at 30% between 22:00 and
06:00 (simulated); ``--tick-minutes`` sets how often the monitors run (SILENCE runs every
5 minutes in production).

``--traffic who-and-when`` replays Who&When's logs as the whole traffic instead (a second
real agent for the clean scenario's false alerts).

Prints one JSON object: per monitor, the alert episodes before the onset (false), the
first alert after it (hours), the share of evaluations after the onset with an alert
open, and the first alert's summary.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DATA = Path(__file__).resolve().parent.parent / "tests/data/tau_bench/gpt-4o-airline.json.gz"
WHO_AND_WHEN = (
    Path(__file__).resolve().parent.parent / "tests/data/who_and_when/algorithm-generated.json.gz"
)
SHIFTED_SHARE = 0.5  # of the traffic after a domain shift
START = datetime(2026, 9, 7, tzinfo=UTC)  # a Monday, well before the real clock
TICK = timedelta(minutes=15)
AGENT = "airline-agent"


@dataclass(frozen=True)
class Trace:
    """One replayed run: when it starts, which trajectory, whether its label is sent."""

    start: datetime
    trajectory: dict[str, Any]
    labeled: bool
    label_delay: timedelta
    content: bool = True  # the messages ride on the spans
    broken_tool: str | None = None  # its calls fail at BREAK_SHARE
    judge_bias: bool = False  # the judge says "resolved" more often than it should
    token_factor: float = 1.0  # its model calls' tokens, scaled
    loop: bool = False  # one of its tool calls repeated twice more, unchanged


BREAK_SHARE = 0.7
LOOP_SHARE = 0.1


def load_trajectories(path: Path = DATA) -> dict[str, Any]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def schedule(
    trajectories: list[dict[str, Any]],
    *,
    scenario: str,
    clean_hours: float,
    hours: float,
    rate: float,
    seed: int,
    shifted: list[dict[str, Any]] | None = None,
    recover_after: float | None = None,
    night: float = 1.0,
    label_share: float | None = None,
) -> tuple[list[Trace], datetime]:
    """Poisson arrivals over the clean hours and the scenario's hours; returns the onset.

    ``shifted``: the other domain's trajectories that ``domain-shift`` mixes in;
    ``recover_after``: hours after the onset when the change ends; ``night``: the rate's
    share between 22:00 and 06:00 (arrivals are thinned)."""
    rng = np.random.default_rng(seed)
    by_task: dict[int, list[dict[str, Any]]] = {}
    for t in trajectories:
        by_task.setdefault(int(t["task_id"]), []).append(t)
    tasks = sorted(by_task)
    onset = START + timedelta(hours=clean_hours)
    end = onset + timedelta(hours=hours)
    labeled_share = 0.25 if scenario.endswith("-25") else 1.0
    if label_share is not None:
        labeled_share = label_share
    recovery = onset + timedelta(hours=recover_after) if recover_after is not None else end
    busiest = _most_called_tool(trajectories)
    thin = np.random.default_rng(seed + 7)
    out, at = [], START
    while True:
        at += timedelta(seconds=float(rng.exponential(3600.0 / rate)))
        if at >= end:
            break
        keep = thin.random()  # its own stream: the clean traffic is the one it always was
        if (at.hour >= 22 or at.hour < 6) and keep >= night:
            continue
        changed = onset <= at < recovery
        if changed and (scenario == "stop" or (scenario == "fall-20" and keep >= 0.2)):
            continue
        extra: dict[str, Any] = {}
        if changed and scenario == "content-off":
            extra["content"] = False
        if changed and scenario == "tool-break":
            extra["broken_tool"] = busiest
        if changed and scenario == "judge-bias":
            extra["judge_bias"] = True
        if changed and scenario == "tokens-2x":
            extra["token_factor"] = 2.0
        if changed and scenario == "loops" and keep < LOOP_SHARE:
            extra["loop"] = True
        if scenario.startswith("regression") and changed:
            trials = by_task[tasks[int(rng.integers(len(tasks)))]]
            failing = [t for t in trials if t["reward"] < 1.0]
            pool = failing or trials
            trajectory = pool[int(rng.integers(len(pool)))]
        elif scenario == "domain-shift" and changed and rng.random() < SHIFTED_SHARE:
            assert shifted, "domain-shift needs the other domain's trajectories"
            trajectory = shifted[int(rng.integers(len(shifted)))]
        else:
            trajectory = trajectories[int(rng.integers(len(trajectories)))]
        out.append(
            Trace(
                at,
                trajectory,
                labeled=bool(rng.random() < labeled_share),
                label_delay=timedelta(hours=float(rng.uniform(0.5, 3.0))),
                **extra,
            )
        )
    return out, onset


def _most_called_tool(trajectories: list[dict[str, Any]]) -> str:
    calls: dict[str, int] = {}
    for t in trajectories:
        for m in t["messages"]:
            if m["role"] == "tool":
                calls[m.get("name", "")] = calls.get(m.get("name", ""), 0) + 1
    return max(calls, key=lambda name: calls[name])


# -- the OpenTelemetry side ------------------------------------------------------------------


def _messages(role: str, message: dict[str, Any]) -> str:
    parts: list[dict[str, Any]] = []
    if message.get("text"):
        parts.append({"type": "text", "content": message["text"]})
    for k, call in enumerate(message.get("calls", ())):
        parts.append(
            {"type": "tool_call", "id": f"call_{k}", "name": call["name"],
             "arguments": call["arguments"]}
        )  # fmt: skip
    body: dict[str, Any] = {"role": role, "parts": parts}
    if role == "assistant":
        body["finish_reason"] = "tool_call" if message.get("calls") else "stop"
    return json.dumps([body])


def emit(tracer: Any, trace: Trace, rng: np.random.Generator) -> tuple[datetime, str]:
    """The trace's spans with simulated times; returns when it ends and its trace id."""
    from opentelemetry import trace as otel_trace
    from opentelemetry.trace import Status, StatusCode

    def ns(t: datetime) -> int:
        return int(t.timestamp() * 1e9)

    at = trace.start
    root = tracer.start_span(
        f"invoke_agent {AGENT}",
        start_time=ns(at),
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": AGENT,
            "gen_ai.agent.version": "gpt-4o-2024-08-06",
        },
    )
    context = otel_trace.set_span_in_context(root)
    last_user: dict[str, Any] = {}
    pending: list[dict[str, Any]] = []  # the calls the last model reply requested, in order
    looped = False
    for message in trace.trajectory["messages"]:
        role = message["role"]
        if role == "user":
            at += timedelta(seconds=float(rng.uniform(4.0, 20.0)))  # the user types
            last_user = message
        elif role == "assistant":
            seconds = 0.6 + message.get("chars", 40) / 90.0 + float(rng.exponential(0.4))
            attributes = {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.usage.input_tokens": int(
                    (2500 + 40 * len(message.get("text", ""))) * trace.token_factor
                ),
                "gen_ai.usage.output_tokens": int(
                    max(1, message.get("chars", 20) // 4) * trace.token_factor
                ),
            }
            if trace.content:  # what OTEL_..._CAPTURE_MESSAGE_CONTENT turns on
                attributes["gen_ai.input.messages"] = (
                    _messages("user", last_user) if last_user else "[]"
                )
                attributes["gen_ai.output.messages"] = _messages("assistant", message)
            pending = list(message.get("calls", ()))
            span = tracer.start_span(
                "chat gpt-4o", context=context, start_time=ns(at), attributes=attributes
            )
            at += timedelta(seconds=seconds)
            span.end(end_time=ns(at))
        elif role == "tool":
            call = pending.pop(0) if pending and pending[0]["name"] == message.get("name") else None
            repeats = 3 if trace.loop and not looped and call is not None else 1
            looped = looped or repeats > 1
            for _ in range(repeats):
                attributes = {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": message.get("name", ""),
                }
                if trace.content and call is not None:  # opt-in content, as the messages
                    args = call["arguments"]
                    attributes["gen_ai.tool.call.arguments"] = (
                        args if isinstance(args, str) else json.dumps(args, sort_keys=True)
                    )
                span = tracer.start_span(
                    f"execute_tool {message.get('name', '')}",
                    context=context,
                    start_time=ns(at),
                    attributes=attributes,
                )
                broken = (
                    trace.broken_tool is not None
                    and message.get("name") == trace.broken_tool
                    and rng.random() < BREAK_SHARE
                )
                if message.get("error") or broken:
                    span.set_attribute("error.type", "ToolError")
                    span.set_status(Status(StatusCode.ERROR, message.get("text", "")[:120]))
                at += timedelta(seconds=float(rng.uniform(0.05, 0.4)))
                span.end(end_time=ns(at))
    root.end(end_time=ns(at))
    return at, f"{root.get_span_context().trace_id:032x}"


# -- the server and the replay ---------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Replay:
    """A Telltale server on SQLite, the OTel pipeline into it, and the monitor ticks."""

    def __init__(self, workdir: Path, *, monitors: str, text_embeddings: bool,
                 judge_agreement: float | None = None) -> None:  # fmt: skip
        import uvicorn
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        from app import migrate
        from app.db import make_engine, make_sessionmaker
        from app.keys import create_key
        from app.main import create_app
        from app.settings import Settings

        url = f"sqlite:///{workdir / 'telltale.db'}"
        migrate.upgrade(url)
        self.engine = make_engine(url)
        with make_sessionmaker(self.engine)() as session:
            self.admin = create_key(session, project_name="airline", role="admin")
            self.ingest = create_key(session, project_name="airline", role="ingest")
            session.commit()
        self.text_embeddings = text_embeddings
        settings = Settings(
            database_url=url, scheduler_enabled=False, derive_enabled=False,
            derive_settle_seconds=0, judge_allow=["127.0.0.1/32"],
        )  # fmt: skip
        self.settings = settings
        port = free_port()
        self.base = f"http://127.0.0.1:{port}"
        config = uvicorn.Config(create_app(settings), host="127.0.0.1", port=port,
                                log_level="warning", access_log=False)  # fmt: skip
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        self.client = httpx.Client(base_url=self.base, timeout=300)
        self.h_admin = {"Authorization": f"Bearer {self.admin}"}
        self.h_ingest = {"Authorization": f"Bearer {self.ingest}"}
        r = self.client.put("/api/v1/project/score-roles", headers=self.h_admin,
                            json={"roles": {"task_success": "true"}})  # fmt: skip
        r.raise_for_status()
        created = self.client.post("/api/v1/monitors/defaults", headers=self.h_admin)
        created.raise_for_status()
        wanted = None if monitors == "all" else set(monitors.split(","))
        self.monitors = {
            m["failure_mode"]: m["id"]
            for m in created.json()["monitors"]
            if wanted is None or m["failure_mode"] in wanted
        }
        if wanted is not None and "ISSUES" in wanted:  # not a default yet (app/issues)
            made = self.client.post("/api/v1/monitors", headers=self.h_admin, json={
                "name": "failure issues", "failure_mode": "ISSUES", "interval_seconds": 900})  # fmt: skip
            made.raise_for_status()
            self.monitors["ISSUES"] = made.json()["id"]
        self.judge: Any = None
        self.truth: dict[str, tuple[float, bool]] = {}  # trace id -> (reward, judge biased)
        if judge_agreement is not None:
            self._start_judge(judge_agreement, wanted)
        self.provider = TracerProvider(resource=Resource.create({"service.name": AGENT}))
        exporter = OTLPSpanExporter(endpoint=f"{self.base}/v1/traces", headers=self.h_ingest)
        self.provider.add_span_processor(
            BatchSpanProcessor(exporter, max_queue_size=100_000, max_export_batch_size=512)
        )
        self.tracer = self.provider.get_tracer("bench.real_traffic")

    def _start_judge(self, agreement: float, wanted: set[str] | None) -> None:
        """A loopback judge that answers from each trajectory's hidden reward, agreeing with
        it on ``agreement`` of traces (a fixed draw per trace id), and an LLM-judge evaluator
        on every trace that predicts ``task_success``."""
        import hashlib

        from sqlalchemy import update

        from app.models.evaluators import Evaluator
        from bench.fake_judge import JudgeServer

        def draw(text: str) -> float:
            return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64

        def answer(prompt: str) -> float:
            found = re.search(r'name="metadata.trace_id">\n([0-9a-f]+)', prompt)
            tid = found.group(1) if found else ""
            reward, biased = self.truth.get(tid, (0.0, False))
            said = reward if draw(tid) < agreement else 1.0 - reward
            # +0.2 on the judge's mean (0.44 -> 0.64 at 85 %): a third of its "no" turn "yes".
            if biased and said < 0.5 and draw(tid + "/bias") < 0.36:
                said = 1.0
            return said

        self.judge = JudgeServer()
        self.judge.answer_for = answer
        body = {
            "name": "resolved-judge", "kind": "llm_judge", "score_name": "resolved_judge",
            "objective": "task_success", "delay_seconds": 0, "concurrency": 16,
            "judge": {"base_url": self.judge.base_url, "model": "judge",
                      "prompt": "Did the agent resolve the task? {metadata.trace_id}\n"
                                "{output}"},
        }  # fmt: skip
        r = self.client.post("/api/v1/evaluators", headers=self.h_admin, json=body)
        r.raise_for_status()
        with self.engine.begin() as conn:
            conn.execute(update(Evaluator).values(watch_from=START))
        listed = self.client.get("/api/v1/monitors", headers=self.h_admin).json()["monitors"]
        for m in listed:
            if m["failure_mode"] == "JUDGE" and (wanted is None or "JUDGE" in wanted):
                self.monitors["JUDGE"] = m["id"]

    def evaluate(self, now: datetime) -> None:
        """Run the evaluator on the simulated clock: the derive job stamps wall-clock
        times, so the traces it derived are restamped as derived when they ended, and the
        evaluations it queued as due now."""
        if self.judge is None:
            return
        from sqlalchemy import text

        from app.evaluators.runner import run_due

        with self.engine.begin() as conn:
            conn.execute(
                text("UPDATE traces SET derived_at = COALESCE(ended_at, started_at) "
                     "WHERE derived_at > :now"), {"now": now.replace(tzinfo=None)},
            )  # fmt: skip
            conn.execute(text("UPDATE evaluations SET due_at = :now WHERE due_at > :now"),
                         {"now": now.replace(tzinfo=None)})  # fmt: skip
        while run_due(self.engine, self.settings, now=now).calls:
            pass

    def close(self) -> None:
        if self.judge is not None:
            self.judge.close()
        self.provider.shutdown()
        self.client.close()
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.engine.dispose()

    def send_labels(self, labels: list[tuple[str, float, datetime]]) -> None:
        for start in range(0, len(labels), 500):
            body = {
                "scores": [
                    {"otel_trace_id": tid, "name": "task_success", "value": value,
                     "source": "delayed", "kind": "true", "created_at": at.isoformat(),
                     "event_id": f"label-{tid}"}
                    for tid, value, at in labels[start : start + 500]
                ]
            }  # fmt: skip
            r = self.client.post("/api/v1/scores", headers=self.h_ingest, json=body)
            r.raise_for_status()

    def derive(self) -> None:
        from app.derive.job import derive_pending
        from app.models.base import utcnow

        while derive_pending(
            self.engine, now=utcnow() + timedelta(seconds=60),
            text_embeddings=self.text_embeddings,
        ).traces:  # fmt: skip
            pass

    def tick(self, now: datetime) -> dict[str, dict[str, Any]]:
        out = {}
        for mode, monitor_id in self.monitors.items():
            r = self.client.post(f"/api/v1/monitors/{monitor_id}/run", headers=self.h_admin,
                                 json={"now": now.isoformat()})  # fmt: skip
            r.raise_for_status()
            out[mode] = r.json()
        return out

    def open_alerts(self) -> dict[str, dict[str, Any]]:
        alerts = self.client.get("/api/v1/alerts", headers=self.h_admin).json()["alerts"]
        return {a["failure_mode"]: a for a in alerts if a["state"] in ("firing", "acknowledged")}

    def all_alerts(self) -> list[dict[str, Any]]:
        r = self.client.get("/api/v1/alerts", headers=self.h_admin, params={"limit": 1000})
        return list(r.json()["alerts"])


def run(args: argparse.Namespace) -> dict[str, Any]:
    data = load_trajectories(WHO_AND_WHEN if args.traffic == "who-and-when" else args.data)
    shifted = load_trajectories(WHO_AND_WHEN)["trajectories"]
    traces, onset = schedule(
        data["trajectories"], scenario=args.scenario, clean_hours=args.clean_hours,
        hours=args.hours, rate=args.rate, seed=args.seed, shifted=shifted,
        recover_after=args.recover_after_hours, night=args.night, label_share=args.label_share,
    )  # fmt: skip
    end = onset + timedelta(hours=args.hours)
    rng = np.random.default_rng(args.seed + 1)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        replay = Replay(Path(tmp), monitors=args.monitors, text_embeddings=args.text_embeddings,
                        judge_agreement=args.judge_agreement)  # fmt: skip
        try:
            report = _replay(replay, traces, onset, end, rng, args)
        finally:
            replay.close()
    report["wall_seconds"] = round(time.perf_counter() - started, 1)
    return report


def _replay(
    replay: Replay, traces: list[Trace], onset: datetime, end: datetime,
    rng: np.random.Generator, args: argparse.Namespace,
) -> dict[str, Any]:  # fmt: skip
    pending_labels: list[tuple[datetime, str, float]] = []
    queue = iter(traces)
    upcoming = next(queue, None)
    in_flight: list[tuple[datetime, str, Trace]] = []  # (end, trace id, trace), not yet due
    evaluations: dict[str, list[tuple[datetime, bool]]] = {m: [] for m in replay.monitors}
    statuses: dict[str, list[str]] = {m: [] for m in replay.monitors}  # each run's status
    first_tick = START + timedelta(hours=args.first_tick_hours)
    tick, step = first_tick, timedelta(minutes=args.tick_minutes)
    while tick <= end:
        # Every trace that ended by this tick is exported, then its label once it is due.
        while upcoming is not None and upcoming.start < tick:
            ended, trace_id = emit(replay.tracer, upcoming, rng)
            replay.truth[trace_id] = (float(upcoming.trajectory["reward"]), upcoming.judge_bias)
            in_flight.append((ended, trace_id, upcoming))
            upcoming = next(queue, None)
        replay.provider.force_flush()
        done = [x for x in in_flight if x[0] <= tick]
        in_flight = [x for x in in_flight if x[0] > tick]
        for ended, tid, t in done:
            if t.labeled:
                pending_labels.append((ended + t.label_delay, tid, float(t.trajectory["reward"])))
        due = sorted(x for x in pending_labels if x[0] <= tick)
        pending_labels = [x for x in pending_labels if x[0] > tick]
        replay.send_labels([(tid, value, at) for at, tid, value in due])
        replay.derive()
        replay.evaluate(tick)
        runs = replay.tick(tick)
        open_now = replay.open_alerts()
        for mode in replay.monitors:
            evaluations[mode].append((tick, mode in open_now))
            statuses[mode].append(runs[mode]["status"])
            if runs[mode]["status"] == "failed":
                print(f"{tick:%H:%M} {mode} run failed: {runs[mode].get('evidence')}",
                      file=sys.stderr)  # fmt: skip
        if args.verbose:
            line = " ".join(
                f"{m}:{'F' if r['fired'] else r['status'][:3]}"
                f"(p={r['p_value'] if r['p_value'] is None else round(r['p_value'], 5)})"
                for m, r in runs.items()
            )
            for r in runs.values():  # what moved most, fired or not
                ev = r.get("evidence") or {}
                said = ev.get("summary") if r["fired"] else ev.get("closest")
                line += f"  {said}" if said else ""
            print(f"{tick:%m-%d %H:%M} {line}", file=sys.stderr, flush=True)
        tick += step
    recovery = (
        onset + timedelta(hours=args.recover_after_hours)
        if args.recover_after_hours is not None
        else None
    )
    return _report(replay, evaluations, statuses, onset, traces, step=step, recovery=recovery)


def _report(
    replay: Replay, evaluations: dict[str, list[tuple[datetime, bool]]],
    statuses: dict[str, list[str]], onset: datetime, traces: list[Trace], *,
    step: timedelta = TICK, recovery: datetime | None = None,
) -> dict[str, Any]:  # fmt: skip
    alerts = replay.all_alerts()
    out: dict[str, Any] = {}
    for mode, evals in evaluations.items():
        mine = sorted(
            (a for a in alerts if a["failure_mode"] == mode), key=lambda a: a["first_fired_at"]
        )
        before = [a for a in mine if _dt(a["first_fired_at"]) < onset]
        after = [a for a in mine if _dt(a["first_fired_at"]) >= onset]
        post = [open_ for at, open_ in evals if at >= onset]
        first = after[0] if after else None
        since_first = (
            [open_ for at, open_ in evals if at >= _dt(first["first_fired_at"])] if first else []
        )
        out[mode] = {
            "false_episodes_before_onset": len(before),
            "clean_hours_evaluated": round(
                sum(1 for at, _ in evals if at < onset) * step.total_seconds() / 3600, 2
            ),
            "first_alert_after_onset_h": (
                round((_dt(first["first_fired_at"]) - onset).total_seconds() / 3600, 2)
                if first
                else None
            ),  # fmt: skip
            "share_open_after_onset": round(sum(post) / len(post), 3) if post else None,
            "share_open_after_first_alert": (
                round(sum(since_first) / len(since_first), 3) if since_first else None
            ),
            "alert_episodes_after_onset": len(after),
            # Runs with a verdict (status ok) of all runs: insufficient_data is no verdict.
            "runs_with_a_verdict": f"{statuses[mode].count('ok')}/{len(statuses[mode])}",
            "alert_summary": first["summary"] if first else None,
            "resolved_after_recovery_h": (
                round((_dt(first["resolved_at"]) - recovery).total_seconds() / 3600, 2)
                if first and recovery is not None and first.get("resolved_at")
                else None
            ),
            "false_alert_summaries": [a["summary"] for a in before][:3],
        }
    labeled = [t for t in traces if t.labeled]
    judge = {"judge_calls": len(replay.judge.requests)} if replay.judge is not None else {}
    return {
        "monitors": out,
        **judge,
        "traces": len(traces),
        "labels": len(labeled),
        "success_before": _mean_reward(t for t in traces if t.start < onset),
        "success_after": _mean_reward(t for t in traces if t.start >= onset),
    }


def _mean_reward(traces: Iterator[Trace]) -> float | None:
    values = [float(t.trajectory["reward"]) for t in traces]
    return round(float(np.mean(values)), 3) if values else None


def _dt(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", default="regression",
                        choices=["clean", "regression", "regression-25", "domain-shift", "stop",
                                 "fall-20", "content-off", "tool-break", "judge-bias",
                                 "tokens-2x", "loops"])  # fmt: skip
    parser.add_argument("--traffic", default="tau-bench", choices=["tau-bench", "who-and-when"],
                        help="whose trajectories are the clean traffic")  # fmt: skip
    parser.add_argument("--clean-hours", type=float, default=28.0)
    parser.add_argument("--hours", type=float, default=20.0, help="after the onset")
    parser.add_argument("--rate", type=float, default=80.0, help="traces per hour")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--monitors", default="all", help="all, or failure modes: OUTCOME,FM-7")
    parser.add_argument("--first-tick-hours", type=float, default=8.0,
                        help="hours of history before the first monitor run")  # fmt: skip
    parser.add_argument("--text-embeddings", action="store_true",
                        help="MiniLM input/output vectors in the derive job (slow on CPU)")  # fmt: skip
    parser.add_argument("--recover-after-hours", type=float, default=None,
                        help="the change ends this long after the onset")  # fmt: skip
    parser.add_argument("--night", type=float, default=1.0,
                        help="the traffic's share between 22:00 and 06:00")  # fmt: skip
    parser.add_argument("--tick-minutes", type=float, default=15.0)
    parser.add_argument("--judge-agreement", type=float, default=None,
                        help="run an LLM-judge evaluator agreeing with the hidden reward on "
                             "this share of traces (a loopback judge)")  # fmt: skip
    parser.add_argument("--label-share", type=float, default=None,
                        help="the share of traces whose label is sent (default 1, or 0.25 "
                             "for regression-25)")  # fmt: skip
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    report = {"scenario": args.scenario, "traffic": args.traffic, "rate": args.rate,
              "seed": args.seed,
              "clean_hours": args.clean_hours, "hours": args.hours, **run(args)}  # fmt: skip
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
