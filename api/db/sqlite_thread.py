"""SQLite's trial path on one thread of its own: a transaction in one hop instead of one per call.

Through aiosqlite every call of a statement (cursor, execute, fetch, close, commit) is a round trip between
the event loop and the connection's thread: a trial's save took ~15 of them, and with 32 trials finishing at
once the two threads spent more CPU handing the GIL back and forth than SQLite spent storing (2.4 ms of the
service's 2.75 ms per trial, `bench.full_assessment --domain airline`). Here the same statements (the
repository's own, compiled by the same SQLite dialect) run on a synchronous connection, on one thread, and
the event loop waits for the whole transaction once. A file database only: an in-memory one exists per
connection, so it keeps the async path.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL
from sqlalchemy.pool import StaticPool

T = TypeVar("T")


def sqlite_file_url(url: URL) -> URL | None:
    """The synchronous URL of an SQLite file database; None for any other (an in-memory one included)."""
    if url.get_backend_name() != "sqlite":
        return None
    database = url.database or ""
    in_memory = database in ("", ":memory:") or database.startswith("file::memory:")
    if in_memory or url.query.get("mode") == "memory":
        return None
    return url.set(drivername="sqlite")


class SQLiteThread:
    """One synchronous connection to an SQLite file, used from one thread only: `run(work)` runs
    `work(connection)` there in a transaction, committed when it returns, rolled back when it raises.

    The connection gets what the async engine's connections get (the `connect` listeners, WAL, busy timeout,
    foreign keys), so the statements behave the same on both. Opened on first use, closed by `close()`, which
    the repository calls when its async engine is disposed."""

    def __init__(self, url: URL, *, connect_args: dict[str, Any], on_connect: list[Callable[..., None]]):
        self._url = url
        self._connect_args = connect_args
        self._on_connect = on_connect
        self._engine: Engine | None = None
        self._executor: ThreadPoolExecutor | None = None

    def _open(self) -> Engine:
        # On the thread: the engine and its single connection (StaticPool) belong to it.
        if self._engine is None:
            engine = create_engine(
                self._url,
                poolclass=StaticPool,
                connect_args={**self._connect_args, "check_same_thread": False},
            )
            for listener in self._on_connect:
                event.listen(engine, "connect", listener)
            self._engine = engine
        return self._engine

    def _transaction(self, work: Callable[[Connection], T]) -> T:
        with self._open().begin() as connection:
            return work(connection)

    async def run(self, work: Callable[[Connection], T]) -> T:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-trials")
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._transaction, work)

    def close(self) -> None:
        """Close the connection (after the transaction in progress, if any) and stop the thread."""
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.submit(self._dispose)
            executor.shutdown(wait=True)

    def _dispose(self) -> None:
        engine, self._engine = self._engine, None
        if engine is not None:
            engine.dispose()
