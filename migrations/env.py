"""Alembic environment of the service schema.

The service runs migrations itself (`api.db.migrate.upgrade`), handing over an open connection in
`config.attributes["connection"]`; no alembic.ini is needed. The SDK's A2A `tasks` table is not ours and is
excluded from autogenerate.
"""

from __future__ import annotations

from typing import Any

from alembic import context
from sqlalchemy.engine import Connection

from api.db.migrate import VERSION_TABLE
from api.db.tables import Base


def _include_object(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
    return not (type_ == "table" and name not in Base.metadata.tables)


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        version_table=VERSION_TABLE,
        include_object=_include_object,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError(
        "run migrations with `green-agent db upgrade` (api.db.migrate), which passes a connection"
    )
_run(connection)
