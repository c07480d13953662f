"""Sessions without sockets: how an :class:`~openenv_gym.server.session.EnvCaller`
runs env calls."""

from __future__ import annotations

import time


def test_env_caller_promotes_fast_calls_and_demotes_slow_ones():
    import asyncio

    from openenv_gym.server.session import EnvCaller

    async def scenario():
        caller = EnvCaller("auto", inline_threshold=0.01, promote_after=4)
        for _ in range(4):
            await caller(lambda: None)
        assert caller.inline
        await caller(time.sleep, 0.02)  # one slow call inline: back to the thread
        assert not caller.inline and caller.promote_after == 8
        for _ in range(7):
            await caller(lambda: None)
        assert not caller.inline
        await caller(lambda: None)
        assert caller.inline  # fast again: inline again, after twice as many calls

        def compute(seconds: float) -> None:
            end = time.perf_counter() + seconds
            while time.perf_counter() < end:
                pass

        await caller(compute, 0.03)  # slow by computing, not by blocking: demoted too
        assert not caller.inline and caller.promote_after == 16
        caller.shutdown()
        strict = EnvCaller("thread")
        for _ in range(50):
            await strict(lambda: None)
        assert not strict.inline
        strict.shutdown()

    asyncio.run(scenario())


def test_env_caller_counts_the_time_its_calls_run():
    import asyncio

    from openenv_gym.server.session import EnvCaller

    async def scenario() -> tuple[float, float]:
        measured = []
        for execution in ("thread", "inline"):
            caller = EnvCaller(execution)
            await caller(time.sleep, 0.02)
            await caller(time.sleep, 0.01)
            measured.append(caller.seconds)
            caller.shutdown()
        return tuple(measured)

    for seconds in asyncio.run(scenario()):
        assert 0.03 <= seconds < 0.1
