"""The service: REST and A2A surfaces over one assessment store, the CLI, settings and persistence."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("tau2-retail-green-agent")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0"
