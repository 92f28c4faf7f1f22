"""A checker the user brings: an ONNX sequence classifier over (window, statement) pairs.

Any NLI or fact-checking model exported to ONNX works (an NLI cross-encoder, a
MiniCheck-style checker), from a directory that holds:

- ``model.onnx``: inputs ``input_ids``, ``attention_mask`` and, if the model has them,
  ``token_type_ids``; an output (``logits`` unless ``checker.json`` names another) of
  shape ``[batch, labels]``;
- ``tokenizer.json``: the model's tokenizer in the Hugging Face ``tokenizers`` format,
  with its pair template;
- ``checker.json``: how to read the model (``CheckerConfig``).

Run with onnxruntime and tokenizers only. Each statement is read against each of its
windows; its probability is the largest over them, and the window that gave it is its
evidence. A statement longer than half of ``max_length`` is cut to half; the window is
cut to fit the rest.

Bounds. Memory: one model run holds at most ``batch_size`` pairs of ``max_length``
tokens. Time: statements are checked in order; a call reads at most ``max_pairs``
pairs and starts no model run after ``deadline_s`` (a run already started finishes).
A statement whose windows were not all read gets ``NOT_CHECKED`` (probability NaN,
window -1): never a guessed probability, so the caller can record it as not checked.
A statement with no windows is not supported by anything: probability 0, whatever the
bounds (it needs no model run).
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from time import monotonic
from typing import Any

import numpy as np

from ragas_trace._surrogates import without_surrogates
from ragas_trace.judges.local.checker import Check, Statement, Window
from ragas_trace.judges.local.embedder import cpu_session

logger = logging.getLogger(__name__)

MODEL_FILE, TOKENIZER_FILE, CONFIG_FILE = "model.onnx", "tokenizer.json", "checker.json"
NOT_CHECKED = Check(probability=math.nan, window=-1, evidence="")
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_INT_TYPES = {"tensor(int64)": np.int64, "tensor(int32)": np.int32}


class CheckerDirectoryError(ValueError):
    """The checker directory, or a file in it, is missing or not what it should be."""


@dataclass(frozen=True, slots=True)
class CheckerConfig:
    """``checker.json``: how to read the model's output and feed it pairs."""

    supported_label: int  # the label that means supported (an NLI model: entailment)
    score: str = "softmax"  # "softmax" over all labels, or "sigmoid" of the one logit
    pair_order: str = "window_first"  # or "statement_first": which text is the first
    max_length: int = 512  # tokens of a pair, special tokens included
    num_labels: int | None = None  # when given, the model must output exactly this many
    output: str = "logits"  # the model output holding the labels' logits
    name: str | None = None  # shown in the checker's name (default: the directory's)

    @classmethod
    def read(cls, path: Path) -> CheckerConfig:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CheckerDirectoryError(f"{path}: cannot read it as JSON: {exc}") from exc
        if not isinstance(raw, dict):
            raise CheckerDirectoryError(f"{path}: expected a JSON object")
        unknown = sorted(set(raw) - set(cls.__slots__))
        if unknown:
            raise CheckerDirectoryError(
                f"{path}: unknown field(s) {unknown}; known: {sorted(cls.__slots__)}")
        if "supported_label" not in raw:
            raise CheckerDirectoryError(
                f"{path}: 'supported_label' is required (the index of the label that "
                "means supported; for an NLI model, entailment)")

        def bad(field: str, expected: str) -> CheckerDirectoryError:
            return CheckerDirectoryError(
                f"{path}: '{field}' must be {expected}, got {raw[field]!r}")

        def whole(field: str, least: int) -> None:
            value = raw.get(field)
            if field in raw and value is not None and (
                    not isinstance(value, int) or isinstance(value, bool) or value < least):
                raise bad(field, f"an integer >= {least}")

        whole("supported_label", 0)
        whole("max_length", 8)
        whole("num_labels", 1)
        if raw.get("score", "softmax") not in ("softmax", "sigmoid"):
            raise bad("score", '"softmax" or "sigmoid"')
        if raw.get("pair_order", "window_first") not in ("window_first", "statement_first"):
            raise bad("pair_order", '"window_first" or "statement_first"')
        for field in ("output", "name"):
            if field in raw and not (isinstance(raw[field], str) and raw[field].strip()):
                raise bad(field, "a non-empty string")
        config = cls(**raw)
        if config.num_labels is not None and config.supported_label >= config.num_labels:
            raise bad("supported_label", f"below num_labels ({config.num_labels})")
        return config


