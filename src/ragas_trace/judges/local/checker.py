"""The check stage's one interface: is a statement supported by its evidence windows?

Every checker, the built-in one or a model a user brings, takes the statements of one
answer with the windows chosen for each, and returns one ``Check`` per statement: the
probability that the statement is supported, and which window gave it. The stages
before (statements, windows) and after (combine, calibrate) do not change with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class Window:
    """A stretch of the passages read against one statement."""

    text: str


@dataclass(frozen=True, slots=True)
class Statement:
    """One standalone claim of the answer."""

    text: str


@dataclass(frozen=True, slots=True)
class Check:
    """What a checker found for one statement."""

    probability: float  # that the statement is supported, 0..1
    window: int  # index of the window that gave it, -1 when there was none
    evidence: str  # the text behind it, for the reason ("" when none)


@runtime_checkable
class Checker(Protocol):
    """Scores statements against their windows. Called on the judge's worker threads;
    must be safe to call from several at once."""

    @property
    def name(self) -> str: ...

    def check(self, statements: Sequence[Statement],
              windows: Sequence[Sequence[Window]]) -> list[Check]:
        """One ``Check`` per statement; ``windows[i]`` are statement ``i``'s windows."""
        ...
