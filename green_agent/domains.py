"""The registry of tau2 domains: the engine's only way to a domain package.

A domain is named in a request ("retail", "airline", ...); the registry imports its package on first use
(importlib: no domain is imported before an assessment asks for it) and calls its `load_data`, which verifies
and parses the data once per process. Nothing else in green_agent/ or api/ imports a domain package
(tests/api/test_import_direction.py holds that).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from types import ModuleType
from typing import cast

from domain_kit.protocols import DomainData

DOMAIN_PACKAGES: dict[str, str] = {
    "retail": "retail_domain",
    "airline": "airline_domain",
    "telecom": "telecom_domain",
    "mock": "mock_domain",
}
"""Domain name -> its package, in the order the service lists them."""

DEFAULT_DOMAIN = "retail"


class UnknownDomainError(ValueError):
    """A request named a domain this service does not run."""


def domain_names() -> tuple[str, ...]:
    """The domains this service runs, in listing order."""
    return tuple(DOMAIN_PACKAGES)


def check_domain(name: str) -> str:
    """`name` if this service runs it; else UnknownDomainError in one line naming the ones it runs."""
    if name not in DOMAIN_PACKAGES:
        shown = name if len(name) <= 40 else name[:40] + "..."
        raise UnknownDomainError(
            f"unknown domain {shown!r}; this service runs {', '.join(repr(d) for d in domain_names())}"
        )
    return name


def load_domain(name: str, data_dir: str | os.PathLike[str] | None = None) -> DomainData:
    """The named domain's data (verified, parsed once per process and source by the package itself). Blocks
    while it parses: call it in a thread from async code the first time."""
    package = importlib.import_module(DOMAIN_PACKAGES[check_domain(name)])
    loader = cast(Callable[[str | os.PathLike[str] | None], DomainData], package.load_data)
    return loader(data_dir)


def domain_module(name: str, module: str) -> ModuleType:
    """A module of the named domain's package (e.g. retail's `replay`, its command-line tool), imported on
    demand: for the few tools that are one domain's own."""
    return importlib.import_module(f"{DOMAIN_PACKAGES[check_domain(name)]}.{module}")
