"""Alembic, driven from code: `upgrade(engine)` brings the schema to the newest revision.

No alembic.ini: the script location is the installed `migrations` package, and the connection is
handed to `migrations/env.py` through `Config.attributes`, so the same code path serves start-up
and `green-agent db upgrade`.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
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


async def upgrade(engine: AsyncEngine, revision: str = "head") -> None:
    """Apply every migration up to `revision` (idempotent; creates the SQLite file when missing)."""
    async with engine.begin() as connection:
        await connection.run_sync(_upgrade, revision)
