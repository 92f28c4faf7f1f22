"""Which retrieved passages reached a model's input, and how much of each: the
passages a RAG answer was generated from, whatever code (a reranker in a lambda, a
graph node, a token budget, a truncation) stood between the retrieval and the prompt.

A passage is in the prompt when its text is, compared with runs of whitespace (and
the ``\\n`` / ``\\t`` escapes of JSON-encoded text) as one space; when only a part of
it is, the part shown is its longest prefix the prompt holds, if that prefix is at
least ``MIN_PART`` characters long (a shorter one says nothing: passages often start
alike), less a word it shows only the start of. Passages are found in the order the
prompt shows them.

Bounded: at most ``MAX_PASSAGES`` passages are looked for, and a passage not in the
prompt verbatim is looked for in its first ``MAX_PROMPT_CHARS`` characters only. The
common case (every passage whole and verbatim in the prompt) costs one substring
search per passage; whitespace is normalised only when a passage is not found
verbatim, and a prefix is searched for (a binary search over its length, about 17
substring searches for a 100,000-character passage) only for a passage whose first
``MIN_PART`` characters are in the prompt and the rest not."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ragas_trace import semconv as sc

MIN_PART = 48
# A completion shorter than this ("yes", a grade) found in a prompt may be any words.
MIN_COMPLETION = 16
MAX_PROMPT_CHARS = 1_000_000
MAX_PASSAGES = 256
_SPACE = re.compile(r"(?:\s|\\[nrt])+")
# The completion an LLM span records.
COMPLETION = sc.message_key("output", 0, sc.MESSAGE_CONTENT)


def recorded_prompt(attrs: Mapping[str, Any], limit: int) -> str:
    """The text of the input messages an LLM span's attributes record (``limit``: the
    most its collector records), one per line."""
    texts: list[str] = []
    for role, content in _prompt_keys(limit):
        if role not in attrs:
            break
        if type(text := attrs.get(content)) is str:
            texts.append(text)
    return "\n".join(texts)


@functools.cache
def _prompt_keys(limit: int) -> tuple[tuple[str, str], ...]:
    """(role key, content key) of each input message, built once per limit."""
    return tuple((sc.message_key("input", i, sc.MESSAGE_ROLE),
                  sc.message_key("input", i, sc.MESSAGE_CONTENT)) for i in range(limit))


def normalise(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def shown(prompt: str, passages: Sequence[str]) -> list[tuple[int, str]]:
    """``(index in passages, the part of it the prompt shows)`` for each passage the
    prompt shows (whole: the passage itself), in prompt order; [] when none."""
    passages = passages[:MAX_PASSAGES]
    found: list[tuple[int, int, str]] = []
    for i, text in enumerate(passages):
        at = prompt.find(text.strip()) if text.strip() else -1
        if at < 0:
            break
        found.append((at, i, text))
    else:
        found.sort()
        return [(i, text) for _, i, text in found]
    return _shown_normalised(normalise(prompt[:MAX_PROMPT_CHARS]), passages)


def shown_through(prompt: str, others: Sequence[tuple[str, Callable[[], str]]],
                  passages: Sequence[str]) -> list[tuple[int, str]]:
    """``shown`` for the answering call's ``prompt``, and, when that does not show every
    passage whole, through the other model calls before it (``(completion, its
    prompt)``) whose completion the prompt holds (a subagent's report, a map step's
    summary, a refine step's draft: the passages those calls were given), transitively."""
    found = shown(prompt, passages)
    if len(found) == len(passages) and all(part is passages[i] for i, part in found):
        return found
    prompts = [prompt]
    left = [(c.strip(), p) for c, p in others if len(c.strip()) >= MIN_COMPLETION]
    added = True
    while added and left:
        added = False
        for item in list(left):
            if any(item[0] in p for p in prompts):
                prompts.append(item[1]())
                left.remove(item)
                added = True
    return found if len(prompts) == 1 else shown("\n".join(prompts), passages)


def left_out(groups: Sequence[tuple[bool, Sequence[str]]], passages: Sequence[str],
             found: Sequence[tuple[int, str]]) -> tuple[list[int], bool]:
    """Given a request's passage groups before the answering call, in start order
    (``(is a retrieval, its texts)``; else a reranker's output, which replaces the
    groups it shares a passage with), the indexes of those none of whose passages
    were ``found`` in the prompt, and whether the rest would give other passages than
    those found whole (fewer shown, or a part of one): a span must then say which."""
    whole = {passages[i] for i, part in found if part is passages[i]}
    reached = whole | {passages[i] for i, part in found if part is not passages[i]}
    dropped: list[int] = []
    kept: list[set[str]] = []
    for index, (retrieval, texts) in enumerate(groups):
        own = set(texts)
        if reached.isdisjoint(own):
            dropped.append(index)
        elif retrieval:
            kept.append(own)
        else:
            kept = [group for group in kept if group.isdisjoint(own)]
            kept.append(own)
    return dropped, len(whole) < len(found) or whole != set().union(*kept)


def _shown_normalised(prompt: str, passages: Sequence[str]) -> list[tuple[int, str]]:
    found: list[tuple[int, int, str]] = []
    for i, text in enumerate(passages):
        flat = normalise(text)
        if not flat:
            continue
        at = prompt.find(flat)
        if at >= 0:
            found.append((at, i, text))
            continue
        if len(flat) <= MIN_PART:
            continue
        at = prompt.find(flat[:MIN_PART])
        if at < 0:
            continue
        # Prefixes in the prompt are closed downwards: search the longest one.
        low, high = MIN_PART, len(flat) - 1
        while low < high:
            mid = (low + high + 1) // 2
            if flat[:mid] in prompt:
                low = mid
            else:
                high = mid - 1
        if flat[low] != " ":
            # Cut inside a word: its shown letters may be the next passage's first ones.
            cut = flat.rfind(" ", 0, low)
            low = cut if cut >= MIN_PART else low
        found.append((prompt.find(flat[:low]), i, _original_prefix(text.strip(), low)))
    found.sort()
    return [(i, part) for _, i, part in found]


def _original_prefix(text: str, length: int) -> str:
    """The prefix of ``text`` (stripped) whose normalised form is ``length`` long."""
    count = 0  # normalised characters up to ``last``
    last = 0
    for match in _SPACE.finditer(text):
        run = match.start() - last
        if count + run >= length:
            return text[:last + length - count]
        count += run + 1
        if count >= length:
            return text[:match.start()]
        last = match.end()
    return text[:last + length - count]
