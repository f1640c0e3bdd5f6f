"""Alembic, driven from code: `upgrade(engine)` brings the schema to the newest revision.

No alembic.ini: the script location is the installed `migrations` package, and the connection is
handed to `migrations/env.py` through `Config.attributes`, so the same code path serves start-up
and `green-agent db upgrade`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

import migrations

SCRIPT_LOCATION = str(Path(migrations.__file__).resolve().parent)


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    return config


def _upgrade(connection: Connection, revision: str) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    command.upgrade(config, revision)


# Any constant shared by every process of the service: replicas starting together take turns migrating.
SCHEMA_LOCK_KEY = 0x6772_6565_6E00


@contextlib.asynccontextmanager
async def schema_lock(engine: AsyncEngine) -> AsyncIterator[None]:
    """Held while a process creates or upgrades tables (ours and the A2A SDK's): on PostgreSQL an advisory
    lock, so replicas that start at the same time do it one after the other and the later ones find nothing
    to do. SQLite needs none (one process; its write lock serializes the rest)."""
    if engine.dialect.name != "postgresql":
        yield
        return
    async with engine.connect() as connection:
        await connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": SCHEMA_LOCK_KEY})
        try:
            yield
        finally:
            await connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": SCHEMA_LOCK_KEY})


async def upgrade(engine: AsyncEngine, revision: str = "head") -> None:
    """Apply every migration up to `revision` (idempotent; creates the SQLite file when missing)."""
    async with schema_lock(engine), engine.begin() as connection:
        await connection.run_sync(_upgrade, revision)
