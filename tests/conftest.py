"""Shared fixtures: one fresh database per test, on SQLite and on the local PostgreSQL.

`database_url` is parametrized over both backends, so every test that takes it runs twice. The PostgreSQL
one creates its own database (CREATE DATABASE through asyncpg on the maintenance database) and drops it
afterwards, so tests never share state. When PostgreSQL is unreachable the test FAILS: a green run must mean
both backends were exercised.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg  # type: ignore[import-untyped]
import pytest

# Where the test PostgreSQL lives: trust auth, user postgres (see .ci/run).
PG_HOST = os.environ.get("TEST_PG_HOST", "127.0.0.1")
PG_PORT = int(os.environ.get("TEST_PG_PORT", "5432"))
PG_USER = os.environ.get("TEST_PG_USER", "postgres")
PG_MAINTENANCE_DBS = ("postgres", "test")


async def _maintenance_connection() -> asyncpg.Connection:
    errors = []
    for database in PG_MAINTENANCE_DBS:
        try:
            return await asyncpg.connect(
                host=PG_HOST, port=PG_PORT, user=PG_USER, database=database, timeout=10
            )
        except (OSError, asyncpg.PostgresError) as exc:
            errors.append(f"{database}: {exc}")
    pytest.fail(
        f"PostgreSQL at {PG_HOST}:{PG_PORT} (user {PG_USER}) is unreachable ({'; '.join(errors)}); "
        "start it (.ci/run does) — these tests must run on both backends",
        pytrace=False,
    )


async def create_pg_database() -> str:
    """Create an empty database and return its name."""
    name = f"ga_test_{uuid.uuid4().hex[:16]}"
    connection = await _maintenance_connection()
    try:
        await connection.execute(f'CREATE DATABASE "{name}"')
    finally:
        await connection.close()
    return name


async def drop_pg_database(name: str) -> None:
    connection = await _maintenance_connection()
    try:
        await connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await connection.close()


def pg_url(name: str) -> str:
    return f"postgresql+asyncpg://{PG_USER}@{PG_HOST}:{PG_PORT}/{name}"


@pytest.fixture(params=["sqlite", "postgresql"])
async def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A URL to an empty database of its own, on each backend."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'green_agent.db'}"
        return
    name = await create_pg_database()
    try:
        yield pg_url(name)
    finally:
        await drop_pg_database(name)