class OnnxChecker:
    """A ``Checker`` from a model directory; safe to call from several threads at once
    (onnxruntime sessions run concurrently; the tokenizer is not changed after load).

    ``threads``: onnxruntime's threads within one model run (the judge already checks
    several records at once on its own threads).
    """

    def __init__(self, directory: Path, config: CheckerConfig, session: Any, tokenizer: Any,
                 *, batch_size: int, max_pairs: int, deadline_s: float) -> None:
        self._config = config
        self._session = session
        self._tokenizer = tokenizer
        self._name = f"onnx:{config.name or directory.resolve().name}"
        self._model = directory / MODEL_FILE
        self._batch_size, self._max_pairs, self._deadline_s = batch_size, max_pairs, deadline_s
        self._types = {i.name: _INT_TYPES[i.type] for i in session.get_inputs()}
        self._pad_id = int((tokenizer.padding or {}).get("pad_id", 0))
        budget = config.max_length - tokenizer.num_special_tokens_to_add(True)
        self._statement_tokens = budget // 2
        self._lock = threading.Lock()
        self._unchecked = 0
        self._labels = self._probe()

    @classmethod
    def from_directory(cls, path: str | Path, *, batch_size: int = 8, max_pairs: int = 64,
                       deadline_s: float = 20.0, threads: int = 1) -> OnnxChecker:
        """Load and check the directory now: every problem is a ``CheckerDirectoryError``
        naming the file and what is wrong with it."""
        for value, name in ((batch_size, "batch_size"), (max_pairs, "max_pairs"),
                            (threads, "threads")):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not isinstance(deadline_s, int | float) or not deadline_s > 0:
            raise ValueError(f"deadline_s must be a positive number, got {deadline_s!r}")
        try:
            import onnxruntime  # noqa: F401  (here, so that the error names the extra)
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ImportError("the ONNX checker needs the 'local' extra: "
                              "pip install 'ragas-trace[local]'") from exc
        directory = Path(path)
        if not directory.is_dir():
            raise CheckerDirectoryError(f"{directory}: not a directory (expected one holding "
                                        f"{MODEL_FILE}, {TOKENIZER_FILE} and {CONFIG_FILE})")
        for file in (MODEL_FILE, TOKENIZER_FILE, CONFIG_FILE):
            if not (directory / file).is_file():
                raise CheckerDirectoryError(f"{directory / file}: missing")
        config = CheckerConfig.read(directory / CONFIG_FILE)
        try:
            tokenizer = Tokenizer.from_file(str(directory / TOKENIZER_FILE))
        except Exception as exc:  # the tokenizers library raises a bare Exception
            raise CheckerDirectoryError(
                f"{directory / TOKENIZER_FILE}: not a tokenizers file: {exc}") from exc
        if config.max_length - tokenizer.num_special_tokens_to_add(True) < 4:
            raise CheckerDirectoryError(f"{directory / CONFIG_FILE}: 'max_length' "
                                        f"{config.max_length} leaves no room for a pair")
        tokenizer.no_padding()  # padded per model run instead
        # The window side is cut; the statement already fits in half (``_encode``).
        tokenizer.enable_truncation(config.max_length, strategy="only_first" if
                                    config.pair_order == "window_first" else "only_second")
        try:
            session = cpu_session(directory / MODEL_FILE, threads)
        except Exception as exc:  # onnxruntime's own error types, per failure
            raise CheckerDirectoryError(
                f"{directory / MODEL_FILE}: onnxruntime cannot load it: {exc}") from exc
        _check_signature(directory / MODEL_FILE, session, config)
        return cls(directory, config, session, tokenizer, batch_size=batch_size,
                   max_pairs=max_pairs, deadline_s=float(deadline_s))

    @property
    def name(self) -> str:
        return self._name

    @property
    def unchecked(self) -> int:
        """Statements returned ``NOT_CHECKED`` so far (past ``max_pairs`` or the deadline)."""
        return self._unchecked

    def check(self, statements: Sequence[Statement],
              windows: Sequence[Sequence[Window]]) -> list[Check]:
        if len(statements) != len(windows):
            raise ValueError(f"{len(statements)} statements but {len(windows)} window lists")
        deadline = monotonic() + self._deadline_s
        # (statement, window) pairs in statement order, whole statements up to the cap.
        pairs: list[tuple[int, int]] = []
        for i, own in enumerate(windows):
            if len(pairs) + len(own) > self._max_pairs:
                break
            pairs.extend((i, j) for j in range(len(own)))
        encodings = self._encode(statements, windows, pairs)
        probabilities = np.full(len(pairs), np.nan)
        read = 0
        while read < len(pairs) and monotonic() < deadline:
            batch = encodings[read:read + self._batch_size]
            probabilities[read:read + len(batch)] = self._run(batch)
            read += len(batch)
        checks: list[Check] = []
        start = 0
        for own in windows:
            end = start + len(own)
            mine = probabilities[start:end]
            if not own:
                checks.append(Check(0.0, -1, ""))
            elif end > read or np.isnan(mine).any():
                # Past the cap or the deadline (not all its pairs read), or a NaN logit.
                checks.append(NOT_CHECKED)
            else:
                best = int(np.argmax(mine))
                checks.append(Check(float(mine[best]), best, own[best].text))
            start = end
        self._count_unchecked(sum(c is NOT_CHECKED for c in checks))
        return checks

    def _encode(self, statements: Sequence[Statement], windows: Sequence[Sequence[Window]],
                pairs: list[tuple[int, int]]) -> list[Any]:
        """Token ids of each pair; a statement over half the budget is cut to half, so
        that cutting the window side alone always fits the pair in ``max_length``."""
        if not pairs:
            return []
        used = sorted({i for i, _ in pairs})
        texts = {i: without_surrogates(statements[i].text) for i in used}
        alone = self._tokenizer.encode_batch([texts[i] for i in used], add_special_tokens=False)
        for i, encoding in zip(used, alone, strict=True):
            if len(encoding.ids) > self._statement_tokens:
                texts[i] = texts[i][:encoding.offsets[self._statement_tokens - 1][1]]
        window_first = self._config.pair_order == "window_first"
        inputs = []
        for i, j in pairs:
            window = without_surrogates(windows[i][j].text)
            inputs.append((window, texts[i]) if window_first else (texts[i], window))
        return list(self._tokenizer.encode_batch(inputs))

    def _run(self, encodings: Sequence[Any]) -> np.ndarray[Any, np.dtype[np.float64]]:
        """The supported probability of each pair of one model run."""
        logits = self._logits(encodings)
        if logits.shape[1] != self._labels:
            raise RuntimeError(f"{self._model}: output {self._config.output!r} gave "
                               f"{logits.shape[1]} labels, {self._labels} at load")
        label = self._config.supported_label
        if self._config.score == "sigmoid":
            return 0.5 * (1.0 + np.tanh(0.5 * logits[:, label]))  # sigmoid, never overflows
        shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
        result: np.ndarray[Any, np.dtype[np.float64]] = shifted[:, label] / shifted.sum(axis=1)
        return result

    def _logits(self, encodings: Sequence[Any]) -> np.ndarray[Any, np.dtype[np.float64]]:
        width = max(len(e.ids) for e in encodings)
        feed = {}
        for name, dtype in self._types.items():
            array = np.full((len(encodings), width), self._pad_id if name == "input_ids" else 0,
                            dtype=dtype)
            for row, encoding in enumerate(encodings):
                values = {"input_ids": encoding.ids, "attention_mask": encoding.attention_mask,
                          "token_type_ids": encoding.type_ids}[name]
                array[row, :len(values)] = values
            feed[name] = array
        (raw,) = self._session.run([self._config.output], feed)
        logits: np.ndarray[Any, np.dtype[np.float64]] = np.asarray(raw, dtype=np.float64)
        if logits.ndim != 2 or logits.shape[0] != len(encodings):
            raise CheckerDirectoryError(
                f"{self._model}: output {self._config.output!r} has shape {logits.shape} "
                f"for {len(encodings)} pair(s); expected [pairs, labels]")
        return logits

    def _probe(self) -> int:
        """Run one pair at load: the label count, checked against the config."""
        config, where = self._config, self._model.parent / CONFIG_FILE
        try:
            labels = int(self._logits(self._encode([Statement("a")], [[Window("b")]],
                                                   [(0, 0)])).shape[1])
        except CheckerDirectoryError:
            raise
        except Exception as exc:  # onnxruntime's own error types, per failure
            raise CheckerDirectoryError(f"{self._model}: a test pair failed to run (is "
                                        f"{TOKENIZER_FILE} this model's?): {exc}") from exc
        if config.num_labels is not None and labels != config.num_labels:
            raise CheckerDirectoryError(f"{self._model}: outputs {labels} labels, but {where} "
                                        f"says num_labels {config.num_labels}")
        if config.supported_label >= labels:
            raise CheckerDirectoryError(f"{where}: supported_label {config.supported_label} "
                                        f"but {self._model} outputs {labels} label(s)")
        if config.score == "softmax" and labels < 2:
            raise CheckerDirectoryError(
                f"{where}: score 'softmax' over the model's one label is always 1; "
                "use \"score\": \"sigmoid\"")
        return labels

    def _count_unchecked(self, count: int) -> None:
        if not count:
            return
        with self._lock:
            first = not self._unchecked
            self._unchecked += count
        if first:  # once: the caller records each one as not checked
            logger.warning("%s: %d statement(s) not checked (over max_pairs %d or "
                           "deadline %.1f s); counted in .unchecked from now on",
                           self._name, count, self._max_pairs, self._deadline_s)


def _check_signature(model: Path, session: Any, config: CheckerConfig) -> None:
    """The model's inputs are the tokenizer's (integer ids), its output is there."""
    inputs = {i.name: i.type for i in session.get_inputs()}
    unknown = sorted(set(inputs) - set(_INPUTS))
    if unknown or "input_ids" not in inputs or "attention_mask" not in inputs:
        raise CheckerDirectoryError(
            f"{model}: takes inputs {sorted(inputs)}; a checker model takes input_ids, "
            "attention_mask and optionally token_type_ids")
    for name, kind in inputs.items():
        if kind not in _INT_TYPES:
            raise CheckerDirectoryError(f"{model}: input {name} is {kind}, expected int64 "
                                        "or int32")
    outputs = {o.name for o in session.get_outputs()}
    if config.output not in outputs:
        raise CheckerDirectoryError(
            f"{model}: no output named {config.output!r} (it has {sorted(outputs)}); "
            f"set \"output\" in {CONFIG_FILE}")
