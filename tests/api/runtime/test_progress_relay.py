"""The progress relay on the local PostgreSQL, two relays standing for two processes: turn events cross only
while the other process has a subscriber (no NOTIFY per turn otherwise), trial events always do, and a relay
never reads its own events back."""

from __future__ import annotations

import asyncio

import psycopg

from api.runtime.events import CHANNEL, PROGRESS_ONLY, STATUS_ONLY, EventRelay, ProgressHub, TrialDone
from api.runtime.queue import QueueSettings, TrialQueue, psycopg_conninfo
from green_agent.core.models import TranscriptMessage, TurnTaken


def turn(index: int) -> TurnTaken:
    return TurnTaken(task_id="0", trial=0, message=TranscriptMessage(index=index, role="user", content="hi"))


async def test_turns_cross_processes_only_while_followed_there(pg_database: str) -> None:
    queues = [TrialQueue(pg_database, QueueSettings()) for _ in range(2)]
    for queue in queues:
        await queue.open()
    relays = [EventRelay(ProgressHub(), queue.connector) for queue in queues]
    running = [asyncio.create_task(relay.run()) for relay in relays]
    seen: list[str] = []
    async with await psycopg.AsyncConnection.connect(psycopg_conninfo(pg_database), autocommit=True) as spy:
        await spy.execute(f"LISTEN {CHANNEL}")

        async def drain() -> None:
            async for note in spy.notifies(timeout=0.5):
                seen.append(note.payload.split(" ")[1])

        try:
            await asyncio.sleep(0.5)
            await drain()
            seen.clear()
            publisher, follower = relays
            publisher.publish("a1", turn(0))  # nobody elsewhere follows a1: no notification
            await drain()
            assert "e" not in seen
            async with follower.hub.subscribe("a1") as subscription:
                await asyncio.sleep(0.5)  # the follower's announcement reaches the publisher
                publisher.publish("a1", turn(1))
                got = await asyncio.wait_for(subscription.queue.get(), 5)
                assert isinstance(got, TurnTaken) and got.message.index == 1
                done = TrialDone(
                    task_id="0",
                    trial=0,
                    termination_reason="user_stop",
                    reward=1.0,
                    is_successful=True,
                    trials_done=1,
                    trials_total=1,
                )
                publisher.publish("a1", done)
                assert await asyncio.wait_for(subscription.queue.get(), 5) == done
                assert subscription.queue.empty()  # each event once: its own hub did not get it twice
            await asyncio.sleep(0.5)  # the follower says it stopped following
            await drain()
            assert seen == ["i", "e", "e", "x"]  # followed, the turn and the trial's end, unfollowed
            seen.clear()
            publisher.publish("a1", turn(2))
            await drain()
            assert "e" not in seen
            # Subscriptions that take only status or progress (a run's wait, the A2A task relay, /ui/live) do
            # not follow turns: no announcement, and the turns stay in their process.
            async with (
                follower.hub.subscribe("a1", accept=STATUS_ONLY),
                follower.hub.subscribe("a1", accept=PROGRESS_ONLY) as progress,
            ):
                await asyncio.sleep(0.5)
                publisher.publish("a1", turn(3))
                publisher.publish("a1", done)
                assert await asyncio.wait_for(progress.queue.get(), 5) == done
                await drain()
                assert seen == ["e"]  # the trial's end only
        finally:
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
            for queue in queues:
                await queue.close()
