"""procrastinate's psycopg connector, with the three queries every trial job makes run on asyncpg (and the
progress relay's notifications).

A trial job costs procrastinate three statements: taking it (`fetch_job`), finishing it (`finish_job`) and
queueing the trial after it (`defer_jobs`). Each is one call of one of procrastinate's SQL functions, and
through psycopg's async driver each cost ~0.3 ms of CPU (its waits on the socket are Python generators),
about a third of what the service spent per trial on PostgreSQL beyond the trial itself
(docs/benchmarks.md). asyncpg, which the service's own statements use, runs the same call for a fraction of
that. So those three run on a connection of the service's SQLAlchemy pool, as api/db/direct.py runs the
repository's hot statements; everything else (listening for notifications, the stalled-job sweep, the
transaction of `TrialQueue.exclusive`, cancels, listings) stays on psycopg, untouched. Each of the three is a
single statement that commits itself, so which connection runs it changes nothing but the cost.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import procrastinate
from procrastinate import exceptions, manager, sql, types
from sqlalchemy.ext.asyncio import AsyncEngine

from api.db.direct import pooled_driver

_PLACEHOLDER = re.compile(r"%\((\w+)\)s")


@dataclass(frozen=True)
class _Statement:
    """A procrastinate query with its `%(name)s` placeholders numbered for asyncpg."""

    sql: str
    names: tuple[str, ...]

    @classmethod
    def of(cls, query: str) -> _Statement:
        names: list[str] = []

        def number(match: re.Match[str]) -> str:
            if match.group(1) not in names:
                names.append(match.group(1))
            return f"${names.index(match.group(1)) + 1}"

        return cls(_PLACEHOLDER.sub(number, query), tuple(names))


def _job_to_defer(job: types.JobToDefer) -> tuple[Any, ...]:
    # The composite's jsonb field as text: the service's pool passes JSON to PostgreSQL as text.
    return (*job[:5], json.dumps(job.args), job.scheduled_at)


def _defer_arguments(arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {"jobs": [_job_to_defer(job) for job in arguments["jobs"]]}


def _fetched_row(row: Mapping[str, Any]) -> dict[str, Any]:
    found = dict(row)
    if isinstance(found.get("args"), str):  # jsonb arrives as text on the service's pool
        found["args"] = json.loads(found["args"])
    return found


NOTIFY_BATCH = "SELECT pg_notify(%(channel)s, payload) FROM unnest(%(payloads)s::text[]) AS payload"
"""The progress relay's batch of notifications (api/runtime/events.py): about one per trial; here too."""

_HOT_PATH: dict[str, tuple[Callable[[Mapping[str, Any]], Mapping[str, Any]] | None, bool]] = {
    sql.queries["fetch_job"]: (None, True),
    sql.queries["finish_job"]: (None, False),
    sql.queries["defer_jobs"]: (_defer_arguments, False),
    NOTIFY_BATCH: (None, False),
}
"""query -> (how its arguments are adapted, whether its rows carry a job's jsonb `args`)."""


class QueueConnector(procrastinate.PsycopgConnector):
    """`PsycopgConnector`, with `fetch_job`, `finish_job` and `defer_jobs` (when no connection is given: a
    `defer_jobs` inside `TrialQueue.exclusive`'s transaction stays on it) run on `database`'s asyncpg pool."""

    def __init__(self, *, database: AsyncEngine, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._database = database
        self._statements = {query: _Statement.of(query) for query in _HOT_PATH}

    async def _fetch(self, query: str, arguments: Mapping[str, Any]) -> list[dict[str, Any]]:
        adapt, has_args = _HOT_PATH[query]
        values = adapt(arguments) if adapt is not None else arguments
        statement = self._statements[query]
        try:
            async with pooled_driver(self._database) as driver:
                rows = await driver.fetch(statement.sql, *(values[name] for name in statement.names))
        except asyncpg.UniqueViolationError as exc:
            raise _unique_violation(exc) from exc
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
            raise exceptions.ConnectorException(str(exc)) from exc
        return [_fetched_row(row) if has_args else dict(row) for row in rows]

    async def execute_query_async(self, query: Any, **arguments: Any) -> None:
        if query in _HOT_PATH:
            await self._fetch(query, arguments)
            return
        await super().execute_query_async(query, **arguments)

    async def execute_query_one_async(self, query: Any, **arguments: Any) -> dict[str, Any]:
        if query not in _HOT_PATH:
            return await super().execute_query_one_async(query, **arguments)
        rows = await self._fetch(query, arguments)
        if not rows:
            raise exceptions.NoResult
        return rows[0]

    async def execute_query_all_async(self, query: Any, **arguments: Any) -> list[dict[str, Any]]:
        if query not in _HOT_PATH:
            return await super().execute_query_all_async(query, **arguments)
        return await self._fetch(query, arguments)


def _unique_violation(exc: asyncpg.UniqueViolationError) -> exceptions.UniqueViolation:
    """As procrastinate's psycopg connector reports it: a queueing lock taken names the lock, so that the job
    manager raises AlreadyEnqueued."""
    constraint = getattr(exc, "constraint_name", None)
    queueing_lock = None
    if constraint == manager.QUEUEING_LOCK_CONSTRAINT:
        match = re.search(r"Key \((.*?)\)=\((.*?)\)", getattr(exc, "detail", None) or "")
        if match is not None and match.group(1) == "queueing_lock":
            queueing_lock = match.group(2)
    return exceptions.UniqueViolation(str(exc), constraint_name=constraint, queueing_lock=queueing_lock)
