"""The OTLP/HTTP paths, and the hint for a request that meant one of them.

Exporters append ``/v1/<signal>`` to ``OTEL_EXPORTER_OTLP_ENDPOINT``, so an endpoint set to
``.../v1/traces`` posts to ``/v1/traces/v1/traces``; hand-written clients try ``/v1/trace`` or
``/traces``. A bare 404 leaves them guessing: the answer names the path that exists.
"""

from __future__ import annotations

OTLP_PATHS = frozenset({"/v1/traces", "/v1/logs", "/v1/metrics"})

# The last segment of a missed path -> the OTLP path it most likely meant.
_MEANT = {
    "trace": "/v1/traces", "traces": "/v1/traces", "span": "/v1/traces", "spans": "/v1/traces",
    "log": "/v1/logs", "logs": "/v1/logs",
    "metric": "/v1/metrics", "metrics": "/v1/metrics",
}  # fmt: skip


def otlp_path_hint(method: str, path: str) -> str | None:
    """The message for a 404 on ``path`` that looks like an OTLP export; None otherwise.

    >>> print(otlp_path_hint("POST", "/v1/traces/v1/traces").split(": ")[1])
    OTLP/HTTP traces go to POST /v1/traces (set OTEL_EXPORTER_OTLP_ENDPOINT to the server's base URL
    >>> otlp_path_hint("GET", "/api/v1/traces/abc") is None
    True
    """
    if method != "POST" or path in OTLP_PATHS or path.startswith("/api/"):
        return None
    meant = _MEANT.get(path.rstrip("/").rsplit("/", 1)[-1].lower())
    if meant is None:
        return None
    signal = meant.removeprefix("/v1/")
    return (
        f"no route POST {path}: OTLP/HTTP {signal} go to POST {meant} (set "
        f"OTEL_EXPORTER_OTLP_ENDPOINT to the server's base URL: the exporter adds {meant})"
    )
