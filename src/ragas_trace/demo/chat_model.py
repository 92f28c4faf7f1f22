"""A scripted LangChain chat model: a real ``BaseChatModel`` that reads the passages
and the question from the demo's prompt and answers from them, hallucinating or
evading as its ``Behaviour`` dictates. No network, deterministic given a seed."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.prompts import ChatPromptTemplate
from pydantic import ConfigDict, Field, SkipValidation

from ragas_trace.demo.answers import evasive_answer, grounded_answer, hallucinate
from ragas_trace.demo.behaviour import Behaviour, Mode

MODEL_NAME = "marrowick-scripted-1"
_PASSAGES_HEADER = "Passages:"
_PASSAGE_LINE = re.compile(r"^\[(?P<id>[^\]]+)\] (?P<text>.+)$")

PROMPT = ChatPromptTemplate.from_messages([
    ("system", "You answer questions about the town of Marrowick. Use only the passages "
               "below and answer in one or two sentences.\n\n" + _PASSAGES_HEADER
               + "\n{context}"),
    ("human", "{question}"),
])


def format_passages(docs: Sequence[Document]) -> str:
    """One ``[id] text`` line a passage: the prompt's ``{context}``."""
    return "\n".join(f"[{doc.id or i}] {doc.page_content}" for i, doc in enumerate(docs))


def parse_prompt(messages: Sequence[BaseMessage]) -> tuple[str, list[str]]:
    """The question (last human message) and the passages listed in the system message."""
    question = ""
    passages: list[str] = []
    for message in messages:
        text = message.content if isinstance(message.content, str) else ""
        if isinstance(message, HumanMessage):
            question = text
        elif isinstance(message, SystemMessage) and _PASSAGES_HEADER in text:
            body = text.split(_PASSAGES_HEADER, 1)[1]
            passages = [m.group("text") for line in body.splitlines()
                        if (m := _PASSAGE_LINE.match(line.strip()))]
    return question, passages


class ScriptedChatModel(BaseChatModel):
    """Answers from the retrieved passages; ``behaviour`` decides how faithfully."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    behaviour: SkipValidation[Behaviour] = Field(default_factory=Behaviour)
    model_name: str = MODEL_NAME

    @property
    def _llm_type(self) -> str:
        return "scripted-demo"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name}

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        question, passages = parse_prompt(messages)
        mode, rng = self.behaviour.next()
        if mode is Mode.EVASIVE:
            answer = evasive_answer(rng)
        else:
            answer = grounded_answer(question, passages, rng)
            if mode is Mode.HALLUCINATED:
                answer = hallucinate(answer, rng)
        prompt_words = sum(len(str(m.content).split()) for m in messages)
        message = AIMessage(
            content=answer,
            response_metadata={"model_name": self.model_name, "demo_mode": str(mode)},
            usage_metadata={
                "input_tokens": prompt_words,
                "output_tokens": len(answer.split()),
                "total_tokens": prompt_words + len(answer.split()),
            },
        )
        return ChatResult(generations=[ChatGeneration(message=message)],
                          llm_output={"model_name": self.model_name})
