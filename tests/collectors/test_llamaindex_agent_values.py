"""The readers behind agent and workflow capture, on the shapes integrations produce
that the fake models of the other tests do not."""

from __future__ import annotations

from llama_index.core.base.llms.types import ChatMessage, ChatResponse, CompletionResponse
from llama_index.core.base.response.schema import Response
from llama_index.core.memory import ChatMemoryBuffer, Memory
from llama_index.core.schema import NodeWithScore, TextNode
from llama_index.core.tools.types import ToolOutput

from ragas_trace.collectors._attributes import Message
from ragas_trace.collectors.llamaindex import _agent_values as av


def test_openai_style_tool_calls_in_additional_kwargs() -> None:
    class Function:
        name = "search"
        arguments = '{"q": "cats"}'

    class Call:
        id = "call-9"
        function = Function()

    message = ChatMessage(role="assistant", content=None, additional_kwargs={"tool_calls": [
        {"id": "call-1", "function": {"name": "lookup", "arguments": {"q": "dogs"}}}, Call()]})

    [found] = av.chat_messages([message])

    assert found == Message("assistant", None, (("call-1", "lookup", '{"q": "dogs"}'),
                                                ("call-9", "search", '{"q": "cats"}')))


def test_output_messages_of_chat_and_completion_responses() -> None:
    chat = ChatResponse(message=ChatMessage(role="assistant", content="Hi"))
    assert av.output_messages(chat) == [Message("assistant", "Hi")]
    assert av.output_messages(CompletionResponse(text="Hello")) == [
        Message("assistant", "Hello")]
    assert av.output_messages(None) == []


def test_session_of_memory() -> None:
    assert av.session_of_memory(Memory.from_defaults(session_id="s-1")) == "s-1"
    assert av.session_of_memory(ChatMemoryBuffer.from_defaults(chat_store_key="k")) == "k"
    # The default key is every conversation's: no id.
    assert av.session_of_memory(ChatMemoryBuffer.from_defaults()) is None
    assert av.session_of_memory(object()) is None


def test_answer_of_result_shapes() -> None:
    assert av.answer_of_result("plain") == "plain"
    assert av.answer_of_result(Response(response="from a synthesizer")) == "from a synthesizer"
    assert av.answer_of_result({"result": "in a dict"}) == "in a dict"
    assert av.answer_of_result({"unknown": 1}) is None
    assert av.answer_of_result(None) is None


def test_passages_in_tool_output_and_response() -> None:
    nodes = [NodeWithScore(node=TextNode(text="a", id_="n-1"), score=0.5)]
    tool = ToolOutput(tool_name="kb", content="a", raw_input={}, raw_output=nodes)
    assert av.passages_in(tool) == nodes
    assert av.passages_in(Response(response="x", source_nodes=nodes)) == nodes
    assert av.passages_in(["not", "nodes"]) == []
    assert av.passages_in(ToolOutput(tool_name="kb", content="a", raw_input={},
                                     raw_output="text")) == []
