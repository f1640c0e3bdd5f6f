"""API keys and tenancy: the `api_keys` table, each assessment's tenant and private-agent permission, and
idempotency keys unique per tenant instead of globally.

Assessments made before keys existed belong to the tenant "default" (what open mode uses) and may reach
private agents (open mode allows them). A2A tasks stored by the SDK without an owner move to the same tenant,
so they stay visible after the upgrade.

Revision ID: 0003_tenancy
Revises: 0003_agent_headers
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from api.db.tables import UTCDateTime

revision = "0003_tenancy"
down_revision = "0003_agent_headers"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False),
        sa.Column("tenant", sa.String(64), nullable=False),
        sa.Column("admin", sa.Boolean(), nullable=False),
        sa.Column("allow_private_agents", sa.Boolean(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("revoked_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_api_keys"),
        sa.UniqueConstraint("key_hash", name="uq_api_keys_key_hash"),
    )
    op.create_index("ix_api_keys_tenant", "api_keys", ["tenant"])
    with op.batch_alter_table("assessments") as batch:
        batch.add_column(sa.Column("tenant", sa.String(64), nullable=False, server_default="default"))
        batch.add_column(
            sa.Column("allow_private_agents", sa.Boolean(), nullable=False, server_default=sa.true())
        )
        batch.drop_constraint("uq_assessments_idempotency_key", type_="unique")
        batch.create_unique_constraint("uq_assessments_tenant_idempotency_key", ["tenant", "idempotency_key"])
        batch.create_index("ix_assessments_tenant", ["tenant"])
    if sa.inspect(op.get_bind()).has_table("tasks"):
        op.execute("UPDATE tasks SET owner = 'default' WHERE owner = '' OR owner IS NULL")


def downgrade() -> None:
    with op.batch_alter_table("assessments") as batch:
        batch.drop_index("ix_assessments_tenant")
        batch.drop_constraint("uq_assessments_tenant_idempotency_key", type_="unique")
        batch.create_unique_constraint("uq_assessments_idempotency_key", ["idempotency_key"])
        batch.drop_column("allow_private_agents")
        batch.drop_column("tenant")
    op.drop_index("ix_api_keys_tenant", table_name="api_keys")
    op.drop_table("api_keys")
