"""Benchmarks that print what the service costs (no assertions on time); see docs/benchmarks.md."""

import os

# a2a-sdk turns OpenTelemetry tracing on at import time when the telemetry extra is installed; the service
# keeps it off (green_agent does the same), so the benchmarks do too, whatever their import order.
os.environ.setdefault("OTEL_INSTRUMENTATION_A2A_SDK_ENABLED", "false")
