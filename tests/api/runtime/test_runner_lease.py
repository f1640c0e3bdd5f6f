"""Runner leases on both backends: which unfinished assessments a process may claim, renew and release.

On SQLite each process keeps its trial queue in memory, so a process resumes only what it runs, plus (when
it takes over work) what nobody runs: no runner, an expired lease, or a runner of this machine that died.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa

from api.db.repository import COMPLETED, AssessmentRepository, NewAssessment, RunnerLease
from api.db.tables import AssessmentRow
from api.runtime.runtime import worker_name


def new(lease: RunnerLease | None) -> NewAssessment:
    config = {"agent_url": "http://agent.test", "trials": 1}
    return NewAssessment(
        config=config, agent_url="http://agent.test", trials_total=1, source="cli", warnings=[], lease=lease
    )


async def _expire(repository: AssessmentRepository, assessment_id: str) -> None:
    async with repository._sessions() as session, session.begin():
        past = datetime.now(UTC) - timedelta(seconds=1)
        await session.execute(
            sa.update(AssessmentRow).where(AssessmentRow.id == assessment_id).values(lease_expires_at=past)
        )


async def test_a_process_claims_its_own_and_the_unowned_never_a_live_runners(
    repository: AssessmentRepository,
) -> None:
    me = RunnerLease("host-a-1", 30)
    other = RunnerLease("host-b-2", 30)
    mine, _ = await repository.create(new(me))
    theirs, _ = await repository.create(new(other))
    orphan, _ = await repository.create(new(None))  # e.g. made before leases existed
    finished, _ = await repository.create(new(None))
    await repository.finish(finished.id, COMPLETED)

    # `run` and `demo` take nothing over: only their own.
    assert [r.id for r in await repository.claim_unfinished(me, take_over=False)] == [mine.id]
    # A serve takes the orphan too, never the live runner's nor a finished one.
    assert [r.id for r in await repository.claim_unfinished(me, take_over=True)] == [mine.id, orphan.id]
    # The orphan is now the claimer's: the other process cannot have it while the lease holds.
    assert [r.id for r in await repository.claim_unfinished(other, take_over=True)] == [theirs.id]

    # Once the other runner's lease expired (it stopped renewing), it is taken over, and then belongs to me.
    await _expire(repository, theirs.id)
    claimed = await repository.claim_unfinished(me, take_over=True)
    assert {r.id for r in claimed} == {mine.id, orphan.id, theirs.id}
    assert await repository.claim_unfinished(other, take_over=True) == []


async def test_renewing_keeps_a_claim_and_releasing_frees_it(repository: AssessmentRepository) -> None:
    me = RunnerLease("host-a-1", 30)
    other = RunnerLease("host-b-2", 30)
    mine, _ = await repository.create(new(me))
    await _expire(repository, mine.id)
    assert await repository.renew_leases(me) == 1  # renewed before anyone took it
    assert await repository.claim_unfinished(other, take_over=True) == []
    assert await repository.unfinished_runners() == {"host-a-1"}
    assert await repository.release_leases("host-a-1") == 1
    assert [r.id for r in await repository.claim_unfinished(other, take_over=True)] == [mine.id]
    assert await repository.unfinished_runners() == {"host-b-2"}


async def test_a_runner_of_this_machine_is_gone_once_its_process_ended() -> None:
    child = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
    await child.wait()
    here = worker_name().rpartition("-")[0]
    assert RunnerLease.gone(f"{here}-{child.pid}")
    assert not RunnerLease.gone(worker_name())  # this process lives
    assert not RunnerLease.gone(f"{here}-1")  # init: alive (maybe someone else's)
    assert not RunnerLease.gone(f"another-machine-{child.pid}")  # cannot tell: wait for the lease
    assert not RunnerLease.gone("no-pid-here")


def test_lease_expiry_is_in_the_future() -> None:
    lease = RunnerLease("h-1", 5)
    assert timedelta(seconds=4) < lease.expires_at() - datetime.now(UTC) <= timedelta(seconds=5)
    assert replace(lease, seconds=0).expires_at() <= datetime.now(UTC)
