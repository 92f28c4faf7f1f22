"""The check stage's one interface: is a statement supported by its evidence windows?

Every checker, the built-in one or a model a user brings, takes the statements of one
answer with the windows chosen for each, and returns one ``Check`` per statement: the
probability that the statement is supported, and which window gave it. The stages
before (statements, windows) and after (combine, calibrate) do not change with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class Window:
    """A stretch of the passages read against one statement: consecutive sentences of
    the record's context (``sentences``: their indices there; ``context``: the record's
    prepared passages, ``evidence.Context``, for a checker that reads more than text)."""

    text: str
    sentences: tuple[int, ...] = ()
    context: Any = None


@dataclass(frozen=True, slots=True)
class Statement:
    """One standalone claim of the answer, with what later stages need to read it."""

    text: str  # what is checked: a sentence of the answer, or "question: answer"
    # A bare answer ("1931") to ``question``: checked in the question's frame (``text``
    # is "question: answer"); ``answer`` is the bare answer.
    short: bool = False
    question: str = ""
    answer: str = ""
    # The text whose embedding stands for the statement when not ``text``: a sentence
    # that opens on a pronoun ("It lasts two years.") read with the question.
    read_as: str = ""


@dataclass(frozen=True, slots=True)
class Check:
    """What a checker found for one statement."""

    probability: float  # that the statement is supported, 0..1
    window: int  # index of the window that gave it, -1 when there was none
    evidence: str  # the text behind it, for the reason ("" when none)
    # What the built-in checker measured, which its fitted combination reads
    # (``combine``); empty for a brought checker.
    features: Mapping[str, float] = field(default_factory=dict)


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
