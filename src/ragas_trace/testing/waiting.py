"""Calls a test must see return: run one in a thread and fail, not hang, if it does
not (a flush or shutdown that ignores its deadline would otherwise stall the suite)."""

from __future__ import annotations

import threading
from collections.abc import Callable


def finishes(call: Callable[[], object], within_s: float = 60.0) -> list[object]:
    """``[call()]`` once it returned within ``within_s``; raises ``AssertionError``
    when it did not."""
    result: list[object] = []
    thread = threading.Thread(target=lambda: result.append(call()), daemon=True)
    thread.start()
    thread.join(within_s)
    if thread.is_alive():
        raise AssertionError("the call did not return")
    return result
