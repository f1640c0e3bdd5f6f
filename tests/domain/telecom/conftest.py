"""Fixtures for the telecom domain tests: the real verified data (from TAU2_TELECOM_DATA_DIR or the files
`green-agent data install` put in the environment) and the conformance facts computed with upstream's code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from telecom_domain import TelecomData, load_telecom_data

HERE = Path(__file__).parent
PRISTINE_AGENT_HASH = "304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d"
PRISTINE_USER_HASH = "e1f3a8637388808221228ff3f87294444e6b64caf721f5eb243a85d0a9380b28"


def load_facts(name: str) -> Any:
    return json.loads((HERE / name).read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def telecom() -> TelecomData:
    return load_telecom_data()


@pytest.fixture(scope="session")
def telecom_files(telecom: TelecomData) -> dict[str, Path]:
    """Paths of the six verified files, for tests that build altered copies."""
    return dict(telecom.source.paths)
