"""The service: REST and A2A surfaces over one assessment store, the CLI, settings and persistence."""

from importlib.metadata import PackageNotFoundError, version

# Imported first on purpose: green_agent switches a2a-sdk's OpenTelemetry tracing off (opt-in) before any
# module of this package imports a2a, which reads that setting once, at import.
import green_agent  # noqa: F401

try:
    __version__ = version("tau2-retail-green-agent")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0"
