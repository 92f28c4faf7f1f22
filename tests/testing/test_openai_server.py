"""The loopback OpenAI server, driven by the real ``openai`` client."""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import openai
import pytest

from ragas_trace.judges import prompts
from ragas_trace.judges.prompts import Task
from ragas_trace.testing.openai_server import FakeOpenAIServer, Fault


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as s:
        yield s


def _client(server: FakeOpenAIServer, **kw: object) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="test", **kw)  # type: ignore[arg-type]


def _ask(client: openai.OpenAI, prompt: prompts.Prompt, user: str,
         mode: str = "json_schema") -> openai.types.chat.ChatCompletion:
    fmt = prompts.response_format(prompt.task, mode)
    kwargs = {"response_format": fmt} if fmt else {}
    return client.chat.completions.create(model="m", messages=prompt.messages(user),  # type: ignore[arg-type]
                                          **kwargs)


def test_statements_one_per_sentence_and_usage(server: FakeOpenAIServer) -> None:
    reply = _ask(_client(server), prompts.STATEMENTS, prompts.statements_input(
        "Who?", "Ada Lovelace wrote the first program. She worked with Babbage."))
    assert json.loads(reply.choices[0].message.content or "") == {"statements": [
        "Ada Lovelace wrote the first program.", "She worked with Babbage."]}
    assert reply.choices[0].finish_reason == "stop"
    assert reply.usage is not None and reply.usage.prompt_tokens > 50
    stats = server.stats()
    assert stats.chat_requests == 1 and stats.by_task[Task.STATEMENTS] == 1
    assert stats.prompt_tokens == reply.usage.prompt_tokens


@pytest.mark.parametrize("mode", ["json_schema", "json_object", "none"])
def test_task_is_recognised_without_a_schema(server: FakeOpenAIServer, mode: str) -> None:
    reply = _ask(_client(server), prompts.VERDICTS, prompts.verdicts_input(
        [["Berlin ist die Hauptstadt Deutschlands."]],
        ["Berlin ist die Hauptstadt Deutschlands.", "München liegt am Meer."]), mode)
    verdicts = json.loads(reply.choices[0].message.content or "")["verdicts"]
    assert [v["supported"] for v in verdicts] == [True, False]
    assert [v["evidence"] for v in verdicts] == [[1], []]
    grounding = _ask(_client(server), prompts.GROUNDING, prompts.grounding_input(
        "Was ist die Hauptstadt Deutschlands?",
        [["Berlin ist die Hauptstadt Deutschlands.", "Bananen sind gelb."]],
        ["Berlin ist die Hauptstadt Deutschlands."]), mode)
    both = json.loads(grounding.choices[0].message.content or "")
    assert both["sentences"] == [1] and both["verdicts"][0]["supported"] is True


def test_questions_context_and_noncommittal(server: FakeOpenAIServer) -> None:
    client = _client(server)
    questions = json.loads(_ask(client, prompts.QUESTIONS, prompts.questions_input(
        "Paris is the capital of France.", 3)).choices[0].message.content or "")
    assert len(questions["questions"]) == 3 and questions["noncommittal"] is False
    evasive = json.loads(_ask(client, prompts.QUESTIONS, prompts.questions_input(
        "I don't know.", 2)).choices[0].message.content or "")
    assert evasive["noncommittal"] is True
    kept = json.loads(_ask(client, prompts.CONTEXT, prompts.context_input(
        "What is the capital of France?",
        [["Paris is the capital of France.", "Bananas are yellow."]])).choices[0].message.content
        or "")
    assert kept == {"sentences": [1], "insufficient_information": False}


def test_embeddings_float_and_base64_agree(server: FakeOpenAIServer) -> None:
    client = _client(server)
    as_b64 = client.embeddings.create(model="e", input=["the capital of France", "Paris"])
    as_float = client.embeddings.create(model="e", input="the capital of France",
                                        encoding_format="float")
    first = np.array(as_b64.data[0].embedding)
    assert first.shape == (256,)
    assert np.allclose(first, as_float.data[0].embedding, atol=1e-6)
    assert abs(float(np.linalg.norm(first)) - 1.0) < 1e-5
    assert server.stats().embedding_requests == 2 and server.stats().embedding_inputs == 3


