"""Waiting on a push query's changelog: its latest row per key, until a check holds."""

import time


def settle(handle, key, check, timeout=90):
    """Wait until the latest row per `key` satisfies `check`; stop the query; return that state."""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            state = {r[key]: r for r in handle.rows().to_dict("records")}
            if check(state):
                return state
            assert handle.failure is None, handle.failure
            time.sleep(0.3)
        raise AssertionError(f"never settled: {handle.rows().to_dict('records')}")
    finally:
        handle.stop()


def shown(handle, check, timeout=90):
    """Wait until some row of the running push query satisfies `check` (the query goes on)."""
    deadline = time.monotonic() + timeout
    while not any(check(r) for r in handle.rows().to_dict("records")):
        assert time.monotonic() < deadline and handle.failure is None, handle.rows()
        time.sleep(0.3)
