"""Fixtures for the retail domain tests: the real verified data (from the installed package or
TAU2_RETAIL_DATA_DIR) and fresh environments over it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from retail_domain import RetailData, RetailEnvironment, load_retail_data

HERE = Path(__file__).parent
INITIAL_HASH = "b25c9cb211f5efcaee5dd646054a73c4a9f43f4f5acc32c10713cd9f9ac20e9c"


def load_vectors(name: str) -> Any:
    return json.loads((HERE / name).read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def data() -> RetailData:
    return load_retail_data()


@pytest.fixture
def env(data: RetailData) -> RetailEnvironment:
    return data.new_environment()


@pytest.fixture(scope="session")
def data_files(data: RetailData) -> dict[str, Path]:
    """Paths of the four verified files (wherever they were found), for tests that build altered copies."""
    return dict(data.source.paths)
