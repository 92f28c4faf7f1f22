"""OnnxChecker's plumbing, on a tiny model whose probabilities follow from the tokens.

The model (``ragas_trace.testing.checker_model``) takes the mean over a pair's
tokens of one vector per word: ``yes`` adds 4 to the supported logit, ``no`` to the
other, anything else 0. So a pair of n tokens holding one ``yes`` has probability
sigmoid(4 / n): the tests check pair order, truncation, batching and the max over
windows against those numbers, not any reading quality.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from ragas_trace.judges.local import onnx_checker
from ragas_trace.judges.local.checker import Check, Checker, Statement, Window
from ragas_trace.judges.local.onnx_checker import (
    NOT_CHECKED,
    CheckerDirectoryError,
    OnnxChecker,
)
from ragas_trace.testing.checker_model import STRENGTH, vocabulary, write_checker_directory


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def statements(*texts: str) -> list[Statement]:
    return [Statement(t) for t in texts]


def windows(*texts: str) -> list[Window]:
    return [Window(t) for t in texts]


@pytest.fixture(scope="module")
def directory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_checker_directory(tmp_path_factory.mktemp("checker") / "tiny-nli")


@pytest.fixture(scope="module")
def checker(directory: Path) -> OnnxChecker:
    return OnnxChecker.from_directory(directory)


def test_is_a_checker_named_after_its_directory_or_config(
        checker: OnnxChecker, tmp_path: Path) -> None:
    assert isinstance(checker, Checker)
    assert checker.name == "onnx:tiny-nli"
    named = write_checker_directory(tmp_path / "m", config={"name": "my-nli"})
    assert OnnxChecker.from_directory(named).name == "onnx:my-nli"


def test_probability_follows_the_pair_tokens(checker: OnnxChecker) -> None:
    # [CLS] yes paris [SEP] paris is the capital [SEP]: 9 tokens, one "yes".
    (check,) = checker.check(statements("Paris is the capital"), [windows("yes Paris")])
    assert check.probability == pytest.approx(sigmoid(STRENGTH / 9), rel=1e-6)
    (neutral,) = checker.check(statements("Paris is the capital"), [windows("Paris")])
    assert neutral.probability == pytest.approx(0.5)
    (denied,) = checker.check(statements("Paris is the capital"), [windows("no no")])
    assert 0.0 <= denied.probability < 0.5 < check.probability <= 1.0


def test_max_over_windows_gives_the_window_and_its_evidence(checker: OnnxChecker) -> None:
    own = windows("no", "the tower", "yes the tower was built in 1889", "yes yes", "a")
    (check,) = checker.check(statements("the tower was built in 1889"), [own])
    assert (check.window, check.evidence) == (3, "yes yes")
    assert check.probability == pytest.approx(sigmoid(2 * STRENGTH / 11))


def test_a_statement_without_windows_is_not_supported(checker: OnnxChecker) -> None:
    assert checker.check(statements("yes"), [[]]) == [Check(0.0, -1, "")]
    assert checker.check([], []) == []


def test_batching_gives_what_one_pair_at_a_time_gives(directory: Path) -> None:
    texts = statements("paris is the capital", "yes", "the eiffel tower was built in 1889",
                       "berlin is not in france")
    own = [windows("yes paris is the capital of france", "no"),
           windows("a", "the tower", "yes yes is " + "word " * 30),
           [],
           windows("berlin", "no no no", "the capital of france is paris")]
    batched = OnnxChecker.from_directory(directory, batch_size=3).check(texts, own)
    single = OnnxChecker.from_directory(directory, batch_size=1)
    alone = [single.check([s], [w])[0] for s, w in zip(texts, own, strict=True)]
    assert [(c.window, c.evidence) for c in batched] == [(c.window, c.evidence) for c in alone]
    assert [c.probability for c in batched] == pytest.approx([c.probability for c in alone],
                                                             rel=1e-6)


def test_the_window_side_is_cut_to_max_length(directory: Path) -> None:
    checker = OnnxChecker.from_directory(directory)  # max_length 64
    # 100 words then "yes": the window is cut, and the "yes" with it.
    (late,) = checker.check(statements("the tower"), [windows("word " * 100 + "yes")])
    assert late.probability == pytest.approx(0.5)
    # "yes" first: kept, in a pair of exactly 64 tokens; the statement whole.
    (early,) = checker.check(statements("the tower"), [windows("yes " + "word " * 100)])
    assert early.probability == pytest.approx(sigmoid(STRENGTH / 64), rel=1e-6)
    (ends,) = checker.check(statements("yes"), [windows("word " * 100)])
    assert ends.probability == pytest.approx(sigmoid(STRENGTH / 64), rel=1e-6)


def test_a_long_statement_is_cut_to_half_the_length(directory: Path) -> None:
    checker = OnnxChecker.from_directory(directory)  # 61 tokens besides the 3 specials
    # Its first 30 tokens kept: the "yes" at 31 goes, the window stays whole.
    (cut,) = checker.check(statements("word " * 30 + "yes"), [windows("a")])
    assert cut.probability == pytest.approx(0.5)
    # [CLS] a [SEP], 30 tokens ending in "yes", [SEP]: 34.
    (kept,) = checker.check(statements("word " * 29 + "yes " + "word " * 50), [windows("a")])
    assert kept.probability == pytest.approx(sigmoid(STRENGTH / 34), rel=1e-6)


@pytest.mark.parametrize("order, supported_by", [("window_first", "window"),
                                                  ("statement_first", "statement")])
def test_pair_order_decides_which_text_comes_first(
        tmp_path: Path, order: str, supported_by: str) -> None:
    # This model reads only the pair's first text (token type 0).
    checker = OnnxChecker.from_directory(write_checker_directory(
        tmp_path, first_segment_only=True, config={"pair_order": order}))
    in_window, in_statement = checker.check(statements("the tower", "yes the tower"),
                                            [windows("yes a"), windows("a")])
    # [CLS] yes a [SEP]: 4 tokens of type 0; [CLS] yes the tower [SEP]: 5.
    if supported_by == "window":
        assert in_window.probability == pytest.approx(sigmoid(STRENGTH / 4))
        assert in_statement.probability == pytest.approx(0.5)
    else:
        assert in_window.probability == pytest.approx(0.5)
        assert in_statement.probability == pytest.approx(sigmoid(STRENGTH / 5))


def test_a_model_without_token_type_ids_gives_the_same(checker: OnnxChecker,
                                                      tmp_path: Path) -> None:
    plain = OnnxChecker.from_directory(write_checker_directory(tmp_path, token_type_ids=False))
    texts, own = statements("yes paris", "the tower"), [windows("no", "a"), windows("yes")]
    assert plain.check(texts, own) == checker.check(texts, own)


def test_a_real_tokenizer_s_own_padding_and_truncation_give_way(tmp_path: Path) -> None:
    # The judge's WordPiece tokenizer.json pads to and truncates at 128 tokens.
    wordpiece = Path(str(resources.files("ragas_trace.judges.local") / "data"
                         / "tokenizer.json"))
    checker = OnnxChecker.from_directory(write_checker_directory(
        tmp_path, tokenizer=wordpiece, config={"max_length": 256}))
    # [CLS] 200 words yes [SEP] the tower [SEP]: 206 tokens, the "yes" kept.
    (check,) = checker.check(statements("the tower"), [windows("word " * 200 + "yes")])
    assert check.probability == pytest.approx(sigmoid(STRENGTH / 206), rel=1e-6)
    (cut,) = checker.check(statements("the tower"), [windows("word " * 260 + "yes")])
    assert cut.probability == pytest.approx(0.5)


@pytest.mark.parametrize("labels, supported", [(3, 0), (3, 2)])
def test_three_way_nli_reads_the_entailment_label(tmp_path: Path, labels: int,
                                                  supported: int) -> None:
    checker = OnnxChecker.from_directory(write_checker_directory(
        tmp_path, labels=labels, supported_label=supported, config={"num_labels": 3}))
    (check,) = checker.check(statements("paris"), [windows("yes")])
    # [CLS] yes [SEP] paris [SEP]: entailment 4/5, the two others 0.
    e = math.exp(STRENGTH / 5)
    assert check.probability == pytest.approx(e / (e + 2))


def test_sigmoid_reads_one_logit(tmp_path: Path) -> None:
    checker = OnnxChecker.from_directory(write_checker_directory(
        tmp_path, labels=1, supported_label=0, config={"score": "sigmoid"}))
    (check,) = checker.check(statements("paris"), [windows("yes")])
    assert check.probability == pytest.approx(sigmoid(STRENGTH / 5))


def test_text_the_tokenizer_cannot_encode_is_read(checker: OnnxChecker) -> None:
    (check,) = checker.check(statements("yes \udc80"), [windows("paris \ud800")])
    assert 0.5 < check.probability < 1.0


def test_past_max_pairs_statements_are_not_checked(directory: Path) -> None:
    checker = OnnxChecker.from_directory(directory, max_pairs=3)
    checks = checker.check(statements("yes", "paris", "tower"),
                           [windows("a", "b"), windows("a", "yes"), windows("c")])
    assert checks[0].probability > 0.5
    # Statements are read whole and in order: the second's two windows pass the cap.
    assert checks[1:] == [NOT_CHECKED, NOT_CHECKED]
    assert math.isnan(checks[1].probability) and checks[1].window == -1
    assert checker.unchecked == 2


def test_past_the_deadline_no_model_run_starts(directory: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    ticks: Iterator[float] = iter(range(100))  # a clock that moves 1 s per reading
    monkeypatch.setattr(onnx_checker, "monotonic", lambda: float(next(ticks)))
    checker = OnnxChecker.from_directory(directory, batch_size=1, deadline_s=2.5)
    # Read at 0 (deadline 2.5), then before each run: 1 and 2 run, 3 stops.
    checks = checker.check(statements("yes", "paris", "tower"),
                           [windows("a", "b"), windows("yes"), []])
    assert checks[0].probability > 0.5
    assert checks[1] is NOT_CHECKED
    assert checks[2] == Check(0.0, -1, "")  # nothing to read: not supported


def test_statements_and_window_lists_must_pair_up(checker: OnnxChecker) -> None:
    with pytest.raises(ValueError, match="2 statements but 1 window lists"):
        checker.check(statements("a", "b"), [windows("c")])


def test_two_threads_at_once_get_what_one_gets(checker: OnnxChecker) -> None:
    jobs = [(statements("yes paris", "the tower " * 20), [windows("no", "a " * 70, "paris"),
                                                           windows("yes", "no yes")]),
            (statements("berlin", "no"), [windows("word " * 80 + "yes"), windows("yes no")])]
    expected = [checker.check(*job) for job in jobs]
    results: dict[int, list[list[Check]]] = {0: [], 1: []}
    barrier = threading.Barrier(2)

    def run(k: int) -> None:
        barrier.wait()
        for _ in range(30):
            results[k].append(checker.check(*jobs[k]))

    threads = [threading.Thread(target=run, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for k in (0, 1):
        assert len(results[k]) == 30
        assert all(r == expected[k] for r in results[k])


# Errors: each names the file and what is wrong.

def test_a_missing_directory_is_named(tmp_path: Path) -> None:
    with pytest.raises(CheckerDirectoryError, match="not a directory"):
        OnnxChecker.from_directory(tmp_path / "nowhere")
    (tmp_path / "file").write_text("x")
    with pytest.raises(CheckerDirectoryError, match="file: not a directory"):
        OnnxChecker.from_directory(tmp_path / "file")


@pytest.mark.parametrize("name", ["model.onnx", "tokenizer.json", "checker.json"])
def test_a_missing_file_is_named(tmp_path: Path, name: str) -> None:
    directory = write_checker_directory(tmp_path / "m")
    (directory / name).unlink()
    with pytest.raises(CheckerDirectoryError, match=f"{name}: missing"):
        OnnxChecker.from_directory(directory)


@pytest.mark.parametrize("text, message", [
    ("{not json", "cannot read it as JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"supported_label": 1, "labels": 2}', r"unknown field\(s\) \['labels'\]"),
    ('{"score": "softmax"}', "'supported_label' is required"),
    ('{"supported_label": -1}', "'supported_label' must be an integer >= 0, got -1"),
    ('{"supported_label": "1"}', "'supported_label' must be an integer >= 0, got '1'"),
    ('{"supported_label": true}', "'supported_label' must be an integer >= 0, got True"),
    ('{"supported_label": 1, "score": "argmax"}', "'score' must be \"softmax\" or"),
    ('{"supported_label": 1, "pair_order": "premise"}', "'pair_order' must be"),
    ('{"supported_label": 1, "max_length": 4}', "'max_length' must be an integer >= 8"),
    ('{"supported_label": 1, "num_labels": 0}', "'num_labels' must be an integer >= 1"),
    ('{"supported_label": 2, "num_labels": 2}', "'supported_label' must be below num_labels"),
    ('{"supported_label": 1, "output": ""}', "'output' must be a non-empty string"),
    ('{"supported_label": 1, "name": 7}', "'name' must be a non-empty string"),
])
def test_a_bad_config_field_is_named(tmp_path: Path, text: str, message: str) -> None:
    directory = write_checker_directory(tmp_path / "m")
    (directory / "checker.json").write_text(text)
    with pytest.raises(CheckerDirectoryError, match=message) as caught:
        OnnxChecker.from_directory(directory)
    assert str(directory / "checker.json") in str(caught.value)


@pytest.mark.parametrize("fields, message", [
    ({"num_labels": 3}, "outputs 2 labels, but .*checker.json says num_labels 3"),
    ({"supported_label": 5}, "supported_label 5 but .*model.onnx outputs 2 label"),
    ({"output": "scores"}, r"no output named 'scores' \(it has \['logits'\]\)"),
    ({"max_length": 8, "supported_label": 1}, None),  # the least that fits: loads
])
def test_a_config_that_does_not_fit_the_model_is_named(
        tmp_path: Path, fields: dict[str, object], message: str | None) -> None:
    directory = write_checker_directory(tmp_path / "m", config=fields)
    if message is None:
        OnnxChecker.from_directory(directory)
        return
    with pytest.raises(CheckerDirectoryError, match=message):
        OnnxChecker.from_directory(directory)


def test_softmax_over_one_label_is_refused(tmp_path: Path) -> None:
    directory = write_checker_directory(tmp_path / "m", labels=1, supported_label=0)
    with pytest.raises(CheckerDirectoryError, match=r"softmax.*always 1.*sigmoid"):
        OnnxChecker.from_directory(directory)


def test_files_that_are_not_what_they_claim_are_named(tmp_path: Path) -> None:
    directory = write_checker_directory(tmp_path / "m")
    (directory / "tokenizer.json").write_text('{"version": "1.0"}')
    with pytest.raises(CheckerDirectoryError, match=r"tokenizer\.json: not a tokenizers file"):
        OnnxChecker.from_directory(directory)
    directory = write_checker_directory(tmp_path / "n")
    (directory / "model.onnx").write_bytes(b"not a model")
    with pytest.raises(CheckerDirectoryError, match=r"model\.onnx: onnxruntime cannot load"):
        OnnxChecker.from_directory(directory)


def write_graph(directory: Path, inputs: Sequence[tuple[str, int]], table: np.ndarray,
                pool: bool = True) -> Path:
    """A model over other inputs: logits = the mean of a word table over the tokens
    (``pool=False``: one row per token, the wrong rank)."""
    write_checker_directory(directory)
    nodes = [helper.make_node("Gather", ["table", inputs[0][0]], ["vectors"])]
    nodes.append(helper.make_node("ReduceMean", ["vectors"], ["logits"], axes=[1], keepdims=0)
                 if pool else helper.make_node("Identity", ["vectors"], ["logits"]))
    graph = helper.make_graph(
        nodes, "other",
        [helper.make_tensor_value_info(n, t, ["batch", "width"]) for n, t in inputs],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(table.astype(np.float32), "table")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    (directory / "model.onnx").write_bytes(model.SerializeToString())
    return directory


TABLE = np.zeros((len(vocabulary()), 2))


@pytest.mark.parametrize("inputs, message", [
    ([("input_ids", TensorProto.INT64)], r"takes inputs \['input_ids'\]; a checker model"),
    ([("input_ids", TensorProto.INT64), ("attention_mask", TensorProto.INT64),
      ("pixel_values", TensorProto.INT64)], "pixel_values"),
    ([("input_ids", TensorProto.INT32), ("attention_mask", TensorProto.FLOAT)],
     "input attention_mask is tensor.float., expected int64 or int32"),
])
def test_a_model_whose_inputs_do_not_fit_is_named(
        tmp_path: Path, inputs: list[tuple[str, int]], message: str) -> None:
    with pytest.raises(CheckerDirectoryError, match=message) as caught:
        OnnxChecker.from_directory(write_graph(tmp_path / "m", inputs, TABLE))
    assert "model.onnx" in str(caught.value)


MASKED = [("input_ids", TensorProto.INT64), ("attention_mask", TensorProto.INT64)]


def test_a_model_whose_output_has_the_wrong_rank_is_named(tmp_path: Path) -> None:
    with pytest.raises(CheckerDirectoryError, match=r"model.onnx: output 'logits' has shape "
                       r"\(1, 5, 2\) for 1 pair\(s\); expected \[pairs, labels\]"):
        OnnxChecker.from_directory(write_graph(tmp_path / "m", MASKED, TABLE, pool=False))


def test_a_tokenizer_that_is_not_the_model_s_is_named(tmp_path: Path) -> None:
    # The model's word table has 23 rows; WordPiece ids run to 30,521.
    directory = write_graph(tmp_path / "m", MASKED, TABLE)
    wordpiece = resources.files("ragas_trace.judges.local") / "data" / "tokenizer.json"
    (directory / "tokenizer.json").write_bytes(wordpiece.read_bytes())
    with pytest.raises(CheckerDirectoryError, match=r"model\.onnx: a test pair failed to run "
                       r"\(is tokenizer\.json this model's\?\)"):
        OnnxChecker.from_directory(directory)


def test_int32_inputs_are_fed_as_int32(tmp_path: Path) -> None:
    table = TABLE.copy()
    table[vocabulary()["yes"], 1] = 1.0
    inputs = [("input_ids", TensorProto.INT32), ("attention_mask", TensorProto.INT32)]
    checker = OnnxChecker.from_directory(write_graph(tmp_path / "m", inputs, table))
    (check,) = checker.check(statements("a"), [windows("yes")])
    assert check.probability == pytest.approx(sigmoid(1 / 5))


def test_a_nan_logit_leaves_its_statement_not_checked(tmp_path: Path) -> None:
    table = TABLE.copy()
    table[vocabulary()["word"]] = np.nan
    table[vocabulary()["yes"], 1] = 1.0
    checker = OnnxChecker.from_directory(write_graph(tmp_path / "m", MASKED, table))
    checks = checker.check(statements("a", "b"), [windows("yes", "word"), windows("yes")])
    assert checks[0] is NOT_CHECKED and checks[1].probability > 0.5


@pytest.mark.parametrize("kwargs, message", [
    ({"batch_size": 0}, "batch_size must be a positive integer"),
    ({"max_pairs": 1.5}, "max_pairs must be a positive integer"),
    ({"threads": True}, "threads must be a positive integer"),
    ({"deadline_s": 0}, "deadline_s must be a positive number"),
])
def test_bad_arguments_are_named(directory: Path, kwargs: dict[str, object],
                                 message: str) -> None:
    with pytest.raises(ValueError, match=message):
        OnnxChecker.from_directory(directory, **kwargs)  # type: ignore[arg-type]


def test_the_config_written_is_the_documented_layout(directory: Path) -> None:
    assert json.loads((directory / "checker.json").read_text()) == {
        "supported_label": 1, "score": "softmax", "pair_order": "window_first",
        "max_length": 64}
