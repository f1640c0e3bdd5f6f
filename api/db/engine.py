"""The async SQLAlchemy engine: one per process, created by the runtime and disposed with it.

SQLite allows one writer at a time for the whole file. The repository queues its own writes in-process (see
`AssessmentRepository`); what is set here covers the rest: WAL so readers (REST, SSE) never wait for a
writer, and a busy timeout so a write that meets another one (the SDK's task store, another process) waits
for the lock instead of failing at once with "database is locked".
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy.dialects import registry
from sqlalchemy.dialects.sqlite.aiosqlite import SQLiteDialect_aiosqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from api.db.sqlite_thread import SQLiteThread, sqlite_file_url

SQLITE_BUSY_TIMEOUT_S = 60.0
"""How long a SQLite write waits for the file's write lock before giving up."""
CONNECT_TIMEOUT_S = 5.0
PING_AFTER_IDLE_S = 1.0
"""A pooled PostgreSQL connection idle this long is checked with a round trip before it is used again."""
# Connections a process keeps for the service's tables, and may open beyond that at busy moments. A
# connection opened beyond the kept ones is closed as soon as it is back, and opening one costs ~2.7 ms of
# CPU (asyncpg, with the TLS attempt), ten times a pooled statement: keeping as many as the trials that store
# at once (every live trial at a wave's start or end) is what keeps a busy worker from paying that per trial
# (111 connections opened in a 456-trial run at 10 kept, 30 at 32; docs/benchmarks.md, "Turn cost").
DB_POOL_SIZE = 32
DB_MAX_OVERFLOW = 8
SQLITE_CACHE_KIB = 512
"""Page cache of each SQLite connection (SQLite's own default is 2,000 KiB). The pool keeps several
connections, each on a thread of its own, and each filled its cache as the file grew: ~2 MiB of RSS apiece
for pages the operating system caches anyway."""


class IdleRollbackDialect(SQLiteDialect_aiosqlite):
    """aiosqlite, without the thread hop of a rollback that has nothing to roll back.

    SQLAlchemy rolls a connection back when a read ends and again when any connection goes back to the pool,
    after a commit too; through aiosqlite each rollback is a round trip to the connection's thread (~25 us
    of CPU, several per trial job). sqlite3's own `rollback()` does nothing unless a transaction is open, so
    asking the same question first (`in_transaction`, a flag read) changes nothing but the cost: a connection
    returned inside a transaction is still rolled back (tests/api/db/test_repository.py)."""

    supports_statement_cache = True

    def do_rollback(self, dbapi_connection: Any) -> None:
        if _in_transaction(dbapi_connection):
            super().do_rollback(dbapi_connection)


def _in_transaction(dbapi_connection: Any) -> bool:
    try:
        return bool(dbapi_connection.driver_connection.in_transaction)
    except (AttributeError, ValueError):  # closed or invalidated: let the driver decide
        return True


registry.register("sqlite.aiosqlite_idle_rollback", __name__, IdleRollbackDialect.__name__)


def _sqlite_pragmas(busy_timeout_s: float, cache_kib: int) -> Callable[[Any, Any], None]:
    def on_connect(dbapi_connection: Any, connection_record: Any) -> None:
        # WAL lets readers proceed while a trial commits; synchronous=NORMAL is durable across a crash of
        # the process with WAL (only an OS crash can lose the last commits) and saves an fsync per commit;
        # foreign keys make the cascades real.
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
        cursor.execute(f"PRAGMA cache_size={-cache_kib}")  # negative: KiB rather than pages
        cursor.close()

    return on_connect


_SQLITE_THREADS: weakref.WeakKeyDictionary[Engine, SQLiteThread] = weakref.WeakKeyDictionary()
"""The trial-path thread of each SQLite file engine `create_engine` made (see `sqlite_thread`)."""


def create_engine(
    database_url: str,
    *,
    sqlite_busy_timeout_s: float = SQLITE_BUSY_TIMEOUT_S,
    sqlite_cache_kib: int = SQLITE_CACHE_KIB,
    connect_timeout_s: float = CONNECT_TIMEOUT_S,
    pool_size: int = DB_POOL_SIZE,
    max_overflow: int = DB_MAX_OVERFLOW,
    ping_after_idle_s: float = PING_AFTER_IDLE_S,
) -> AsyncEngine:
    """An engine for `database_url` (already normalized to an async driver by Settings)."""
    if database_url.startswith("sqlite"):
        # The driver's own `timeout` and the PRAGMA are the same SQLite busy timeout; both are set so no
        # connection ever runs with the driver's 5 s default, whatever opened it.
        url = make_url(database_url)
        if url.drivername == "sqlite+aiosqlite":
            url = url.set(drivername="sqlite+aiosqlite_idle_rollback")
        engine = create_async_engine(url, connect_args={"timeout": sqlite_busy_timeout_s})
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas(sqlite_busy_timeout_s, sqlite_cache_kib))
        _add_sqlite_thread(engine, sqlite_busy_timeout_s, sqlite_cache_kib)
        return engine
    # A connection attempt to an unreachable server gives up after `connect_timeout_s` (asyncpg's default is
    # 60 s), so storage errors surface, and are retried, while the database is away.
    engine = create_async_engine(
        database_url,
        pool_size=pool_size,
        max_overflow=max_overflow,
        connect_args={"timeout": connect_timeout_s},
    )
    _ping_when_idle(engine, ping_after_idle_s)
    return engine


def _add_sqlite_thread(engine: AsyncEngine, busy_timeout_s: float, cache_kib: int) -> None:
    """Give an SQLite file engine its trial-path thread (started on first use; closed with the engine)."""
    url = sqlite_file_url(engine.url)
    if url is None:
        return
    pragmas = _sqlite_pragmas(busy_timeout_s, cache_kib)
    thread = SQLiteThread(url, connect_args={"timeout": busy_timeout_s}, on_connect=[pragmas])
    _SQLITE_THREADS[engine.sync_engine] = thread
    event.listen(engine.sync_engine, "engine_disposed", lambda _engine: thread.close())


def sqlite_thread(engine: AsyncEngine) -> SQLiteThread | None:
    """The thread that runs `engine`'s trial-path transactions when it is an SQLite file engine made by
    `create_engine`; None otherwise (PostgreSQL, in-memory SQLite: the async path)."""
    return _SQLITE_THREADS.get(engine.sync_engine)


def _ping_when_idle(engine: AsyncEngine, idle_s: float) -> None:
    """Check a pooled connection before use only when it sat idle for `idle_s` or more.

    SQLAlchemy's `pool_pre_ping` checks every checkout, and on asyncpg a check is three round trips (BEGIN,
    `;`, ROLLBACK): more than the statement it guards for most of our reads. A connection that was in use a
    moment ago is alive unless the server went away in that moment; then the statement fails with a connection
    error, which is transient (`api.runtime.queue.is_transient`): the pool drops the connection and the write
    is retried. Idle connections, e.g. after a database restart, are checked as before."""

    def on_checkin(dbapi_connection: Any, record: Any) -> None:
        record.info["returned_at"] = time.monotonic()

    def on_checkout(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        returned_at = record.info.get("returned_at")
        if returned_at is None or time.monotonic() - returned_at < idle_s:
            return  # new, or used a moment ago
        try:
            dbapi_connection.ping()
        except Exception as exc:  # the pool opens a fresh connection instead (SQLAlchemy's own protocol)
            raise DisconnectionError(f"the pooled connection did not answer: {exc}") from exc

    event.listen(engine.sync_engine.pool, "checkin", on_checkin)
    event.listen(engine.sync_engine.pool, "checkout", on_checkout)
