"""Alembic, driven from code: `upgrade(engine)` brings the schema to the newest revision.

No alembic.ini: the script location is the installed `migrations` package, and the connection is
handed to `migrations/env.py` through `Config.attributes`, so the same code path serves start-up
and `green-agent db upgrade`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

import migrations

SCRIPT_LOCATION = str(Path(migrations.__file__).resolve().parent)
VERSION_TABLE = "green_agent_schema_version"
"""Where Alembic records the schema's revision (migrations/env.py configures it)."""


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    return config


@dataclass(frozen=True)
class Upgraded:
    """What an upgrade did: the revision before (None: the database had none of our tables) and after."""

    before: str | None
    after: str | None

    def summary(self) -> str:
        if self.before is None:
            return f"created the tables at revision {self.after}"
        if self.before == self.after:
            return f"already at revision {self.after}"
        return f"upgraded from revision {self.before} to {self.after}"


def current_revision(connection: Connection) -> str | None:
    """The schema revision the database records (None when it has none)."""
    context = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
    return context.get_current_revision()


def _upgrade(connection: Connection, revision: str) -> Upgraded:
    before = current_revision(connection)
    config = alembic_config()
    config.attributes["connection"] = connection
    command.upgrade(config, revision)
    return Upgraded(before=before, after=current_revision(connection))


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


async def upgrade(engine: AsyncEngine, revision: str = "head") -> Upgraded:
    """Apply every migration up to `revision` (idempotent; creates the SQLite file when missing); say what
    was done."""
    async with schema_lock(engine), engine.begin() as connection:
        return await connection.run_sync(_upgrade, revision)
