"""The job queue: procrastinate's schema, on PostgreSQL only.

Trials of an assessment are jobs of procrastinate (a PostgreSQL task queue), so any number of worker
processes can share the work. Its tables, types and functions are created here, from the schema file of the
pinned procrastinate release, so that one `green-agent db upgrade` (or any start) brings the whole database
up to date. SQLite keeps its queue in memory (one process), so there is nothing to create there.

Upgrading procrastinate means a new revision that applies the release's own migration files
(procrastinate/sql/migrations/) from the version pinned here to the new one.

Revision ID: i10_job_queue
Revises: 0003_tenancy
Create Date: 2026-11-30
"""

from __future__ import annotations

import procrastinate
from alembic import op
from procrastinate.schema import SchemaManager
from sqlalchemy.util import await_only

revision = "i10_job_queue"
down_revision = "0003_tenancy"
branch_labels = None
depends_on = None

PROCRASTINATE_VERSION = "3.10.0"

_DROP = r"""
DROP TABLE IF EXISTS procrastinate_periodic_defers, procrastinate_events, procrastinate_jobs,
    procrastinate_workers CASCADE;
DROP TYPE IF EXISTS procrastinate_job_status, procrastinate_job_event_type,
    procrastinate_job_to_defer_v1 CASCADE;
DO $$
DECLARE f record;
BEGIN
    FOR f IN SELECT oid::regprocedure AS signature FROM pg_proc WHERE proname LIKE 'procrastinate\_%' LOOP
        EXECUTE 'DROP FUNCTION IF EXISTS ' || f.signature || ' CASCADE';
    END LOOP;
END $$;
"""


def _execute_script(script: str) -> None:
    # The schema is a script of many statements with function bodies; asyncpg runs such a script (no
    # parameters) in one simple-protocol call, inside the migration's transaction.
    driver_connection = op.get_bind().connection.driver_connection
    assert driver_connection is not None
    await_only(driver_connection.execute(script))


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    if procrastinate.__version__ != PROCRASTINATE_VERSION:
        raise RuntimeError(
            f"this revision creates procrastinate {PROCRASTINATE_VERSION}'s schema but "
            f"{procrastinate.__version__} is installed; install the pinned version (pyproject.toml)"
        )
    _execute_script(SchemaManager.get_schema())


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    # Functions and triggers go with the tables and types they use (CASCADE).
    _execute_script(_DROP)
