"""A score's value is finite and within ±1e9 however it arrives (native events, the
feedback API, OTLP attributes, evaluation results and logs, labeling queues); a value out
of it is refused by name and the rest of its batch is stored, and a stored one (written
before the bound) never reaches a detector."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from pydantic import ValidationError
from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from app.labeling.schemas import LabelOutsideSchema, ScoreSchema, check_label
from app.models import Project, Score
from app.monitors.windows.rows import chunk_records
from app.otlp.decode_json import decode_json
from app.otlp.logs import map_logs
from app.otlp.mapping import map_spans
from tests.conftest import auth

HUGE = 10**400  # JSON allows any digits; past float's range


def _post(client: Any, path: str, key: str, body: dict[str, Any]) -> Any:
    # orjson refuses HUGE: the standard library writes any integer.
    import json

    headers = {**auth(key), "content-type": "application/json"}
    return client.post(path, headers=headers, content=json.dumps(body))


def _stored(engine: Any) -> list[tuple[str, float]]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(select(Score.name, Score.value).order_by(Score.id))]


def test_native_and_feedback_values_out_of_range_are_refused_by_name(client, make_key, engine):
    key = make_key(role="ingest")
    score = {"trace_id": "t1", "name": "resolved"}
    events = [{"id": "t", "type": "trace", "body": {"trace_id": "t1"}}] + [
        {"id": f"s{i}", "type": "score", "body": {**score, "value": value}}
        for i, value in enumerate([1e200, -2e9, HUGE, 0.847, -1e9])
    ]
    r = _post(client, "/api/v1/ingest", key, {"events": events})
    assert r.status_code == 200 and r.json()["accepted"] == 3, r.text
    errors = {x["index"]: x["error"] for x in r.json()["rejected"]}
    assert errors == {
        1: "events[1].body.value: must be a finite number from -1e+09 to 1e+09",
        2: "events[2].body.value: must be a finite number from -1e+09 to 1e+09",
        3: "events[3].body.value: is past the range of a 64-bit float",
    }
    r = _post(client, "/api/v1/scores", key,
              {"scores": [{**score, "value": 0.5}, {**score, "value": 1e200}]})  # fmt: skip
    assert r.status_code == 200 and r.json()["accepted"] == 1, r.text
    [rejected] = r.json()["rejected"]
    assert rejected["index"] == 1 and rejected["error"].startswith("scores[1].value: must be")
    assert [v for _, v in _stored(engine)] == [0.847, -1e9, 0.5]


def _attr(key: str, **value: object) -> dict[str, Any]:
    return {"key": key, "value": value}


def test_otlp_score_attributes_and_evaluation_results_out_of_range_are_noted() -> None:
    evaluation = [_attr("gen_ai.evaluation.name", stringValue="judge"),
                  _attr("gen_ai.evaluation.score.value", doubleValue=5e9)]  # fmt: skip
    span = {
        "traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174",
        "name": "step", "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
        "attributes": [
            _attr("telltale.score.huge", doubleValue=1e200),
            _attr("telltale.score.ok", doubleValue=0.5),
            _attr("openinference.span.kind", stringValue="EVALUATOR"),
            _attr("evaluations.0.evaluation.name", stringValue="faithful"),
            _attr("evaluations.0.evaluation.score", doubleValue=-3e10),
        ],
        "events": [{"name": "gen_ai.evaluation.result", "timeUnixNano": "1700000000500000000",
                    "attributes": evaluation}],
    }  # fmt: skip
    body = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]}
    mapped = map_spans(decode_json(orjson.dumps(body)))
    assert [ev.row["name"] for ev in mapped.events if ev.type == "score"] == ["ok"]
    assert [ev.type for ev in mapped.events].count("span") == 1  # the span itself is kept
    said = "; ".join(mapped.messages)
    assert "telltale.score.huge: must be a finite number from -1e+09 to 1e+09" in said
    assert "evaluation evaluations.0 score must be a finite number" in said
    assert "evaluation event.0 score must be a finite number" in said


def test_an_evaluation_log_record_out_of_range_is_no_score() -> None:
    def kv(key: str, value: AnyValue) -> KeyValue:
        return KeyValue(key=key, value=value)

    request = ExportLogsServiceRequest()
    record = request.resource_logs.add().scope_logs.add().log_records.add()
    record.event_name = "gen_ai.evaluation.result"
    record.trace_id, record.span_id = b"\x01" * 16, b"\x02" * 8
    record.time_unix_nano = 1_700_000_000_000_000_000
    record.attributes.extend([
        kv("gen_ai.evaluation.name", AnyValue(string_value="judge")),
        kv("gen_ai.evaluation.score.value", AnyValue(double_value=1e200)),
    ])  # fmt: skip
    mapped = map_logs(request)
    assert [ev.type for ev in mapped.events] == ["span_event"] and mapped.rejected == 0
    assert mapped.messages == [
        "log record 0: gen_ai.evaluation.score.value must be a finite number from -1e+09 to "
        "1e+09; no score"
    ]


def test_queue_score_schemas_and_labels_stay_within_the_bound() -> None:
    with pytest.raises(ValidationError, match="min"):
        ScoreSchema(type="score", min=-1e10, max=1)
    wide = {"type": "score", "min": -1e300, "max": 1e300}  # stored before the bound
    assert check_label(wide, 0.75) == (0.75, 0.75)
    for label in (1e200, HUGE, float("inf")):
        with pytest.raises(
            LabelOutsideSchema, match=r"label: must be a number in \[-1e\+09, 1e\+09\]"
        ):
            check_label(wide, label)


def test_a_stored_value_out_of_range_never_reaches_a_detector(client, make_key, engine):
    key = make_key(role="ingest")
    events = [
        {"id": "t", "type": "trace", "body": {"trace_id": "t1", "ended_at": "2026-12-01T10:00:00Z"}},
        {"id": "s", "type": "score", "body": {"trace_id": "t1", "name": "resolved", "value": 0.847,
                                              "kind": "true", "source": "delayed"}},
    ]  # fmt: skip
    assert (
        client.post("/api/v1/ingest", json={"events": events}, headers=auth(key)).status_code == 200
    )
    with Session(engine) as session:
        pid = session.scalar(select(Project.id))
        # As a release before the bound stored it.
        session.execute(insert(Score).values(
            project_id=pid, trace_id="t1", name="resolved", value=1e200, kind="true",
            source="delayed", created_at=datetime(2026, 12, 1, 11, tzinfo=UTC)))  # fmt: skip
        session.commit()
        [record] = chunk_records(session, ["t1"], project_id=pid, as_of=None)
    assert [(s.name, s.value) for s in record.scores] == [("resolved", 0.847)]
