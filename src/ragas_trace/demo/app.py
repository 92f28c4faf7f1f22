"""The demo RAG app: a real LCEL chain, retriever -> prompt -> scripted model ->
``StrOutputParser``, invoked with a question string like any user's chain."""

from __future__ import annotations

from langchain_core.output_parsers import StrOutputParser
from langchain_core.runnables import Runnable, RunnablePassthrough

from ragas_trace.demo.behaviour import Behaviour
from ragas_trace.demo.chat_model import PROMPT, ScriptedChatModel, format_passages
from ragas_trace.demo.retriever import TfidfRetriever

APP_NAME = "marrowick-guide"


def build_chain(behaviour: Behaviour | None = None, k: int = 3) -> Runnable[str, str]:
    """``chain.invoke("question") -> answer``; pass callbacks in the invoke config."""
    retriever = TfidfRetriever(k=k)
    model = ScriptedChatModel(behaviour=behaviour or Behaviour())
    chain: Runnable[str, str] = (
        {"context": retriever | format_passages, "question": RunnablePassthrough()}
        | PROMPT
        | model
        | StrOutputParser()
    ).with_config(run_name=APP_NAME)
    return chain
