"""The Alembic migrations produce exactly the schema the ORM tables describe, on both backends."""

from __future__ import annotations

from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy.engine import Connection

from api.db.engine import create_engine
from api.db.migrate import upgrade
from api.db.tables import Base


def _diff(connection: Connection) -> list[Any]:
    context = MigrationContext.configure(
        connection,
        opts={
            "include_object": lambda obj, name, type_, reflected, compare_to: (
                not (type_ == "table" and name not in Base.metadata.tables)
            )
        },
    )
    return list(compare_metadata(context, Base.metadata))


async def test_migrations_match_the_tables(database_url: str) -> None:
    engine = create_engine(database_url)
    try:
        await upgrade(engine)
        async with engine.connect() as connection:
            diff = await connection.run_sync(_diff)
    finally:
        await engine.dispose()
    assert diff == []
