"""API keys: created, listed, revoked and looked up here; only the SHA-256 of each secret is stored.

A key is `ga_` followed by 43 URL-safe characters from `secrets.token_urlsafe(32)` (256 random bits).
Because the secret is a uniformly random token and not a password a person chose, one SHA-256 is enough to
make a stolen table useless (nobody can search 2^256 secrets), and it lets a request's key be found with an
indexed equality lookup; a slow password hash (bcrypt, argon2) would only add latency to every request.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import exists, select, update
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from api.db.tables import ApiKeyRow

KEY_PREFIX = "ga_"
TENANT_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
# Longer than any key this service issues; a longer Authorization header is refused without hashing it.
MAX_KEY_CHARS = 256


@dataclass(frozen=True)
class ApiKey:
    """One key as listed: never the secret."""

    id: str
    tenant: str
    admin: bool
    allow_private_agents: bool
    created_at: datetime
    revoked_at: datetime | None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None


def hash_key(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def check_tenant_name(tenant: str) -> str:
    if not TENANT_PATTERN.fullmatch(tenant):
        raise ValueError(
            f"tenant name {tenant[:80]!r} is not valid: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return tenant


def _key(row: ApiKeyRow) -> ApiKey:
    return ApiKey(
        id=row.id,
        tenant=row.tenant,
        admin=row.admin,
        allow_private_agents=row.allow_private_agents,
        created_at=row.created_at,
        revoked_at=row.revoked_at,
    )


class KeyRepository:
    """The `api_keys` table."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._sessions = async_sessionmaker(engine, expire_on_commit=False)

    async def create(self, tenant: str, *, admin: bool, allow_private_agents: bool) -> tuple[ApiKey, str]:
        """Store a new key; return it and its secret (shown once, never stored)."""
        secret = KEY_PREFIX + secrets.token_urlsafe(32)
        row = ApiKeyRow(
            id=secrets.token_hex(8),
            key_hash=hash_key(secret),
            tenant=check_tenant_name(tenant),
            admin=admin,
            allow_private_agents=allow_private_agents,
            created_at=datetime.now(UTC),
            revoked_at=None,
        )
        async with self._sessions() as session, session.begin():
            session.add(row)
        return _key(row), secret

    async def list(self) -> list[ApiKey]:
        async with self._sessions() as session:
            rows = (await session.execute(select(ApiKeyRow).order_by(ApiKeyRow.created_at))).scalars()
            return [_key(r) for r in rows]

    async def revoke(self, key_id: str) -> ApiKey | None:
        """Revoke a key (kept, so `keys list` shows it and the service stays closed); None if unknown."""
        async with self._sessions() as session, session.begin():
            await session.execute(
                update(ApiKeyRow)
                .where(ApiKeyRow.id == key_id, ApiKeyRow.revoked_at.is_(None))
                .values(revoked_at=datetime.now(UTC))
            )
            row = await session.get(ApiKeyRow, key_id)
            return _key(row) if row is not None else None

    async def find(self, secret: str) -> ApiKey | None:
        """The active key with this secret, or None (unknown or revoked)."""
        if len(secret) > MAX_KEY_CHARS:
            return None
        async with self._sessions() as session:
            row = (
                await session.execute(select(ApiKeyRow).where(ApiKeyRow.key_hash == hash_key(secret)))
            ).scalar_one_or_none()
            if row is None or row.revoked_at is not None:
                return None
            return _key(row)

    async def is_active(self, key_id: str) -> bool:
        """Whether the key exists and is not revoked (long-lived streams check their key again with this)."""
        async with self._sessions() as session:
            row = await session.get(ApiKeyRow, key_id)
            return row is not None and row.revoked_at is None

    async def any_exist(self) -> bool:
        """Whether any key was ever created (revoked ones count: revoking the last key does not reopen
        the service)."""
        async with self._sessions() as session:
            return bool((await session.execute(select(exists().select_from(ApiKeyRow)))).scalar())
