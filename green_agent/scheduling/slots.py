"""Fair sharing of the process's trial slots between tenants, and between the assessments of a tenant.

A trial cannot be pre-empted (a white agent may take up to its turn timeout to answer), so fairness cannot
come from taking slots back; it comes from two rules:

* **Shares.** A tenant never holds more than `tenant_share` of the slots, and an assessment never more than
  `assessment_share` of its tenant's. What is left is always there for the others: a requester whose agent
  hangs on every trial keeps its share busy for as long as it hangs, and another requester still runs.
* **Grant order.** A freed slot goes to the waiting tenant holding the fewest slots (ties: the one served
  longest ago), and within it to its waiting assessment holding the fewest. Busy tenants and assessments
  therefore converge to equal shares, and a newcomer is served at the first slot that frees.

Per process: with trials in several worker processes each runs its own allocator over its own slots.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field


@dataclass
class _Assessment:
    held: int = 0
    last_grant: int = -1
    waiters: deque[asyncio.Future[None]] = field(default_factory=deque)

    def has_live_waiter(self) -> bool:
        """Drops cancelled waiters from the front; True when a live one remains."""
        while self.waiters and self.waiters[0].cancelled():
            self.waiters.popleft()
        return bool(self.waiters)


@dataclass
class _Tenant:
    held: int = 0
    last_grant: int = -1
    assessments: dict[str, _Assessment] = field(default_factory=dict)

    def next_assessment(self, cap: int) -> _Assessment | None:
        """The waiting assessment below `cap` holding the fewest slots (ties: served longest ago)."""
        waiting = [a for a in self.assessments.values() if a.held < cap and a.has_live_waiter()]
        return min(waiting, key=lambda a: (a.held, a.last_grant), default=None)


def slot_caps(capacity: int, tenant_share: float, assessment_share: float) -> tuple[int, int]:
    """Most slots one tenant, and one assessment, may hold (at least one each)."""
    if capacity < 1 or not 0 < tenant_share <= 1 or not 0 < assessment_share <= 1:
        raise ValueError("capacity must be at least 1 and the shares in (0, 1]")
    tenant_cap = max(1, math.floor(capacity * tenant_share))
    return tenant_cap, max(1, math.floor(tenant_cap * assessment_share))


class FairSlots:
    def __init__(self, capacity: int, *, tenant_share: float = 1.0, assessment_share: float = 1.0) -> None:
        self.capacity = capacity
        self.tenant_cap, self.assessment_cap = slot_caps(capacity, tenant_share, assessment_share)
        self._in_use = 0
        self._tenants: dict[str, _Tenant] = {}
        self._grants = itertools.count()

    @property
    def in_use(self) -> int:
        return self._in_use

    def held_by(self, tenant: str) -> int:
        entry = self._tenants.get(tenant)
        return entry.held if entry else 0

    @asynccontextmanager
    async def slot(self, tenant: str, assessment: str) -> AsyncIterator[None]:
        """Hold one slot for the duration of the block; waits for a fair turn."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = self._tenants.setdefault(tenant, _Tenant())
        entry.assessments.setdefault(assessment, _Assessment()).waiters.append(waiter)
        self._dispatch()
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():  # granted, then cancelled before it could run
                self._release(tenant, assessment)
            else:
                waiter.cancel()  # the dispatcher skips it
                self._forget_if_idle(tenant, assessment)
            raise
        try:
            yield
        finally:
            self._release(tenant, assessment)

    def _release(self, tenant: str, assessment: str) -> None:
        entry = self._tenants[tenant]
        self._in_use -= 1
        entry.held -= 1
        entry.assessments[assessment].held -= 1
        self._forget_if_idle(tenant, assessment)
        self._dispatch()

    def _dispatch(self) -> None:
        while self._in_use < self.capacity:
            chosen = self._next()
            if chosen is None:
                return
            entry, queue = chosen
            stamp = next(self._grants)
            entry.held += 1
            queue.held += 1
            entry.last_grant = queue.last_grant = stamp
            self._in_use += 1
            queue.waiters.popleft().set_result(None)

    def _next(self) -> tuple[_Tenant, _Assessment] | None:
        """The tenant below its cap holding the fewest slots (ties: served longest ago) that has a waiting
        assessment below its cap; and that assessment."""
        candidates = sorted(
            (entry for entry in self._tenants.values() if entry.held < self.tenant_cap),
            key=lambda entry: (entry.held, entry.last_grant),
        )
        for entry in candidates:
            queue = entry.next_assessment(self.assessment_cap)
            if queue is not None:
                return entry, queue
        return None

    def _forget_if_idle(self, tenant: str, assessment: str) -> None:
        entry = self._tenants.get(tenant)
        if entry is None:
            return
        queue = entry.assessments.get(assessment)
        if queue is not None and queue.held == 0 and not queue.has_live_waiter():
            del entry.assessments[assessment]
        if entry.held == 0 and not entry.assessments:
            del self._tenants[tenant]
