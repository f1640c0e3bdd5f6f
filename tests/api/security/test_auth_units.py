"""Authentication without a server: how headers map to principals, and a key store that cannot be read."""

from __future__ import annotations

import pytest

from api.db.engine import create_engine
from api.db.keys import MAX_KEY_CHARS, KeyRepository
from api.db.migrate import upgrade
from api.security.auth import OPEN_PRINCIPAL, KeysUnavailable, Unauthenticated, authenticate, bearer_token
from tests.api.servers import free_port


def test_bearer_token_parsing() -> None:
    assert bearer_token(None) is None
    assert bearer_token("Bearer ga_x") == "ga_x"
    assert bearer_token("bearer   ga_x  ") == "ga_x"
    for header in ("Basic ga_x", "Bearer", "Bearer   ", "ga_x"):
        with pytest.raises(Unauthenticated):
            bearer_token(header)


async def test_open_mode_until_the_first_key_and_closed_after_the_last_is_revoked(database_url: str) -> None:
    engine = create_engine(database_url)
    try:
        await upgrade(engine)
        keys = KeyRepository(engine)
        for header in (None, "Bearer ga_unknown", "Basic x", ""):  # open mode checks no header
            assert await authenticate(keys, header) == OPEN_PRINCIPAL
        key, secret = await keys.create("t", admin=False, allow_private_agents=False)
        principal = await authenticate(keys, f"Bearer {secret}")
        assert (principal.tenant, principal.admin, principal.allow_private_agents) == ("t", False, False)
        assert principal.tenant_filter == "t" and OPEN_PRINCIPAL.tenant_filter is None
        with pytest.raises(Unauthenticated, match="requires an API key"):
            await authenticate(keys, None)
        with pytest.raises(Unauthenticated, match="not valid"):
            await authenticate(keys, "Bearer " + "x" * (MAX_KEY_CHARS + 1))
        await keys.revoke(key.id)
        with pytest.raises(Unauthenticated, match="not valid"):
            await authenticate(keys, f"Bearer {secret}")
        with pytest.raises(Unauthenticated):  # revoking the last key does not reopen the service
            await authenticate(keys, None)
    finally:
        await engine.dispose()


async def test_an_unreachable_key_store_is_503_never_open_mode() -> None:
    engine = create_engine(f"postgresql+asyncpg://postgres@127.0.0.1:{free_port()}/nothing")
    try:
        with pytest.raises(KeysUnavailable):
            await authenticate(KeyRepository(engine), None)
    finally:
        await engine.dispose()
