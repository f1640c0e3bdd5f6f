"""What `green-agent` prints when an expected operational failure stops a command: one or two lines saying
what is wrong and what to do, and the exit code of api/cli/exit_codes.py. A database that is missing, down or
refusing the login, a malformed setting or option, a domain's data that fails its checksum: none of these is a
bug, so none prints a traceback. Anything else is one, and keeps its traceback; `--debug` shows it for all.
"""

from __future__ import annotations

import socket
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError

from api.cli.exit_codes import ExitCode
from domain_kit import DataError

# SQLSTATE classes of PostgreSQL errors that are the operator's to fix, with what to do about them.
_DATABASE_FIXES = {
    "3D000": "create it (createdb NAME) or point DATABASE_URL at one that exists",
    "28": "check the user and password in DATABASE_URL",
    "08": "check that PostgreSQL runs and that DATABASE_URL names its host and port",
    "53": "the server is out of resources (connections?); try again or raise its limits",
    "57P": "the server is shutting down or starting; try again in a moment",
}
_REACH_FIX = "check that the database server runs and that DATABASE_URL names its host and port"


@dataclass(frozen=True)
class Explained:
    message: str
    code: ExitCode


def explain(exc: BaseException, database: str) -> Explained | None:
    """The message and exit code for an expected failure; None for anything else (a bug)."""
    if isinstance(exc, ValidationError):
        return Explained(f"invalid settings: {validation_summary(exc)}", ExitCode.USAGE)
    if isinstance(exc, DataError):
        return Explained(f"tau2 data: {exc}", ExitCode.FAILED)
    if isinstance(exc, DBAPIError):
        return _database_error(exc, database)
    if isinstance(exc, (ConnectionError, socket.gaierror, TimeoutError)):
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
        return Explained(
            f"cannot connect to the database at {database}: {reason}; {_REACH_FIX}", ExitCode.FAILED
        )
    return None


def sqlite_problem(database_url: str) -> Explained | None:
    """A SQLite file that cannot be created because its directory does not exist, found before connecting
    (the driver's failed connect leaves a thread that may print its own traceback as the process ends)."""
    try:
        url = make_url(database_url)
    except ArgumentError:  # malformed: the settings check says so
        return None
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return None
    directory = Path(url.database).expanduser().parent
    if directory.is_dir():
        return None
    shown = url.render_as_string(hide_password=True)
    return Explained(
        f"cannot open the database at {shown}: directory {directory} does not exist; "
        "check that its directory exists and is writable",
        ExitCode.FAILED,
    )


def _database_error(exc: DBAPIError, database: str) -> Explained | None:
    orig = exc.orig
    reason = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
    if isinstance(orig, sqlite3.OperationalError) and "unable to open" in reason:
        fix = "check that its directory exists and is writable"
        return Explained(f"cannot open the database at {database}: {reason}; {fix}", ExitCode.FAILED)
    sqlstate = getattr(orig, "sqlstate", None)
    if not isinstance(sqlstate, str):
        return None
    for prefix, fix in _DATABASE_FIXES.items():
        if sqlstate.startswith(prefix):
            return Explained(f"database at {database}: {reason}; {fix}", ExitCode.FAILED)
    return None


def validation_summary(exc: ValidationError) -> str:
    """A pydantic error as `field: problem; field: problem`, without pydantic's links and input dumps."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "value"
        message = str(error["msg"]).removeprefix("Value error, ")
        parts.append(f"{where}: {message}")
    return "; ".join(parts)
