"""What a new project pastes into its agent's environment to send traces here.

One source for the block, so the CLI (`telltale init`), the pages' empty states and the
README's quickstart all print the same lines. The content-capture lines matter: without
them the GenAI instrumentations send spans with no messages, and FM-2, FM-3 and FM-6
have nothing to read (the readiness panel then names the same variables as remedies).
"""

from __future__ import annotations

from dataclasses import dataclass

KEY_PLACEHOLDER = "<ingest key>"


@dataclass(frozen=True)
class OtelEnv:
    """The OTLP exporter settings for one server, project key and service."""

    endpoint: str
    key: str = KEY_PLACEHOLDER
    service_name: str = "my-agent"
    service_version: str = "v1"

    def lines(self) -> list[tuple[str, str]]:
        """(variable, value) pairs in the order a reader should meet them."""
        return [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", self.endpoint.rstrip("/")),
            ("OTEL_EXPORTER_OTLP_HEADERS", f"x-api-key={self.key}"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ("OTEL_SERVICE_NAME", self.service_name),
            ("OTEL_RESOURCE_ATTRIBUTES", f"service.version={self.service_version}"),
            # GenAI instrumentations (openai-v2 and kin) capture messages only when asked.
            ("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental"),
            ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "span_only"),
        ]

    def shell(self) -> str:
        """The block as `export` lines for a POSIX shell.

        >>> print(OtelEnv("http://localhost:8000/").shell().splitlines()[0])
        export OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:8000
        """
        return "\n".join(f"export {name}={_quote(value)}" for name, value in self.lines())


def _quote(value: str) -> str:
    """Quote a value only when the shell needs it (a placeholder's angle brackets)."""
    if all(c.isalnum() or c in "-_./:=,%" for c in value):
        return value
    return "'" + value.replace("'", "'\\''") + "'"
