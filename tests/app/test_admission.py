"""The request gates share their slots fairly: one tenant at its limits leaves a slot and
waiting places to every other, and a freed slot goes to the tenant running the fewest."""

from __future__ import annotations

import asyncio

import pytest

from app.admission import Activity, FairAdmission, Overloaded


async def _hold(gate: FairAdmission, tenant: str, release: asyncio.Event, log: list[str]) -> None:
    async with gate.slot(tenant):
        log.append(f"{tenant} runs")
        await release.wait()


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_one_tenant_at_its_limits_leaves_a_slot_and_places_to_another() -> None:
    gate = FairAdmission(max_concurrent=4, max_pending=8, retry_after=3)

    async def scenario() -> list[str]:
        release, log = asyncio.Event(), []
        flood = [asyncio.create_task(_hold(gate, "A", release, log)) for _ in range(7)]
        await _settle()
        assert log.count("A runs") == 3 and gate.depth == 7  # 3 running, 4 waiting
        with pytest.raises(Overloaded) as refused:
            async with gate.slot("A"):
                pass
        assert refused.value.retry_after == 3
        b = asyncio.create_task(_hold(gate, "B", release, log))
        await _settle()
        assert log[-1] == "B runs"  # at once, beside A's three
        release.set()
        await asyncio.gather(*flood, b)
        return log

    log = asyncio.run(scenario())
    assert log.count("A runs") == 7 and gate.depth == 0


def test_a_freed_slot_goes_to_the_tenant_running_the_fewest() -> None:
    gate = FairAdmission(max_concurrent=2, max_pending=8, retry_after=1, reserved=0)

    async def scenario() -> list[str]:
        first, rest, log = asyncio.Event(), asyncio.Event(), []
        holders = [asyncio.create_task(_hold(gate, "A", first, log)) for _ in range(2)]
        await _settle()
        queued = [asyncio.create_task(_hold(gate, "A", rest, log)) for _ in range(3)]
        await _settle()
        b = asyncio.create_task(_hold(gate, "B", rest, log))  # arrives after A's three
        await _settle()
        assert log == ["A runs", "A runs"]
        first.set()
        await asyncio.gather(*holders)
        await _settle()
        rest.set()
        await asyncio.gather(*queued, b)
        return log

    # B ran before the A requests that had waited longer: it ran nothing
    assert asyncio.run(scenario())[2:4] == ["B runs", "A runs"]


def test_a_cancelled_waiter_gives_back_its_place() -> None:
    gate = FairAdmission(max_concurrent=1, max_pending=2, retry_after=1)

    async def scenario() -> None:
        release, log = asyncio.Event(), []
        holder = asyncio.create_task(_hold(gate, "A", release, log))
        await _settle()
        waiter = asyncio.create_task(_hold(gate, "A", release, log))
        await _settle()
        assert gate.depth == 2 and not gate.admits("A")
        waiter.cancel()
        await _settle()
        assert gate.depth == 1 and gate.admits("A")
        release.set()
        await holder
        async with gate.slot("A"):
            assert gate.depth == 1
        assert gate.depth == 0

    asyncio.run(scenario())


def test_a_lone_tenant_keeps_all_but_the_reserved_slots() -> None:
    assert FairAdmission(max_concurrent=8, max_pending=64, retry_after=1).per_tenant_running == 6
    assert FairAdmission(max_concurrent=1, max_pending=0, retry_after=1).per_tenant_running == 1


def test_while_another_tenant_is_active_each_runs_one_at_a_time() -> None:
    now = [0.0]
    board = Activity(clock=lambda: now[0])
    gate = FairAdmission(max_concurrent=4, max_pending=16, retry_after=1, activity=board)

    async def scenario() -> list[int]:
        running: list[int] = []
        releases = [asyncio.Event() for _ in range(8)]

        async def a(i: int) -> None:
            async with gate.slot("A"):
                await releases[i].wait()

        tasks = [asyncio.create_task(a(i)) for i in range(8)]
        await _settle()
        running.append(gate.running("A"))  # alone: all but the reserved slot
        async with gate.slot("B"):
            for i in range(3):  # A's running ones finish; its waiting ones start one at a time
                releases[i].set()
                await _settle()
            running.append(gate.running("A"))
        now[0] += 1.0
        releases[3].set()
        await _settle()
        running.append(gate.running("A"))  # B was active a second ago: still one
        now[0] += 2.0
        releases[4].set()
        await _settle()
        running.append(gate.running("A"))  # B idle for recent_s: A takes 3 again
        for r in releases:
            r.set()
        await asyncio.gather(*tasks)
        return running

    assert asyncio.run(scenario()) == [3, 1, 1, 3]
