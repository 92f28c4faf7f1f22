"""RAG agents and graphs written the way the LangChain 1.x and LangGraph tutorials
write them, on the frameworks' own parts with an in-memory vector store, a keyword
embedding and a scripted chat model (no network). Shared by the agent tests."""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from typing import Any, Literal, TypedDict

from langchain.agents import create_agent
from langchain.agents.middleware import ModelRequest, dynamic_prompt
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, create_retriever_tool, tool
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, create_react_agent, tools_condition

CITIES = [f"city{i}" for i in range(20)]
QUESTION = "Where does city3 lie?"
PASSAGE = "city3 lies on river3, in region3."


def question(i: int) -> str:
    return f"Where does {CITIES[i]} lie?"


class KeywordEmbeddings(Embeddings):
    """Bag of words hashed into 1024 dimensions: a query finds the passages that share
    its words (the city's name), so each request's passages are predictable."""

    def _embed(self, text: str) -> list[float]:
        vector = [0.0] * 1024
        for word in re.findall(r"\w+", text.lower()):
            vector[zlib.crc32(word.encode()) % 1024] += 1.0
        return vector

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


def vector_store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(KeywordEmbeddings())
    store.add_documents([Document(f"{c} lies on river{i}, in region{i}.", id=f"doc-{c}",
                                  metadata={"source": f"kb/{c}.md"})
                         for i, c in enumerate(CITIES)])
    return store


class ScriptedAgentModel(BaseChatModel):
    """Answers like a tool-calling model, from the conversation alone (so concurrent
    requests cannot get each other's replies): a user turn gets a call of ``tool_name``
    with the question as ``query``; a tool result gets ``Answer: <its first line>``;
    ``answer_directly`` skips the tool. ``bind_tools`` keeps the script."""

    tool_name: str = "retrieve_context"
    answer_directly: bool = False

    @property
    def _llm_type(self) -> str:
        return "scripted-agent"

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> Any:
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = "fake"
        params["ls_model_name"] = "scripted-1"
        return params

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None,
                  **kwargs: Any) -> ChatResult:
        last = messages[-1]
        usage = {"input_tokens": 20, "output_tokens": 6, "total_tokens": 26}
        if isinstance(last, ToolMessage) or self.answer_directly:
            source = _source(messages)
            reply = AIMessage(f"Answer: {source.splitlines()[0] if source else 'unknown'}",
                              usage_metadata=usage)
        else:
            reply = AIMessage("", usage_metadata=usage, tool_calls=[{
                "name": self.tool_name, "args": {"query": last.text},
                "id": f"call-{zlib.crc32(last.text.encode())}"}])
        return ChatResult(generations=[ChatGeneration(message=reply)])


def _source(messages: list[BaseMessage]) -> str:
    """The latest tool result, or the text after ``Context:`` in a prompt."""
    for message in reversed(messages):
        if isinstance(message, ToolMessage):
            return message.text.strip()
        if "Context:" in message.text:
            return message.text.split("Context:", 1)[1].strip()
    return ""


def artifact_tool(store: InMemoryVectorStore) -> BaseTool:
    """The "Build a RAG agent" tutorial's tool: ``similarity_search`` (no retriever run,
    no callback), the Documents returned as the artifact; it reports progress to
    ``stream_mode="custom"``."""

    @tool(response_format="content_and_artifact")
    def retrieve_context(query: str) -> tuple[str, list[Document]]:
        """Retrieve information to help answer a query."""
        docs = store.similarity_search(query, k=2)
        get_stream_writer()({"retrieved": len(docs)})  # for stream_mode="custom"
        return "\n\n".join(d.page_content for d in docs), docs

    return retrieve_context


def retriever_tool(store: InMemoryVectorStore) -> BaseTool:
    return create_retriever_tool(store.as_retriever(search_kwargs={"k": 2}),
                                 "retrieve_context", "Search the knowledge base.")


