"""``_app_names``: collectors announce app names, pipelines listen, weakly."""

from __future__ import annotations

import gc
from typing import Any

from ragas_trace import _app_names
from ragas_trace._internal_errors import internal_error_counts, reset_internal_error_counts


class Listener:
    def __init__(self, fail: bool = False) -> None:
        self.heard: list[tuple[str, Any]] = []
        self.fail = fail

    def hear(self, app_name: str, provider: Any) -> None:
        if self.fail:
            raise RuntimeError("listener failure")
        self.heard.append((app_name, provider))


def test_announced_names_reach_listeners_and_a_failing_one_is_recorded(monkeypatch) -> None:
    monkeypatch.setattr(_app_names, "_listeners", [])
    monkeypatch.setenv("RAGAS_TRACE_RAISE_INTERNAL_ERRORS", "0")
    reset_internal_error_counts()
    good, bad = Listener(), Listener(fail=True)
    _app_names.listen(bad.hear)
    _app_names.listen(good.hear)
    provider = object()
    _app_names.announce("shop", provider)
    _app_names.announce(None)
    _app_names.announce("")
    assert good.heard == [("shop", provider)]
    assert internal_error_counts() == {"app_names.announce": 1}
    reset_internal_error_counts()


def test_listeners_are_held_weakly(monkeypatch) -> None:
    monkeypatch.setattr(_app_names, "_listeners", [])
    listener = Listener()
    _app_names.listen(listener.hear)
    del listener
    gc.collect()
    _app_names.announce("shop")  # no listener left, nothing raised
    _app_names.listen(Listener().hear)
    assert len(_app_names._listeners) <= 1
