"""Fixtures for the airline domain tests: the real verified data (from the installed package or
TAU2_AIRLINE_DATA_DIR) and fresh environments over it. Overrides the retail fixtures of the same names."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from airline_domain import AirlineData, AirlineEnvironment, load_airline_data

HERE = Path(__file__).parent
INITIAL_HASH = "124e39a664b56402bcd09cb8a6a9cece6acb8462337c969799d5658e3250f263"


def load_vectors(name: str) -> Any:
    return json.loads((HERE / name).read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def data() -> AirlineData:
    return load_airline_data()


@pytest.fixture
def env(data: AirlineData) -> AirlineEnvironment:
    return data.new_environment()


@pytest.fixture(scope="session")
def data_files(data: AirlineData) -> dict[str, Path]:
    """Paths of the four verified files (wherever they were found), for tests that build altered copies."""
    return dict(data.source.paths)