def rag_agent(store: InMemoryVectorStore | None = None, *, use_retriever: bool = False,
              checkpointer: Any = None) -> Any:
    """``create_agent`` with one retrieval tool (two model calls per request)."""
    store = store or vector_store()
    tools = [retriever_tool(store) if use_retriever else artifact_tool(store)]
    return create_agent(ScriptedAgentModel(), tools, checkpointer=checkpointer,
                        system_prompt="Use the tool, then answer from its result.")


def dynamic_prompt_agent(store: InMemoryVectorStore | None = None) -> Any:
    """The tutorial's two-step chain: ``@dynamic_prompt`` middleware retrieves (here
    through a retriever, so that the passages are seen) and puts them in the system
    prompt; one model call, no tools."""
    retriever = (store or vector_store()).as_retriever(search_kwargs={"k": 2})

    @dynamic_prompt
    def prompt_with_context(request: ModelRequest) -> str:
        query = request.state["messages"][-1].text
        docs = retriever.invoke(query)
        return "Answer from the context.\nContext: " + "\n".join(d.page_content for d in docs)

    return create_agent(ScriptedAgentModel(answer_directly=True), tools=[],
                        middleware=[prompt_with_context])


class RagState(TypedDict, total=False):
    question: str
    context: list[Document]
    answer: str


def state_graph(store: InMemoryVectorStore | None = None) -> Any:
    """The "Build a RAG app" tutorial: retrieve -> generate over a custom state; the
    retrieve node calls ``similarity_search`` and puts the Documents in the state."""
    store = store or vector_store()
    model = ScriptedAgentModel(answer_directly=True)

    def retrieve(state: RagState) -> dict[str, Any]:
        return {"context": store.similarity_search(state["question"], k=2)}

    def generate(state: RagState) -> dict[str, Any]:
        docs = "\n".join(d.page_content for d in state["context"])
        reply = model.invoke([HumanMessage(f"{state['question']}\nContext: {docs}")])
        return {"answer": reply.text}

    graph = StateGraph(RagState).add_sequence([retrieve, generate])
    graph.add_edge(START, "retrieve")
    return graph.compile()


def agentic_rag(store: InMemoryVectorStore | None = None) -> Any:
    """The LangGraph "agentic RAG" tutorial over ``MessagesState``: a model that calls
    the retriever tool or answers, ``ToolNode`` + ``tools_condition``, and a grader
    node (an LLM call) that routes to the answer or to a rewrite."""
    tool_ = retriever_tool(store or vector_store())
    model = ScriptedAgentModel()
    grader = ScriptedAgentModel(answer_directly=True)

    def generate_query_or_respond(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.bind_tools([tool_]).invoke(state["messages"])]}

    def grade_documents(state: MessagesState) -> Literal["generate_answer", "rewrite_question"]:
        context = state["messages"][-1].text
        verdict = grader.invoke([HumanMessage(f"Is this relevant? yes or no\nContext: {context}")])
        return "generate_answer" if verdict.text else "rewrite_question"

    def rewrite_question(state: MessagesState) -> dict[str, Any]:
        return {"messages": [HumanMessage(state["messages"][0].text)]}

    def generate_answer(state: MessagesState) -> dict[str, Any]:
        prompt = f"{state['messages'][0].text}\nContext: {state['messages'][-1].text}"
        return {"messages": [grader.invoke([HumanMessage(prompt)])]}

    graph = StateGraph(MessagesState)
    graph.add_node(generate_query_or_respond)
    graph.add_node("retrieve", ToolNode([tool_]))
    graph.add_node(rewrite_question)
    graph.add_node(generate_answer)
    graph.add_edge(START, "generate_query_or_respond")
    graph.add_conditional_edges("generate_query_or_respond", tools_condition,
                                {"tools": "retrieve", END: END})
    graph.add_conditional_edges("retrieve", grade_documents)
    graph.add_edge("generate_answer", END)
    graph.add_edge("rewrite_question", "generate_query_or_respond")
    return graph.compile()


def react_agent(store: InMemoryVectorStore | None = None) -> Any:
    """``langgraph.prebuilt.create_react_agent`` (deprecated for ``create_agent``, still
    in tutorials) with the artifact tool."""
    return create_react_agent(ScriptedAgentModel(), [artifact_tool(store or vector_store())])


def messages_input(text: str = QUESTION) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}
