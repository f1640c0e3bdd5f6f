"""A concurrency cap per key (the white agent's address), holding state only for keys in use.

A requester picks the agent URLs, so a semaphore kept per agent for the life of the process would grow with
every distinct URL ever assessed. Here an entry exists while some trial holds or waits for that key's cap and
is dropped with the last one: the memory is bounded by the trials in flight, not by the URLs seen.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field


@dataclass
class _Held:
    semaphore: asyncio.Semaphore
    users: int = field(default=0)


class KeyedLimits:
    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("the limit per key must be at least 1")
        self.limit = limit
        self._held: dict[str, _Held] = {}

    def __len__(self) -> int:
        """Keys with a trial holding or waiting for their cap."""
        return len(self._held)

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        """Hold one of `key`'s `limit` places for the duration of the block (waits while they are taken)."""
        held = self._held.get(key)
        if held is None:
            held = self._held[key] = _Held(asyncio.Semaphore(self.limit))
        held.users += 1
        try:
            async with held.semaphore:
                yield
        finally:
            held.users -= 1
            if held.users == 0:
                del self._held[key]
