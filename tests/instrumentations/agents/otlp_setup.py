"""The OTel SDK set up from the standard OTEL_* variables, as an application would.

Traces always; logs and metrics when ``logs`` / ``metrics`` are asked for. ``shutdown()``
flushes every exporter before the process ends (the test reads what was stored then).
"""

from __future__ import annotations

from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

providers: list[Any] = []


def setup(*, logs: bool = False, metrics: bool = False) -> TracerProvider:
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(tracer_provider)
    providers.append(tracer_provider)
    if logs:
        from opentelemetry import _logs
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

        logger_provider = LoggerProvider()
        logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
        _logs.set_logger_provider(logger_provider)
        providers.append(logger_provider)
    if metrics:
        from opentelemetry import metrics as otel_metrics
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

        meter_provider = MeterProvider(
            metric_readers=[PeriodicExportingMetricReader(OTLPMetricExporter())]
        )
        otel_metrics.set_meter_provider(meter_provider)
        providers.append(meter_provider)
    return tracer_provider


def shutdown() -> None:
    for provider in providers:
        provider.shutdown()
