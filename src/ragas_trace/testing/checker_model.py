"""A tiny checker model directory in the ``OnnxChecker`` layout, built in a moment.

The model is not a reader: its logits are the mean, over the pair's tokens, of one
vector per word. ``yes`` adds ``STRENGTH`` to the supported label's logit and ``no``
to another label's; every other word adds nothing. So a pair's probability follows
from its tokens alone, which lets tests check the plumbing (pair order, truncation,
batching, max over windows) against numbers they can work out. Needs the ``onnx``
package (the ``dev`` extra).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

SUPPORT, DENY = "yes", "no"
STRENGTH = 4.0
_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
_WORDS = [SUPPORT, DENY, "the", "a", "is", "in", "of", "and", "was", "it", "paris",
          "france", "capital", "tower", "eiffel", "built", "1889", "berlin", "word"]


def vocabulary() -> dict[str, int]:
    return {token: i for i, token in enumerate(_SPECIALS + _WORDS)}


def write_checker_directory(directory: Path, *, labels: int = 2, supported_label: int = 1,
                            token_type_ids: bool = True, first_segment_only: bool = False,
                            output: str = "logits", tokenizer: Path | None = None,
                            config: Mapping[str, object] | None = None) -> Path:
    """Write ``model.onnx``, ``tokenizer.json`` and ``checker.json`` into ``directory``.

    ``tokenizer``: a ``tokenizer.json`` to use instead of the small word-level one
    (``yes`` and ``no`` must be whole tokens of it). ``token_type_ids``: whether the
    model takes that input (BERT-like) or not (RoBERTa-like). ``first_segment_only``:
    only the pair's first text counts (needs ``token_type_ids``), so that the pair
    order shows in the output. ``config``: fields of ``checker.json`` over the
    defaults (a value ``None`` removes the field).
    """
    from tokenizers import Tokenizer

    directory.mkdir(parents=True, exist_ok=True)
    words = Tokenizer.from_file(str(tokenizer)) if tokenizer else _tokenizer()
    (directory / "model.onnx").write_bytes(_model(words, labels, supported_label,
                                                  token_type_ids, first_segment_only, output))
    words.save(str(directory / "tokenizer.json"))
    fields: dict[str, object] = {"supported_label": supported_label, "score": "softmax",
                                 "pair_order": "window_first", "max_length": 64}
    for key, value in (config or {}).items():
        if value is None:
            fields.pop(key, None)
        else:
            fields[key] = value
    (directory / "checker.json").write_text(json.dumps(fields), encoding="utf-8")
    return directory


def _tokenizer() -> Any:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    tokenizer = Tokenizer(models.WordLevel(vocabulary(), unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    return tokenizer


def _model(words: Any, labels: int, supported_label: int, token_type_ids: bool,
           first_segment_only: bool, output: str) -> bytes:
    try:
        from onnx import TensorProto, helper, numpy_helper
    except ImportError as exc:
        raise ImportError("building a test checker model needs onnx: "
                          "pip install 'ragas-trace[dev]'") from exc
    table = np.zeros((words.get_vocab_size(), labels), dtype=np.float32)
    for word, label in ((SUPPORT, supported_label), (DENY, (supported_label + 1) % labels)):
        if words.token_to_id(word) is None:
            raise ValueError(f"the tokenizer has no token {word!r}")
        table[words.token_to_id(word), label] = STRENGTH
    ids = ["input_ids", "attention_mask"] + (["token_type_ids"] if token_type_ids else [])
    nodes = [
        helper.make_node("Gather", ["table", "input_ids"], ["vectors"]),
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
    ]
    weight = "mask_f"
    if first_segment_only:  # weight 1 - type id: the second text's tokens count 0
        nodes += [helper.make_node("Cast", ["token_type_ids"], ["types_f"], to=TensorProto.FLOAT),
                  helper.make_node("Sub", ["one", "types_f"], ["first"]),
                  helper.make_node("Mul", ["mask_f", "first"], ["weight"])]
        weight = "weight"
    nodes += [
        helper.make_node("Unsqueeze", [weight, "axis2"], ["weight3"]),
        helper.make_node("Mul", ["vectors", "weight3"], ["weighted"]),
        helper.make_node("ReduceSum", ["weighted", "axis1"], ["total"], keepdims=0),
        helper.make_node("ReduceSum", [weight, "axis1"], ["count"], keepdims=1),
        helper.make_node("Max", ["count", "one"], ["count1"]),
        helper.make_node("Div", ["total", "count1"], [output]),
    ]
    graph = helper.make_graph(
        nodes, "tiny_checker",
        [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "width"])
         for name in ids],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, ["batch", labels])],
        initializer=[numpy_helper.from_array(table, "table"),
                     numpy_helper.from_array(np.array(1.0, dtype=np.float32), "one"),
                     numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"),
                     numpy_helper.from_array(np.array([2], dtype=np.int64), "axis2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # readable by onnxruntime 1.17, the extra's floor
    return bytes(model.SerializeToString())
