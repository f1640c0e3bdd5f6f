"""PostgreSQL's trial path straight on asyncpg: each job's opening read and each trial's save.

Both are one statement each, run hundreds of times a minute. Through SQLAlchemy's async layer a statement
cost ~0.25 ms of CPU beyond asyncpg's own (the pool checkout and return, the greenlet bridge, the result
wrapping): 0.28 ms for the opening read against 0.02 ms on asyncpg, more than the statement itself
(docs/benchmarks.md). Here the statement is still the repository's Core statement, compiled once by the
same dialect, its parameters still converted by the dialect's own bind processors (JSON, arrays, the UTC
timestamps), and the connection still comes from the engine's pool; only the execution skips the layers.

asyncpg's errors are raised as SQLAlchemy's, so callers tell a duplicate (`IntegrityError`) and a passing
failure (`api.runtime.queue.is_transient`) apart as they do on the general path; a connection that failed
is invalidated, so the pool opens a new one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.util import greenlet_spawn

_INTEGRITY = "23"
"""The SQLSTATE class of integrity violations (a trial stored twice)."""


class DirectStatement:
    """A Core statement compiled once for PostgreSQL, with what turns named parameters into asyncpg's
    positional arguments."""

    def __init__(self, statement: ClauseElement, dialect: Dialect) -> None:
        compiled = statement.compile(dialect=dialect)
        if not isinstance(compiled, SQLCompiler) or compiled.positiontup is None:  # pragma: no cover
            raise ValueError("the statement was not compiled with positional parameters")
        self._compiled = compiled
        self.sql = compiled.string
        processors = compiled._bind_processors  # the dialect's own conversions (JSON, arrays, timestamps)
        self._order: list[tuple[str, Callable[[Any], Any] | None]] = []
        for name in compiled.positiontup:
            convert = processors.get(name)
            if convert is not None and not callable(convert):  # pragma: no cover - tuple parameters
                raise ValueError(f"parameter {name!r} is a tuple, which is not supported here")
            self._order.append((name, convert))

    def arguments(self, parameters: Mapping[str, Any]) -> list[Any]:
        # construct_params adds the statement's own values (an increment's `1`) to the caller's.
        values = self._compiled.construct_params(dict(parameters))
        return [values[name] if convert is None else convert(values[name]) for name, convert in self._order]


@asynccontextmanager
async def pooled_driver(engine: AsyncEngine) -> AsyncIterator[asyncpg.Connection]:
    """The asyncpg connection of one of `engine`'s pooled connections, without SQLAlchemy's `Connection`
    around it (half the remaining cost: 0.06 against 0.13 ms per statement); the pool's events (the check
    after idling) run as for any checkout. A driver error other than an integrity violation leaves the
    connection in an unknown state: the pool closes it (on asyncpg, through the greenlet bridge)."""
    pooled = await engine.raw_connection()
    try:
        yield pooled.driver_connection
    except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
        if not (getattr(exc, "sqlstate", None) or "").startswith(_INTEGRITY):
            await greenlet_spawn(pooled.invalidate, exc)
        raise
    finally:
        await greenlet_spawn(pooled.close)  # back to the pool (or discarded, when invalidated)


async def fetch_row(
    engine: AsyncEngine, statement: DirectStatement, parameters: Mapping[str, Any]
) -> asyncpg.Record | None:
    """Run `statement` on a pooled connection, outside any transaction (one statement commits itself),
    and return its first row; asyncpg's errors raised as SQLAlchemy's."""
    arguments = statement.arguments(parameters)
    try:
        async with pooled_driver(engine) as driver:
            return await driver.fetchrow(statement.sql, *arguments)
    except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
        raise as_sqlalchemy_error(exc, statement.sql, arguments) from exc


def as_sqlalchemy_error(exc: BaseException, sql: str, arguments: list[Any]) -> sa_exc.DBAPIError:
    """asyncpg's exception as the SQLAlchemy error the general path would raise (with `orig.sqlstate`)."""
    sqlstate = getattr(exc, "sqlstate", None) or ""
    kind: type[sa_exc.DBAPIError] = sa_exc.DBAPIError  # its sqlstate says whether it may pass
    if sqlstate.startswith(_INTEGRITY):
        kind = sa_exc.IntegrityError
    elif isinstance(exc, asyncpg.InterfaceError | OSError):  # the connection failed, not the statement
        kind = sa_exc.InterfaceError
    return kind(sql, arguments, exc)
