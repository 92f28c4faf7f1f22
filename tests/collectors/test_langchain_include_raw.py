"""``llm.with_structured_output(Model, include_raw=True)`` at the end of an LCEL chain
returns ``{"raw", "parsed", "parsing_error"}``: the answer is ``parsed`` (its answer
field, else its JSON), else what the model wrote in ``raw``."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_fakes import tracing_fixture  # noqa: F401 (the fixture is used by name)
from pydantic import ValidationError
from test_langchain_agents import one_request, passages
from test_langchain_shapes import PROMPT, STORE, CitedAnswer, Q, Verdict, model, tool_call, top

from ragas_trace.collectors.langchain import RagasCallbackHandler
from ragas_trace.testing import InMemoryTracing

ANSWER = "Paris is the capital of France."

# name -> (schema, the model's reply, the answer, the parsing error's type or None)
REPLIES: dict[str, tuple[type, BaseMessage, str, type | None]] = {
    "parsed_answer_field": (CitedAnswer, tool_call(
        "CitedAnswer", {"answer": ANSWER, "citations": ["doc-1"]}), ANSWER, None),
    "parsed_without_answer_field_is_its_json": (Verdict, tool_call(
        "Verdict", {"city": "Paris", "confidence": 0.9}), '{"city":"Paris","confidence":0.9}',
        None),
    # No tool call: nothing parsed; the model's text is what it answered.
    "not_parsed_falls_back_to_raw_text": (CitedAnswer, AIMessage(ANSWER), ANSWER, None),
    # Arguments that do not fit the model: a parsing error; the raw call's answer.
    "parsing_error_falls_back_to_raw_tool_arguments": (CitedAnswer, tool_call(
        "CitedAnswer", {"answer": ANSWER}), ANSWER, ValidationError),
}


@pytest.mark.parametrize(("schema", "reply", "answer", "error"), REPLIES.values(),
                         ids=REPLIES.keys())
def test_include_raw_answer(tracing: InMemoryTracing, schema: type, reply: BaseMessage,
                            answer: str, error: type | None) -> None:
    context = STORE.as_retriever(search_kwargs={"k": 2}) | RunnableLambda(
        lambda docs: "\n".join(d.page_content for d in docs))
    chain = ({"context": context, "question": RunnablePassthrough()} | PROMPT
             | model(reply).with_structured_output(schema, include_raw=True))

    out: dict[str, Any] = chain.invoke(Q, {"callbacks": [RagasCallbackHandler(tracing.provider)]})

    assert set(out) == {"raw", "parsed", "parsing_error"}
    if error is None:
        assert out["parsing_error"] is None
    else:
        assert isinstance(out["parsing_error"], error) and out["parsed"] is None
    _, record = one_request(tracing.spans())
    assert record.answer == answer
    assert passages(record) == top(Q, 2)
