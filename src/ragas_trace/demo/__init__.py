"""The ``ragas-trace demo`` app: a small LangChain RAG chain over an invented corpus,
with a scripted model whose hallucination share can drift, captured and scored by
the library end to end. Needs the ``langchain`` extra."""
