"""The passages on the root are those that reached the answering model's input when a
single retrieval is cut by plain code before the prompt: a ``@chain`` function, a
``RunnableLambda``, a LangGraph node, a token budget, a truncation of each passage;
each through ``invoke``, ``stream``, ``ainvoke``, ``astream`` and ``batch``. The
retrieval's span keeps every passage; a RERANKER span says what the prompt shows (the
part shown, for a cut passage). A model the handler cannot see keeps today's rule,
and the root says so."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypedDict

import agent_fakes as apps
import pytest
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda, chain
from langchain_core.runnables import RunnablePassthrough as Passthrough
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_fakes import tracing_fixture  # noqa: F401 (the fixture is used by name)
from langgraph.graph import END, START, StateGraph
from span_checks import by_kind
from test_langchain_agents import one_request, passages
from test_langchain_answer_passages import PROMPT, requests

from ragas_trace import semconv as sc
from ragas_trace.collectors.langchain import RagasCallbackHandler
from ragas_trace.testing import InMemoryTracing

FORMS = ["invoke", "stream", "ainvoke", "astream", "batch"]
CITY_IDS = (3, 5, 7)
K = 4


def _passage(i: int, city: str) -> str:
    facts = " ".join(f"{city} fact{j}: the river{i} market opens at {j + 6} o'clock."
                     for j in range(4))
    return f"{city} lies on river{i}, in region{i}. {facts}"


# Long passages (about 230 characters), so that a cut one still shows a long part.
STORE = InMemoryVectorStore(apps.KeywordEmbeddings())
STORE.add_documents([Document(_passage(i, c), id=f"doc-{c}", metadata={"source": f"kb/{c}"})
                     for i, c in enumerate(apps.CITIES)])
RETRIEVER = STORE.as_retriever(search_kwargs={"k": K})


def retrieved(question: str) -> list[str]:
    return [d.page_content for d in STORE.similarity_search(question, k=K)]


def answer_from_context(messages: list[BaseMessage]) -> AIMessage:
    text = "\n".join(m.text for m in messages)
    return AIMessage(f"Answer: {text.split('Context:', 1)[1].split()[0]}")


class Model(BaseChatModel):
    """Answers from the first word of the context; streams word by word."""

    @property
    def _llm_type(self) -> str:
        return "context-echo"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None,
                  **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=answer_from_context(messages))])

    def _stream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                run_manager: CallbackManagerForLLMRun | None = None,
                **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        for word in answer_from_context(messages).text.split(" "):
            yield ChatGenerationChunk(message=AIMessageChunk(word + " "))


MODEL = Model()


# The cuts: each takes the retrieved Documents and gives the prompt's context text and
# the passages (or parts) it holds, in prompt order.

def rerank(docs: Sequence[Document]) -> list[Document]:
    """A reranker in plain code: the two with the highest river number."""
    return sorted(docs, key=lambda d: -int(d.page_content.split("river")[1].split(",")[0]))[:2]


def top_two(docs: Sequence[Document]) -> list[str]:
    return [d.page_content for d in rerank(docs)]


def token_budget(docs: Sequence[Document], budget: int = 60) -> list[str]:
    """Whole passages while they fit in ``budget`` words, then the part of the next
    that fits."""
    out: list[str] = []
    for doc in docs:
        words = doc.page_content.split(" ")
        if len(words) > budget:
            out.append(" ".join(words[:budget]))
            break
        out.append(doc.page_content)
        budget -= len(words)
    return out


def truncated(docs: Sequence[Document], chars: int = 100) -> list[str]:
    """Each passage cut to its first ``chars`` characters."""
    return [d.page_content[:chars] for d in docs[:3]]


def whole_words(part: str, passage: str) -> str:
    """What the prompt is taken to show of a cut passage: its whole words."""
    if part == passage or passage[len(part)] == " ":
        return part
    return part.rsplit(" ", 1)[0]


CUTS: dict[str, Callable[[Sequence[Document]], list[str]]] = {
    "rerank": top_two, "token_budget": token_budget, "truncate": truncated}


def context(parts: Sequence[str]) -> str:
    return "\n\n".join(parts)


# The app shapes: one retrieval, a cut in plain code, the prompt, the model.

def chain_function(cut: Callable[[Sequence[Document]], list[str]]) -> Runnable[Any, str]:
    @chain
    def rag(question: str) -> str:
        docs = RETRIEVER.invoke(question)
        prompt = PROMPT.invoke({"context": context(cut(docs)), "question": question})
        return MODEL.invoke(prompt).text

    return rag


def lambda_step(cut: Callable[[Sequence[Document]], list[str]]) -> Runnable[Any, str]:
    """``retriever | RunnableLambda(format)``: the step is given Documents and returns
    text, not Documents."""
    step = RunnableLambda(lambda docs: context(cut(docs)))
    return ({"context": RETRIEVER | step, "question": Passthrough()}
            | PROMPT | MODEL | StrOutputParser())


class State(TypedDict, total=False):
    question: str
    context: str
    answer: str


def graph_node(cut: Callable[[Sequence[Document]], list[str]]) -> Any:
    def retrieve(state: State) -> State:
        return {"context": context(cut(RETRIEVER.invoke(state["question"])))}

    def generate(state: State) -> State:
        reply = MODEL.invoke(PROMPT.invoke(state))
        return {"answer": reply.text}

    graph = StateGraph(State)
    graph.add_node(retrieve)
    graph.add_node(generate)
    graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", "generate")
    graph.add_edge("generate", END)
    return graph.compile()


SHAPES: dict[str, Callable[[Callable[[Sequence[Document]], list[str]]], Any]] = {
    "chain_function": chain_function, "runnable_lambda": lambda_step,
    "langgraph_node": graph_node}


def inputs(shape: str) -> list[Any]:
    questions = [apps.question(i) for i in CITY_IDS]
    return [{"question": q} for q in questions] if shape == "langgraph_node" else questions


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("cut", CUTS)
@pytest.mark.parametrize("shape", SHAPES)
def test_a_single_retrieval_cut_before_the_prompt(
        tracing: InMemoryTracing, form: str, cut: str, shape: str) -> None:
    found = requests(tracing, form, SHAPES[shape](CUTS[cut]), inputs(shape))

    for city in CITY_IDS:
        question = apps.question(city)
        spans, record = found[question]
        docs = STORE.similarity_search(question, k=K)
        sources = rerank(docs) if cut == "rerank" else docs
        parts = CUTS[cut](docs)
        expected = [whole_words(p, d.page_content) for p, d in zip(parts, sources, strict=False)]
        assert passages(record) == expected
        assert len(expected) < K  # the shape tested: fewer than retrieved
        # Their ids and metadata are the passages' own, cut or not.
        assert [c.id for c in record.contexts] == [d.id for d in sources[:len(parts)]]
        [retrieval] = by_kind(spans, sc.KIND_RETRIEVER)
        attrs = retrieval.attributes or {}
        assert attrs[sc.document_key(K - 1, sc.DOCUMENT_CONTENT)] == docs[-1].page_content
        assert sc.RAGAS_RETRIEVAL_DISCARDED not in attrs  # some of it was used
        [shown] = by_kind(spans, sc.KIND_RERANKER)
        assert shown.name == "passages in prompt"
        root = next(s for s in spans if s.parent is None)
        assert sc.RAGAS_PASSAGES_SOURCE not in (root.attributes or {})


@pytest.mark.parametrize("form", ["invoke", "astream"])
def test_every_passage_in_the_prompt_adds_no_span(tracing: InMemoryTracing, form: str) -> None:
    """The common case: the prompt holds every passage retrieved; nothing is added."""
    app = lambda_step(lambda docs: [d.page_content for d in docs])
    found = requests(tracing, form, app, inputs("runnable_lambda"))

    for city in CITY_IDS:
        spans, record = found[apps.question(city)]
        assert passages(record) == retrieved(apps.question(city))
        assert by_kind(spans, sc.KIND_RERANKER) == []
        root = next(s for s in spans if s.parent is None)
        assert sc.RAGAS_PASSAGES_SOURCE not in (root.attributes or {})


def test_passages_reflowed_by_the_prompt_are_found(tracing: InMemoryTracing) -> None:
    """Whitespace differs (line breaks where the passage had spaces) and the passages are
    JSON-encoded (the line breaks written ``\\n``): still found, whole."""
    def reflow(docs: Sequence[Document]) -> list[str]:
        return [json.dumps(d.page_content.replace(" ", "\n  ")) for d in docs[:2]]

    requests(tracing, "invoke", chain_function(reflow), inputs("chain_function")[:1])
    _, record = next(iter(requests_of(tracing).values()))
    question = apps.question(CITY_IDS[0])
    assert passages(record) == retrieved(question)[:2]


def requests_of(tracing: InMemoryTracing) -> dict[str, Any]:
    return {str(one_request(s)[1].question): one_request(s)
            for s in tracing.by_trace().values()}


def test_a_model_without_callbacks_keeps_every_passage(tracing: InMemoryTracing) -> None:
    """A custom wrapper calls its client directly: no model run, so every passage
    retrieved counts, and the root says the answering input was not seen."""
    @chain
    def rag(question: str) -> str:
        docs = RETRIEVER.invoke(question)
        return answer_from_context([AIMessage("Context: " + context(top_two(docs)))]).text

    handler = RagasCallbackHandler(tracing.provider)
    rag.invoke(apps.question(3), {"callbacks": [handler]})

    _, record = next(iter(requests_of(tracing).values()))
    assert passages(record) == retrieved(apps.question(3))
    root = next(s for s in tracing.spans() if s.parent is None)
    assert (root.attributes or {})[sc.RAGAS_PASSAGES_SOURCE] == sc.PASSAGES_PROMPT_UNSEEN


def test_a_prompt_with_no_passage_verbatim_keeps_every_passage(
        tracing: InMemoryTracing) -> None:
    """The app summarises the passages before the prompt: nothing to match, so every
    passage counts, as before."""
    app = lambda_step(lambda docs: [d.page_content.upper() for d in docs[:2]])
    handler = RagasCallbackHandler(tracing.provider)
    app.invoke(apps.question(3), {"callbacks": [handler]})

    _, record = next(iter(requests_of(tracing).values()))
    assert passages(record) == retrieved(apps.question(3))
    root = next(s for s in tracing.spans() if s.parent is None)
    assert (root.attributes or {})[sc.RAGAS_PASSAGES_SOURCE] == sc.PASSAGES_NOT_IN_PROMPT


def test_a_retrieval_whose_passages_never_reached_the_prompt_is_marked(
        tracing: InMemoryTracing) -> None:
    """Two retrievals, the prompt built from the first only: the second is marked
    ``not_in_prompt`` and gives no passage (a later retrieval is never ``superseded``)."""
    @chain
    def rag(question: str) -> str:
        docs = RETRIEVER.invoke(question)
        RETRIEVER.invoke("city11 city12 city13 city14")
        prompt = PROMPT.invoke({"context": context(top_two(docs)), "question": question})
        return MODEL.invoke(prompt).text

    rag.invoke(apps.question(3), {"callbacks": [RagasCallbackHandler(tracing.provider)]})

    _, record = next(iter(requests_of(tracing).values()))
    docs = STORE.similarity_search(apps.question(3), k=K)
    assert passages(record) == [d.page_content for d in rerank(docs)]
    first, second = sorted(by_kind(tracing.spans(), sc.KIND_RETRIEVER),
                           key=lambda s: s.start_time or 0)
    assert sc.RAGAS_RETRIEVAL_DISCARDED not in (first.attributes or {})
    assert (second.attributes or {})[sc.RAGAS_RETRIEVAL_DISCARDED] == sc.DISCARDED_NOT_IN_PROMPT


def test_a_stream_stopped_early_keeps_the_passages_its_model_was_given(
        tracing: InMemoryTracing) -> None:
    """The consumer stops after two chunks: the model call is still open when the root
    ends with the partial answer, and its prompt (known from its start) still chooses
    the passages."""
    app = lambda_step(top_two)
    handler = RagasCallbackHandler(tracing.provider)
    stream = app.stream(apps.question(3), {"callbacks": [handler]})
    chunks = iter(stream)
    next(chunks), next(chunks)
    stream.close()

    _, record = next(iter(requests_of(tracing).values()))
    docs = STORE.similarity_search(apps.question(3), k=K)
    assert passages(record) == [d.page_content for d in rerank(docs)]