def test_set_reply_overrides_a_task(server: FakeOpenAIServer) -> None:
    server.set_reply(Task.STATEMENTS, lambda request: {"statements": [request.answer.upper()]})
    reply = _ask(_client(server), prompts.STATEMENTS, prompts.statements_input("q", "yes."))
    assert json.loads(reply.choices[0].message.content or "") == {"statements": ["YES."]}


def test_server_error_then_success_is_retried_by_the_client(server: FakeOpenAIServer) -> None:
    server.inject(Fault.SERVER_ERROR, times=1)
    reply = _ask(_client(server, max_retries=1), prompts.STATEMENTS,
                 prompts.statements_input("q", "A b c."))
    assert reply.choices[0].message.content
    assert server.stats().faults[Fault.SERVER_ERROR] == 1 and server.stats().requests == 2


def test_rate_limit_carries_retry_after(server: FakeOpenAIServer) -> None:
    server.inject(Fault.RATE_LIMIT, times=1, retry_after_s=7)
    with pytest.raises(openai.RateLimitError) as info:
        _ask(_client(server, max_retries=0), prompts.STATEMENTS, prompts.statements_input("q", "a"))
    assert info.value.response.headers["retry-after"] == "7"


def test_invalid_json_and_truncated_replies(server: FakeOpenAIServer) -> None:
    client = _client(server)
    server.inject(Fault.INVALID_JSON, task=Task.STATEMENTS)
    bad = _ask(client, prompts.STATEMENTS, prompts.statements_input("q", "One. Two."))
    with pytest.raises(ValueError):
        json.loads(bad.choices[0].message.content or "")
    server.inject(Fault.TRUNCATED)
    cut = _ask(client, prompts.STATEMENTS, prompts.statements_input("q", "One. Two."))
    assert cut.choices[0].finish_reason == "length"


def test_hang_times_out_on_the_client(server: FakeOpenAIServer) -> None:
    server.inject(Fault.HANG, path="/v1/embeddings")
    client = _client(server, max_retries=0, timeout=0.3)
    with pytest.raises(openai.APITimeoutError):
        client.embeddings.create(model="e", input="x")


def test_disconnect_and_schema_unsupported(server: FakeOpenAIServer) -> None:
    client = _client(server, max_retries=0)
    server.inject(Fault.DISCONNECT)
    with pytest.raises(openai.APIConnectionError):
        _ask(client, prompts.STATEMENTS, prompts.statements_input("q", "a"))
    server.inject(Fault.SCHEMA_UNSUPPORTED, times=None)
    with pytest.raises(openai.BadRequestError):
        _ask(client, prompts.STATEMENTS, prompts.statements_input("q", "a"))
    assert _ask(client, prompts.STATEMENTS, prompts.statements_input("q", "a."),
                mode="json_object").choices[0].message.content


def test_stopped_server_refuses_connections() -> None:
    server = FakeOpenAIServer().start()
    client = _client(server, max_retries=0, timeout=2)
    server.stop()
    server.stop()
    with pytest.raises(openai.APIConnectionError):
        client.embeddings.create(model="e", input="x")


def test_unknown_prompts_go_to_the_chat_handler() -> None:
    with FakeOpenAIServer(chat_handler=lambda body: "custom") as server:
        reply = _client(server).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hello"}])
        assert reply.choices[0].message.content == "custom"
        assert server.recorded()[0].task is None


def test_a_failing_reply_function_is_a_500(server: FakeOpenAIServer) -> None:
    def broken(request: object) -> object:
        raise RuntimeError("boom")

    server.set_reply(Task.STATEMENTS, broken)
    with pytest.raises(openai.InternalServerError, match="boom"):
        _ask(_client(server, max_retries=0), prompts.STATEMENTS,
             prompts.statements_input("q", "a"))
