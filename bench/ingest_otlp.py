"""OTLP/HTTP protobuf ingestion throughput over real HTTP, counted as durable rows afterwards.

    .venv/bin/python bench/ingest_otlp.py --db postgresql [--spans 100000] [--clients 4]

Each request is an ``ExportTraceServiceRequest`` of ``--batch`` spans (default 500): agent
traces of 10 spans (invoke_agent root, chat, execute_tool, retrieval), 10-20 attributes a
span, as the OpenTelemetry SDK's exporter would send them. Batches are encoded before the
clock starts. Prints one JSON object with the same keys as bench/ingest.py plus
``"path": "otlp-protobuf"`` and the durable trace count.

Then about ``--logs`` GenAI log records (``ExportLogsServiceRequest``s of one
``gen_ai.client.inference.operation.details`` event per chat span of a trace batch just
sent, with its input and output messages: 150 a request for batches of 500 spans) go to
``/v1/logs``; ``logs_per_s`` counts the durable span events.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
from datetime import UTC, datetime, time
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import KeyValue

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import (  # noqa: E402
    count_rows,
    cpu_now,
    drive,
    fresh_db,
    server,
    server_pids,
    telltale,
)

TOOLS = ["search", "db_query", "calculator", "http_fetch", "vector_lookup"]
# Today, 01:00 UTC in ns: on PostgreSQL spans land in a daily partition the migration made,
# as live traffic does, not in the DEFAULT partition an old fixed date would reach.
T0 = int(datetime.combine(datetime.now(UTC).date(), time(1), UTC).timestamp()) * 10**9
STEP = 200_000_000


def _kv(key: str, value: object) -> KeyValue:
    kv = KeyValue(key=key)
    if isinstance(value, bool):
        kv.value.bool_value = value
    elif isinstance(value, int):
        kv.value.int_value = value
    elif isinstance(value, float):
        kv.value.double_value = value
    else:
        kv.value.string_value = str(value)
    return kv


def _span_attrs(i: int, rng: random.Random) -> list[KeyValue]:
    if i == 0:
        attrs: dict[str, object] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "support-agent",
            "gen_ai.agent.version": "3.1",
            "telltale.input_hash": f"in-{rng.randrange(5000)}",
            "telltale.entry_point": rng.choice(["web", "api", "slack"]),
            "telltale.score.resolved": float(rng.random() < 0.8),
            "telltale.score.resolved.kind": "true",
        }
    elif i % 3 == 1:
        attrs = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.response.model": "gpt-4o-2024-08-06",
            "gen_ai.usage.input_tokens": rng.randint(10, 4000),
            "gen_ai.usage.output_tokens": rng.randint(10, 900),
            "gen_ai.request.temperature": 0.2,
            "gen_ai.response.finish_reasons": "stop",
            "telltale.confidence": round(rng.random(), 3),
        }
    elif i % 3 == 2:
        attrs = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": rng.choice(TOOLS),
            "gen_ai.tool.call.id": f"call_{rng.getrandbits(48):x}",
            "gen_ai.tool.type": "function",
        }
        if rng.random() < 0.05:
            attrs["error.type"] = "TimeoutError"
    else:
        attrs = {
            "gen_ai.operation.name": "retrieval",
            "gen_ai.data_source.id": "kb-main",
            "db.system": "postgresql",
        }
    # Pad to 10-20 attributes, as instrumentations do (http, thread, code location).
    for k in range(rng.randint(10, 20) - len(attrs)):
        attrs[f"app.extra.{k}"] = rng.choice(["alpha", "beta", 3, 2.5, True])
    return [_kv(k, v) for k, v in attrs.items()]


def span_batch(run: int, b: int, size: int, rng: random.Random) -> bytes:
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.resource.attributes.extend(
        [
            _kv("service.name", "support-bot"),
            _kv("service.version", "1.4.0"),
            _kv("telemetry.sdk.language", "python"),
            _kv("deployment.environment", "prod"),
        ]
    )
    scope = rs.scope_spans.add()
    scope.scope.name = "opentelemetry.instrumentation.genai"
    for i in range(size):
        trace_no, step = divmod(i, 10)
        sp = scope.spans.add()
        sp.trace_id = (run << 96 | b << 48 | trace_no + 1).to_bytes(16, "big")
        sp.span_id = (b << 32 | i + 1).to_bytes(8, "big")
        if step:
            sp.parent_span_id = (b << 32 | trace_no * 10 + 1).to_bytes(8, "big")
        sp.name = "invoke_agent support-agent" if step == 0 else f"step {step}"
        sp.kind = 1 if step else 2
        sp.start_time_unix_nano = T0 + b * 10**10 + step * STEP
        sp.end_time_unix_nano = sp.start_time_unix_nano + (10 * STEP if step == 0 else STEP // 2)
        sp.attributes.extend(_span_attrs(step, rng))
        if step and rng.random() < 0.03:
            sp.status.code = 2
    return req.SerializeToString()


def log_batch(run: int, b: int, size: int) -> bytes:
    """GenAI events of the chat spans of trace batch ``b`` (steps 1, 4, 7 of each trace)."""
    req = ExportLogsServiceRequest()
    rl = req.resource_logs.add()
    rl.resource.attributes.extend([_kv("service.name", "support-bot")])
    scope = rl.scope_logs.add()
    scope.scope.name = "opentelemetry.instrumentation.genai"
    chats = [i for i in range(size) if i % 10 in (1, 4, 7)]
    for i in chats:
        trace_no = i // 10
        rec = scope.log_records.add()
        rec.time_unix_nano = T0 + b * 10**10 + (i % 10) * STEP
        rec.event_name = "gen_ai.client.inference.operation.details"
        rec.trace_id = (run << 96 | b << 48 | trace_no + 1).to_bytes(16, "big")
        rec.span_id = (b << 32 | i + 1).to_bytes(8, "big")
        rec.attributes.extend(
            [
                _kv("gen_ai.operation.name", "chat"),
                _kv(
                    "gen_ai.input.messages",
                    '[{"role":"user","parts":[{"type":"text","content":"where is my order?"}]}]',
                ),
                _kv(
                    "gen_ai.output.messages",
                    '[{"role":"assistant","parts":[{"type":"text","content":"on its way"}]}]',
                ),
            ]
        )
    return req.SerializeToString()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--db", choices=["sqlite", "postgresql"], default="postgresql")
    p.add_argument("--spans", type=int, default=100_000)
    p.add_argument("--batch", type=int, default=500)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--logs", type=int, default=30_000, help="GenAI log records a repeat")
    args = p.parse_args()

    runs: list[dict[str, Any]] = []
    with fresh_db(args.db) as db_url:
        with server(db_url, workers=args.workers) as url:
            key = telltale(
                "keys", "create", "--project", "bench", "--role", "ingest", db_url=db_url
            )
            for rep in range(args.repeat):
                rng = random.Random(rep)
                bodies = [
                    span_batch(rep + 1, b, args.batch, rng) for b in range(args.spans // args.batch)
                ]
                before = count_rows(db_url, "spans"), count_rows(db_url, "traces")
                # CPU seconds of the server processes and their database backends: a
                # figure that holds when other work shares the machine and wall time does not.
                procs = server_pids(url.rsplit(":", 1)[1])
                cpu0 = cpu_now(procs, db_url)
                elapsed = drive(
                    url,
                    key,
                    "/v1/traces",
                    bodies,
                    args.clients,
                    "application/x-protobuf",
                    success_is_empty=True,
                )
                cpu1 = cpu_now(procs, db_url)
                spans = count_rows(db_url, "spans") - before[0]
                traces = count_rows(db_url, "traces") - before[1]
                # 3 chat spans a trace: a batch of --batch spans has 0.3 * --batch events.
                log_batches = min(len(bodies), -(-args.logs // (args.batch * 3 // 10)))
                log_bodies = [log_batch(rep + 1, b, args.batch) for b in range(log_batches)]
                events_before = count_rows(db_url, "span_events")
                procs = server_pids(url.rsplit(":", 1)[1])
                log_cpu0 = cpu_now(procs, db_url)
                log_elapsed = drive(
                    url,
                    key,
                    "/v1/logs",
                    log_bodies,
                    args.clients,
                    "application/x-protobuf",
                    success_is_empty=True,
                )
                log_cpu1 = cpu_now(procs, db_url)
                logs = count_rows(db_url, "span_events") - events_before
                server_us = (cpu1[0] - cpu0[0]) / spans * 1e6
                # Backends opened during the run count from zero.
                pg_us = (cpu1[1] - cpu0[1]) / spans * 1e6
                runs.append(
                    {
                        "spans": spans,
                        "traces": traces,
                        "spans_s": round(elapsed, 3),
                        "spans_per_s": round(spans / elapsed),
                        "request_mb": round(sum(map(len, bodies)) / 1e6, 1),
                        "logs": logs,
                        "logs_per_s": round(logs / log_elapsed) if log_elapsed else None,
                        "server_cpu_us_per_log": (
                            round((log_cpu1[0] - log_cpu0[0]) / logs * 1e6, 1) if logs else None
                        ),
                        "db_cpu_us_per_log": (
                            round((log_cpu1[1] - log_cpu0[1]) / logs * 1e6, 1) if logs else None
                        ),
                        "server_cpu_us_per_span": round(server_us, 1),
                        "db_cpu_us_per_span": round(pg_us, 1),
                        # SQLite writes serialise in the server process: no 2-core figure.
                        "cpu_bound_spans_per_s_2_cores": (
                            round(2e6 / (server_us + pg_us)) if args.db == "postgresql" else None
                        ),
                    }
                )
    print(
        json.dumps(
            {
                "db": args.db,
                "path": "otlp-protobuf",
                "batch": args.batch,
                "clients": args.clients,
                "workers": args.workers,
                "spans_per_s": statistics.median(r["spans_per_s"] for r in runs),
                "logs_per_s": statistics.median(r["logs_per_s"] or 0 for r in runs),
                # CPU per stored log record, server and database: holds on a busy machine.
                "cpu_us_per_log": statistics.median(
                    (r["server_cpu_us_per_log"] or 0) + (r["db_cpu_us_per_log"] or 0) for r in runs
                ),
                "cpu_bound_spans_per_s_2_cores": (
                    statistics.median(r["cpu_bound_spans_per_s_2_cores"] for r in runs)
                    if args.db == "postgresql"
                    else None
                ),
                "load_average_1m": round(os.getloadavg()[0], 2),
                "runs": runs,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
