"""Fixtures of the API tests: real reference white agents on loopback, shared by the whole session."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from api.db.engine import create_engine
from api.db.migrate import upgrade
from api.db.repository import AssessmentRepository
from green_agent.reference_agents import serve_reference_agent
from retail_domain import RetailData, load_retail_data
from tests.conftest import create_pg_database, drop_pg_database, pg_url
from tests.support.gateway_venv import make_gateway_python


@pytest.fixture(scope="session")
def retail_data() -> RetailData:
    return load_retail_data()


@pytest.fixture(scope="session")
def gateway_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a throwaway environment with the AgentBeats gateway's a2a-sdk 0.3 (made once)."""
    return make_gateway_python(tmp_path_factory.mktemp("gateway-venv") / "venv")


@pytest.fixture(scope="session")
async def oracle_url(retail_data: RetailData) -> AsyncIterator[str]:
    """The oracle white agent: replays each task's gold actions (reward 1 with the scripted user)."""
    async with serve_reference_agent("oracle", data=retail_data) as url:
        yield url


@pytest.fixture(scope="session")
async def slow_oracle_url(retail_data: RetailData) -> AsyncIterator[str]:
    """The oracle, answering each message after 50 ms: assessments last long enough to interrupt."""
    async with serve_reference_agent("oracle", data=retail_data, delay_s=0.05) as url:
        yield url


@pytest.fixture(scope="session")
async def idle_url(retail_data: RetailData) -> AsyncIterator[str]:
    """A white agent that never answers in time: its assessments run until cancelled."""
    async with serve_reference_agent("idle", data=retail_data) as url:
        yield url


@pytest.fixture
async def repository(database_url: str) -> AsyncIterator[AssessmentRepository]:
    """The data layer over a fresh, migrated database of each backend."""
    engine = create_engine(database_url)
    await upgrade(engine)
    yield AssessmentRepository(engine)
    await engine.dispose()


@pytest.fixture
async def database(database_url: str) -> AsyncIterator[AsyncEngine]:
    """The test's own database (`database_url`), opened for reading what the service stored."""
    engine = create_engine(database_url)
    try:
        yield engine
    finally:
        await engine.dispose()


@pytest.fixture
async def pg_database() -> AsyncIterator[str]:
    """A fresh PostgreSQL database of its own (for tests that need PostgreSQL only); its URL."""
    name = await create_pg_database()
    try:
        yield pg_url(name)
    finally:
        await drop_pg_database(name)
