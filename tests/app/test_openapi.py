"""/openapi.json describes the API: a body for every route that reads one, a schema for
every JSON answer, and the ingest event types the checkers accept."""

from __future__ import annotations

from typing import Any, get_args

import pytest
from fastapi.testclient import TestClient

from app.ingest import events
from app.ingest.schemas import EmbeddingBody, ScoreBody, SpanBody, TraceBody
from app.main import create_app
from app.settings import Settings


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    media = tmp_path_factory.mktemp("media")
    # The spec needs no background job (nor a database beyond the app's startup).
    app = create_app(
        Settings(database_url="sqlite://", media_dir=str(media)), start_background=False
    )
    with TestClient(app) as client:
        answer = client.get("/openapi.json")
    assert answer.status_code == 200
    return answer.json()


def _operations(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(m.upper(), path, op) for path, ops in spec["paths"].items() for m, op in ops.items()]


def test_ingest_documents_its_request_body(spec: dict[str, Any]) -> None:
    body = spec["paths"]["/api/v1/ingest"]["post"]["requestBody"]["content"]["application/json"]
    event = body["schema"]["properties"]["events"]["items"]
    kinds = {v["properties"]["type"]["const"] for v in event["oneOf"]}
    assert kinds == set(events.EVENT_TYPES)
    assert "$defs" not in str(body)


def test_otlp_documents_protobuf_and_json_bodies(spec: dict[str, Any]) -> None:
    content = spec["paths"]["/v1/traces"]["post"]["requestBody"]["content"]
    assert content["application/x-protobuf"]["schema"] == {"type": "string", "format": "binary"}
    assert content["application/json"]["schema"]["type"] == "object"


def test_every_json_answer_has_a_schema(spec: dict[str, Any]) -> None:
    json_answers = [
        (method, path, code, content["application/json"].get("schema") or {})
        for method, path, op in _operations(spec)
        for code, content in ((c, r.get("content", {})) for c, r in op["responses"].items())
        if code.startswith("2") and "application/json" in content
    ]
    assert len(json_answers) > 30
    empty = [(m, p, c) for m, p, c, schema in json_answers if not _describes(schema)]
    assert not empty, empty


def _describes(schema: dict[str, Any]) -> bool:
    return bool(set(schema) & {"$ref", "type", "anyOf", "oneOf", "allOf", "properties"})


def test_every_other_answer_names_its_media_type(spec: dict[str, Any]) -> None:
    for method, path, op in _operations(spec):
        for code, answer in op["responses"].items():
            for media, content in answer.get("content", {}).items():
                assert _describes(content.get("schema") or {}), (method, path, code, media)


def test_event_literals_match_the_checkers() -> None:
    def choices(model: Any, field: str) -> set[str]:
        return set(get_args(model.model_fields[field].annotation))

    assert choices(TraceBody, "status") == set(events.TRACE_STATUS)
    assert choices(TraceBody, "source") == set(events.SOURCES)
    assert choices(SpanBody, "status") == set(events.SPAN_STATUS)
    assert choices(SpanBody, "kind") == set(events.SPAN_KINDS)
    assert choices(ScoreBody, "kind") == set(events.SCORE_KINDS)
    assert choices(ScoreBody, "source") == set(events.SCORE_SOURCES)
    assert "stream" in EmbeddingBody.model_fields


def test_no_cdn_backed_docs_pages(client):
    """/docs and /redoc would load Swagger/ReDoc from a CDN, which the CSP refuses."""
    assert client.get("/docs").status_code == 404
    assert client.get("/redoc").status_code == 404
    assert client.get("/openapi.json").status_code == 200


def test_span_events_answer_a_typed_model(spec: dict[str, Any]) -> None:
    """The GenAI events of a trace's spans: a map of span ids to typed events, no bare dict."""
    op = spec["paths"]["/api/v1/traces/{trace_id}/span-events"]["get"]
    schema = op["responses"]["200"]["content"]["application/json"]["schema"]
    assert schema == {"$ref": "#/components/schemas/SpanEventsOut"}
    answer = spec["components"]["schemas"]["SpanEventsOut"]
    assert answer["additionalProperties"]["items"] == {"$ref": "#/components/schemas/SpanEventOut"}
    event = spec["components"]["schemas"]["SpanEventOut"]
    assert {"name", "time", "attributes", "body"} <= set(event["properties"])
    assert op["tags"] == ["traces"]


def test_derived_fields_and_their_deprecated_alias(spec: dict[str, Any]) -> None:
    """The rules for derived fields under their own path and tag; the first path, /signals,
    is the same operations marked deprecated, naming the new path."""
    new = spec["paths"]["/api/v1/project/derived-fields"]
    old = spec["paths"]["/api/v1/project/signals"]
    assert set(new) == set(old) == {"get", "put", "delete"}
    for method in new:
        assert new[method]["tags"] == old[method]["tags"] == ["derived fields"]
        assert "deprecated" not in new[method] and old[method]["deprecated"] is True
        assert (
            new[method]["operationId"]
            == f"{method}_derived_fields_api_v1_project_derived_fields_{method}"
        )
        assert new[method]["operationId"] != old[method]["operationId"]
        assert "derived_fields" in old[method]["operationId"]
        assert "/api/v1/project/derived-fields" in old[method]["description"]
        assert (
            new[method]["responses"]["200"]["content"] == old[method]["responses"]["200"]["content"]
        )
        assert set(old[method]["responses"]["200"]["headers"]) == {"Deprecation", "Link"}
    ref = {"$ref": "#/components/schemas/DerivedFieldRules"}
    assert new["put"]["requestBody"]["content"]["application/json"]["schema"] == ref
    assert {"DerivedFieldRules", "DerivedFieldRulesOut"} <= set(spec["components"]["schemas"])
    assert not {"SignalConfig", "SignalConfigOut"} & set(spec["components"]["schemas"])
