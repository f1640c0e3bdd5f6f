"""Fair sharing of the trial slots: a requester whose agent hangs cannot starve another requester, nor one
of its own assessments another."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from green_agent import AssessmentConfig, Engine
from green_agent.config import TaskSelection
from green_agent.reference_agents import serve_reference_agent
from green_agent.scheduling.slots import FairSlots, slot_caps
from retail_domain import RetailData
from tests.engine.conftest import engine_for

HANGING = TaskSelection(split="base", num_tasks=40)
ORACLE = TaskSelection(task_ids=["0", "1", "2", "3"])


async def hold(
    slots: FairSlots, tenant: str, assessment: str, granted: list[str], release: asyncio.Event
) -> None:
    async with slots.slot(tenant, assessment):
        granted.append(f"{tenant}/{assessment}")
        await release.wait()


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_freed_slots_go_to_the_tenant_holding_fewest() -> None:
    slots = FairSlots(2)
    granted: list[str] = []
    first, later = asyncio.Event(), asyncio.Event()
    holders = [asyncio.create_task(hold(slots, "a", "a1", granted, first)) for _ in range(2)]
    await settle()
    waiting = [asyncio.create_task(hold(slots, "a", "a1", granted, later)) for _ in range(3)]
    waiting.append(asyncio.create_task(hold(slots, "b", "b1", granted, later)))
    await settle()
    assert granted == ["a/a1", "a/a1"] and slots.in_use == 2
    first.set()  # both of a's slots free: one goes to b (holding none), one to a
    await settle()
    assert sorted(granted[2:]) == ["a/a1", "b/b1"]
    later.set()
    await asyncio.gather(*holders, *waiting)
    assert slots.in_use == 0 and slots.held_by("a") == 0


async def test_shares_cap_a_tenant_and_an_assessment() -> None:
    assert slot_caps(64, 0.75, 0.75) == (48, 36)
    assert slot_caps(1, 0.5, 0.5) == (1, 1)  # never below one slot
    with pytest.raises(ValueError, match="shares"):
        slot_caps(8, 0, 1)
    slots = FairSlots(8, tenant_share=0.75, assessment_share=0.5)  # tenant 6, assessment 3
    granted: list[str] = []
    release = asyncio.Event()
    tasks = [asyncio.create_task(hold(slots, "a", "a1", granted, release)) for _ in range(5)]
    tasks += [asyncio.create_task(hold(slots, "a", "a2", granted, release)) for _ in range(5)]
    await settle()
    assert granted.count("a/a1") == 3 and granted.count("a/a2") == 3 and slots.held_by("a") == 6
    tasks.append(asyncio.create_task(hold(slots, "b", "b1", granted, release)))
    await settle()
    assert "b/b1" in granted  # the two slots a may not take are there for b
    release.set()
    await asyncio.gather(*tasks)
    assert slots.in_use == 0


async def test_cancelled_waiters_give_their_turn_away() -> None:
    slots = FairSlots(1)
    granted: list[str] = []
    release = asyncio.Event()
    holder = asyncio.create_task(hold(slots, "a", "a1", granted, release))
    await settle()
    gone = asyncio.create_task(hold(slots, "b", "b1", granted, release))
    stays = asyncio.create_task(hold(slots, "c", "c1", granted, release))
    await settle()
    gone.cancel()
    await settle()
    release.set()
    await asyncio.gather(holder, stays)
    assert granted == ["a/a1", "c/c1"] and slots.in_use == 0


@contextlib.asynccontextmanager
async def hanging_assessments(
    engine: Engine, url: str, tenant: str, count: int, held: int
) -> AsyncIterator[list[asyncio.Task[object]]]:
    """`count` assessments of the idle agent (turn timeout 3600 s) that hold `held` slots between them."""
    config = AssessmentConfig(agent_url=url, tasks=HANGING, concurrency=8, turn_timeout_s=3600)
    runs: list[asyncio.Task[object]] = [
        asyncio.create_task(engine.run(config, tenant=tenant, assessment_id=f"{tenant}-hang-{i}"))
        for i in range(count)
    ]
    try:
        async with asyncio.timeout(30):
            while engine.slots.held_by(tenant) < held:  # noqa: ASYNC110 - the allocator has no event
                await asyncio.sleep(0.02)
        yield runs
    finally:
        for run in runs:
            run.cancel()
        for run in runs:
            with contextlib.suppress(asyncio.CancelledError):
                await run


async def test_hanging_agent_of_one_tenant_does_not_delay_another(data: RetailData) -> None:
    async with (
        serve_reference_agent("idle", data=data) as idle,
        serve_reference_agent("oracle", data=data) as oracle,
        engine_for(data, max_concurrent_trials=8) as engine,  # tenant 6 slots, assessment 4 (shares 0.75)
        hanging_assessments(engine, idle, "tenant-a", count=3, held=6) as runs,
    ):
        report = await asyncio.wait_for(
            engine.run(AssessmentConfig(agent_url=oracle, tasks=ORACLE, concurrency=4), tenant="tenant-b"), 60
        )
        assert report.termination_counts == {"user_stop": 4} and report.avg_reward == 1.0
        assert engine.slots.held_by("tenant-a") == 6 and not any(run.done() for run in runs)


async def test_hanging_assessment_does_not_delay_another_of_the_same_tenant(data: RetailData) -> None:
    async with (
        serve_reference_agent("idle", data=data) as idle,
        serve_reference_agent("oracle", data=data) as oracle,
        engine_for(data, max_concurrent_trials=8) as engine,
        hanging_assessments(engine, idle, "default", count=1, held=4),
    ):
        config = AssessmentConfig(agent_url=oracle, tasks=ORACLE, concurrency=4)
        report = await asyncio.wait_for(engine.run(config, assessment_id="oracle-run"), 60)
        assert report.termination_counts == {"user_stop": 4} and report.avg_reward == 1.0


async def test_without_shares_the_hanging_tenant_would_starve_the_other(data: RetailData) -> None:
    """The contrast that shows the fairness test can fail: shares of 1 let tenant A take every slot."""
    async with (
        serve_reference_agent("idle", data=data) as idle,
        serve_reference_agent("oracle", data=data) as oracle,
        engine_for(data, max_concurrent_trials=8, tenant_slot_share=1.0, assessment_slot_share=1.0) as engine,
        hanging_assessments(engine, idle, "tenant-a", count=1, held=8),
    ):
        starved = engine.run(
            AssessmentConfig(agent_url=oracle, tasks=ORACLE, concurrency=4), tenant="tenant-b"
        )
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(starved, 2)
