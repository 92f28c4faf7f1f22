"""Passages that arrive without a retriever run: the Documents a tool returns as its
artifact (``@tool(response_format="content_and_artifact")``, ``ToolMessage.artifact``)
or as its output, and the Documents a graph node or chain step writes into its output
(LangGraph state updates such as ``{"context": [Document, ...]}``, also inside
``Command(update=...)``).

Apps usually get these from ``vector_store.similarity_search``, which makes no
callback, so they are the only trace of the retrieval. The same Documents often pass
by more than once in one request (a retriever run inside the tool whose artifact
they are, a later node handing the state on): only passages not yet seen in the
request are recorded (``unseen``).

A step whose input holds Documents and whose output a strict subset of them (a
``RunnableLambda`` that cuts the list, a graph node that grades and drops passages,
an ``EmbeddingsFilter`` called in a step) chose what reaches the prompt: ``kept``
finds those lists."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from langchain_core.documents import Document

# How deep a node's output is searched: a list of Commands, each with an update dict.
_MAX_DEPTH = 2


def _documents(value: Any) -> list[Document] | None:
    if type(value) is list and value and isinstance(value[0], Document):
        docs = [d for d in value if isinstance(d, Document)]
        return docs
    return None


def in_tool_output(output: Any) -> list[Document] | None:
    """The Documents of a tool's ``ToolMessage.artifact``, or the tool's output itself
    when it is Documents (a tool invoked without a tool call returns what it made)."""
    return _documents(getattr(output, "artifact", output))


def in_output(outputs: Any, depth: int = 0) -> Iterator[tuple[str, list[Document]]]:
    """``(state key, documents)`` for each list of Documents a step returned."""
    if isinstance(outputs, dict):  # a stream's are ``AddableDict``s
        for key, value in outputs.items():
            docs = _documents(value)
            if docs is not None:
                yield str(key), docs
        return
    docs = _documents(outputs)
    if docs is not None:
        yield "documents", docs
        return
    if depth >= _MAX_DEPTH:
        return
    if type(outputs).__name__ == "Command":  # langgraph.types.Command(update=...)
        update = getattr(outputs, "update", None)
        if type(update) is dict:
            yield from in_output(update, depth + 1)
    elif type(outputs) is list and outputs and not isinstance(outputs[0], str | Document):
        for item in outputs:
            yield from in_output(item, depth + 1)


class StepInput:
    """The passages a chain step was given: the texts under each state key that held
    Documents (``"documents"`` for a bare list), and all of them."""

    __slots__ = ("by_key", "texts")

    def __init__(self, by_key: dict[str, frozenset[str]]) -> None:
        self.by_key = by_key
        self.texts = frozenset().union(*by_key.values())


# The input of a step started by a stream: the real one arrives with its end event,
# and is read then.
STREAMED = StepInput({})


def step_input(inputs: Any) -> StepInput | None:
    """The Documents lists of a step's input (a bare list, or values of a dict such as
    a graph's state), ``STREAMED`` for a stream's placeholder, or None: most steps get
    none. Runs at every step's start, so anything else returns after one type check."""
    kind = type(inputs)
    if kind is list:
        docs = _documents(inputs)
        if docs is None:
            return None
        return StepInput({"documents": frozenset(d.page_content for d in docs)})
    if not isinstance(inputs, dict):  # a stream's are ``AddableDict``s
        return None
    by_key: dict[str, frozenset[str]] = {}
    for key, value in inputs.items():
        if type(value) is list and value and isinstance(value[0], Document):
            by_key[str(key)] = frozenset(d.page_content for d in value
                                         if isinstance(d, Document))
    if by_key:
        return StepInput(by_key)
    # A stream starts its steps with ``{"input": ""}``: their input comes with their end.
    return STREAMED if len(inputs) == 1 and inputs.get("input") == "" else None


def kept(outputs: Any, given: StepInput) -> Iterator[list[Document]]:
    """The Documents lists of a step's output that are a strict subset (by text) of
    those it was given under the same key (else of all it was given): a filter,
    cut-off or reranker that dropped some. A list the step emptied, under a key that
    held its input passages, counts (it kept none)."""
    for key, docs in in_output(outputs):
        texts = {d.page_content for d in docs}
        if texts < given.by_key.get(key, given.texts):
            yield docs
    if type(outputs) is list and not outputs and "documents" in given.by_key:
        yield []
    elif isinstance(outputs, dict):
        for key in given.by_key:
            if type(outputs.get(key)) is list and not outputs[key]:
                yield []


def unseen(docs: Sequence[Document], seen_lists: Iterable[Sequence[Any]]) -> list[Document]:
    """``docs`` minus the passages (by text) already in ``seen_lists``."""
    seen = {getattr(d, "page_content", None) for lst in seen_lists for d in lst}
    fresh: list[Document] = []
    for doc in docs:
        if doc.page_content not in seen:
            seen.add(doc.page_content)
            fresh.append(doc)
    return fresh
