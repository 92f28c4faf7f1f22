"""Query engines made of query engines (``SubQuestionQueryEngine``,
``RouterQueryEngine``) stay one request each, with every sub-engine's retrieval, now
that tools and workflows are captured too."""

from __future__ import annotations

from collections.abc import Sequence

from llama_index.core.base.base_selector import BaseSelector, SelectorResult, SingleSelection
from llama_index.core.prompts.mixin import PromptDictType
from llama_index.core.query_engine import RouterQueryEngine, SubQuestionQueryEngine
from llama_index.core.question_gen.types import BaseQuestionGenerator, SubQuestion
from llama_index.core.schema import QueryBundle
from llama_index.core.tools import QueryEngineTool, ToolMetadata
from llamaindex_agent_fakes import arun
from llamaindex_fakes import (  # noqa: F401 (the fixture is used by name)
    ANSWER,
    ScriptedLLM,
    echo_engine,
    tracing_fixture,
)
from span_checks import by_kind

from ragas_trace import semconv as sc
from ragas_trace.collectors import llamaindex
from ragas_trace.extract import extract_record
from ragas_trace.testing import InMemoryTracing

QUESTION = "Compare cats and dogs"


class FixedQuestions(BaseQuestionGenerator):
    """One sub-question per tool, naming it (an LLM would write them)."""

    def _get_prompts(self) -> PromptDictType:
        return {}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        return None

    def generate(self, tools: Sequence[ToolMetadata], query: QueryBundle) -> list[SubQuestion]:
        return [SubQuestion(sub_question=f"about {t.name}", tool_name=t.name) for t in tools]

    async def agenerate(self, tools: Sequence[ToolMetadata],
                        query: QueryBundle) -> list[SubQuestion]:
        return self.generate(tools, query)


class FirstChoice(BaseSelector):
    def _get_prompts(self) -> PromptDictType:
        return {}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        return None

    def _select(self, choices: Sequence[ToolMetadata], query: QueryBundle) -> SelectorResult:
        return SelectorResult(selections=[SingleSelection(index=0, reason="first")])

    async def _aselect(self, choices: Sequence[ToolMetadata],
                       query: QueryBundle) -> SelectorResult:
        return self._select(choices, query)


def _tools() -> list[QueryEngineTool]:
    return [QueryEngineTool.from_defaults(echo_engine(), name=name, description=name)
            for name in ("cats", "dogs")]


def test_sub_question_engine_is_one_request_with_each_sub_retrieval(
        tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)
    engine = SubQuestionQueryEngine.from_defaults(
        query_engine_tools=_tools(), question_gen=FixedQuestions(), llm=ScriptedLLM(),
        use_async=False)

    response = engine.query(QUESTION)

    assert str(response) == ANSWER
    spans = tracing.spans()
    [root] = [s for s in spans if s.parent is None]
    assert root.name == "SubQuestionQueryEngine.query"
    assert [s.name for s in by_kind(spans, sc.KIND_CHAIN)] == [root.name]
    record = extract_record(spans)
    assert record is not None
    assert (record.question, record.answer) == (QUESTION, ANSWER)
    assert {c.content for c in record.contexts} == {"passage about about cats",
                                                    "passage about about dogs"}


def test_router_engine_is_one_request(tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)
    engine = RouterQueryEngine(selector=FirstChoice(), query_engine_tools=_tools(),
                               llm=ScriptedLLM())

    async def run() -> str:
        return str(await engine.aquery(QUESTION))

    arun(run)

    spans = tracing.spans()
    [root] = [s for s in spans if s.parent is None]
    assert root.name == "RouterQueryEngine.aquery"
    assert root.attributes[sc.INPUT_VALUE] == QUESTION
    assert len(by_kind(spans, sc.KIND_RETRIEVER)) == 1
    record = extract_record(spans)
    assert record is not None
    assert {c.content for c in record.contexts} == {f"passage about {QUESTION}"}
