"""PostgreSQL helpers for tests that make the server drop a pooled connection."""

from __future__ import annotations

import asyncio

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from api.db.engine import create_engine
from api.db.migrate import upgrade


async def one_connection_engine(pg_url: str) -> AsyncEngine:
    """An engine on a migrated database whose pool keeps one connection, checked only after a minute idle:
    a connection the server dropped is met by the next statement, not pinged away first."""
    migrating = create_engine(pg_url)
    await upgrade(migrating)
    await migrating.dispose()
    return create_engine(pg_url, pool_size=1, max_overflow=0, ping_after_idle_s=60)


async def terminate_pooled_connection(engine: AsyncEngine, pg_url: str) -> None:
    """Have the server end the backend of `engine`'s pooled connection (as a restart or a proxy would)."""
    async with engine.connect() as connection:
        pid = (await connection.execute(text("SELECT pg_backend_pid()"))).scalar_one()
    admin = await asyncpg.connect(pg_url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        await admin.execute("SELECT pg_terminate_backend($1)", pid)
        await asyncio.sleep(0.1)
    finally:
        await admin.close()
