"""The async SQLAlchemy engine: one per process, created by the runtime and disposed with it."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine


def _sqlite_pragmas(dbapi_connection: Any, connection_record: Any) -> None:
    # WAL lets readers (REST, SSE) proceed while a trial commits; foreign keys make the cascades real;
    # busy_timeout absorbs the short write overlaps between the service and the SDK's task store.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def create_engine(database_url: str) -> AsyncEngine:
    """An engine for `database_url` (already normalized to an async driver by Settings)."""
    if database_url.startswith("sqlite"):
        engine = create_async_engine(database_url, connect_args={"timeout": 30})
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        return engine
    return create_async_engine(database_url, pool_size=10, max_overflow=20, pool_pre_ping=True)
