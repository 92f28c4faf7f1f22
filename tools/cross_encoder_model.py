"""The model side of the cross-encoder experiment (issue 33): choosing training pairs
from a prepared pool, fine-tuning all-MiniLM-L6-v2 on them, predicting, exporting to
int8 ONNX. It imports no ``ragas_trace`` (and no judge data), so that it also runs
where only PyTorch is, on a prepared file: ``tools/train_cross_encoder.py`` prepares
the pool and the held-out items and measures what this module predicts.

    # where only PyTorch is: train each run of a plan, predict its held-out items
    python tools/cross_encoder_model.py --prepared P.json.gz --base B --plan plan.json \
        --out DIR [--device cuda]

A plan is a list of runs ``{"name", "train_folds", "predict_folds", "config"}``, or
``{"select": [names], "then": [runs]}``: the runs of ``then`` take the config of the
best of ``select`` (mean over data sets of the AUROC of the answers' lowest statement
probability on their predicted fold), so that a sweep chooses on folds it does not
report.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from itertools import zip_longest
from pathlib import Path
from typing import Any

import numpy as np

SEED = 13


@dataclass(frozen=True)
class Config:
    """Hyper-parameters. The defaults are what ``train_cross_encoder.py`` runs: the
    sweep's choice (``cross_encoder_plan.json``, chosen on fold 3), 24,000 pair-steps,
    about 80 minutes on 2 CPU cores at the 5 pairs/s measured for full fine-tuning."""

    pairs: int = 12_000
    synthetic_share: float = 0.5  # of pairs: synthetic negatives with their positives
    epochs: int = 2
    max_tokens: int = 128  # statement + window, word pieces; the longer is cut first
    frozen_layers: int = 0  # encoder layers kept as pre-trained (the embeddings always)
    batch: int = 16
    lr: float = 3e-5
    warmup: float = 0.06  # share of steps
    weight_decay: float = 0.01
    seed: int = SEED


@dataclass(frozen=True)
class Pair:
    statement: str
    window: str
    label: int
    origin: str  # the data set, or "synthetic-<data set>"
    fold: int


@dataclass
class Item:
    """A held-out answer: its statements with their windows, and what the report needs."""

    id: str
    dataset: str
    fold: int
    hallucinated: bool
    statements: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Prepared:
    pool: list[Pair]  # real labelled statements, then synthetic (positive, negative) pairs
    items: list[Item]
    counts: dict[str, Any]


# The prepared file --------------------------------------------------------------------

def save_prepared(prepared: Prepared, path: Path) -> None:
    windows: dict[str, int] = {}

    def w(text: str) -> int:
        return windows.setdefault(text, len(windows))

    doc = {"pool": [[p.statement, w(p.window), p.label, p.origin, p.fold]
                    for p in prepared.pool],
           "items": [[i.id, i.dataset, i.fold, i.hallucinated,
                      [[s, w(win)] for s, win in i.statements]] for i in prepared.items],
           "counts": prepared.counts}
    doc["windows"] = list(windows)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False)


def load_prepared(path: Path) -> Prepared:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    win = doc["windows"]
    return Prepared(
        pool=[Pair(s, win[w], int(y), o, int(k)) for s, w, y, o, k in doc["pool"]],
        items=[Item(i, d, int(k), bool(h), [(s, win[w]) for s, w in st])
               for i, d, k, h, st in doc["items"]],
        counts=doc["counts"])


# Choosing the training pairs ----------------------------------------------------------

def select_pairs(pool: Sequence[Pair], folds: Sequence[int], config: Config
                 ) -> list[Pair]:
    """``config.pairs`` pairs of the given folds: the real ones shared equally among the
    data sets (negatives first, so that RAGTruth's many positives do not crowd out the
    QA sets), the synthetic ones round-robin over the data sets, each negative beside
    the positive it was made from."""
    rng = random.Random(config.seed)
    chosen_folds = set(folds)
    real = [p for p in pool if p.fold in chosen_folds and not p.origin.startswith("synthetic")]
    rng.shuffle(real)
    n_synthetic = int(config.pairs * config.synthetic_share)
    n_real = config.pairs - n_synthetic
    by_set: dict[str, list[Pair]] = defaultdict(list)
    for p in real:
        by_set[p.origin].append(p)
    quota = n_real // max(1, len(by_set))
    chosen: list[Pair] = []
    for rows in by_set.values():
        neg = [p for p in rows if p.label == 0]
        pos = [p for p in rows if p.label == 1]
        take_neg = neg[:quota // 2 + max(0, quota // 2 - len(pos))]
        chosen += take_neg + pos[:quota - len(take_neg)]
    if len(chosen) < n_real:
        taken = {id(p) for p in chosen}
        chosen += [p for p in real if id(p) not in taken][:n_real - len(chosen)]
    synthetic: dict[str, list[tuple[Pair, Pair]]] = defaultdict(list)
    rows = [p for p in pool if p.fold in chosen_folds and p.origin.startswith("synthetic")]
    for good, bad in zip(rows[0::2], rows[1::2], strict=True):
        synthetic[good.origin].append((good, bad))
    for twins in synthetic.values():
        rng.shuffle(twins)
    twins = [t for group in zip_longest(*synthetic.values()) for t in group if t]
    for good, bad in twins[:n_synthetic // 2]:
        chosen += [good, bad]
    return chosen


# Model --------------------------------------------------------------------------------

def tokenizer(model_dir: Path, max_tokens: int) -> Any:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.enable_truncation(max_tokens, strategy="longest_first")
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


def batches(pairs: Sequence[Pair], tok: Any, size: int, rng: random.Random
            ) -> list[list[Pair]]:
    """Shuffled batches of pairs of similar length (less padding)."""
    order = list(pairs)
    rng.shuffle(order)
    lengths = [len(e.ids) for e in tok.encode_batch([(p.statement, p.window or ".")
                                                      for p in order])]
    by_id = {id(p): n for p, n in zip(order, lengths, strict=True)}
    out: list[list[Pair]] = []
    chunk = size * 50
    for i in range(0, len(order), chunk):
        part = sorted(order[i:i + chunk], key=lambda p: by_id[id(p)])
        out += [part[j:j + size] for j in range(0, len(part), size)]
    rng.shuffle(out)
    return out


def base_model(model_dir: Path) -> Any:
    """The pre-trained encoder with a fresh one-logit head. ``model_dir`` holds either
    the package's files (``model.safetensors``) or a compact copy
    (``train_cross_encoder.py --compact-base``: fp16, word-embedding rows of the
    prepared texts only)."""
    from transformers import BertConfig, BertForSequenceClassification

    compact = model_dir / "compact.npz"
    if not compact.exists():
        return BertForSequenceClassification.from_pretrained(str(model_dir), num_labels=1)
    import torch

    config = BertConfig.from_pretrained(str(model_dir), num_labels=1)
    model = BertForSequenceClassification(config)
    arrays = np.load(compact)
    rows = arrays["word_embedding_rows"]
    state = {k: torch.from_numpy(arrays[k].astype(np.float32)) for k in arrays.files
             if k not in ("word_embedding_rows", "word_embeddings")}
    table = np.zeros((config.vocab_size, config.hidden_size), dtype=np.float32)
    table[rows] = arrays["word_embeddings"].astype(np.float32)
    state["bert.embeddings.word_embeddings.weight"] = torch.from_numpy(table)
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected and all(k.startswith("classifier") for k in missing), missing
    return model


def train(pairs: Sequence[Pair], model_dir: Path, tok: Any, config: Config,
          device: str = "cpu", threads: int = 2, log_every: int = 20,
          progress: Callable[[dict[str, Any]], None] = print) -> tuple[Any, dict[str, Any]]:
    """The fine-tuned model and its training figures; ``progress`` gets them every
    ``log_every`` steps, so that a run stopped by its time budget leaves them."""
    import torch

    torch.manual_seed(config.seed)
    if device == "cpu":
        torch.set_num_threads(threads)
    model = base_model(model_dir).to(device)
    for param in model.bert.embeddings.parameters():
        param.requires_grad = False
    for layer in model.bert.encoder.layer[:config.frozen_layers]:
        for param in layer.parameters():
            param.requires_grad = False
    model.train()
    rng = random.Random(config.seed)
    plan = [b for _ in range(config.epochs) for b in batches(pairs, tok, config.batch, rng)]
    trained = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    decay = [p for n, p in trained if "bias" not in n and "LayerNorm" not in n]
    rest = [p for n, p in trained if "bias" in n or "LayerNorm" in n]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": config.weight_decay},
                             {"params": rest, "weight_decay": 0.0}], lr=config.lr)
    warm = max(1, int(config.warmup * len(plan)))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (len(plan) - s) / (len(plan) - warm))))
    loss_fn = torch.nn.BCEWithLogitsLoss()
    start = time.monotonic()
    losses: list[torch.Tensor] = []
    curve: list[dict[str, float]] = []
    for step, batch in enumerate(plan):
        x = {k: torch.from_numpy(v).to(device) for k, v in
             encode(tok, [(p.statement, p.window) for p in batch]).items()}
        y = torch.tensor([float(p.label) for p in batch], device=device)
        loss = loss_fn(model(**x).logits.squeeze(-1), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
        losses.append(loss.detach())
        if (step + 1) % log_every == 0:
            done = sum(len(b) for b in plan[:step + 1])
            recent = float(torch.stack(losses[-log_every:]).mean())
            curve.append({"step": step + 1, "loss": round(recent, 4),
                          "pairs_per_second": round(done / (time.monotonic() - start), 2)})
            progress({"status": f"step {step + 1} of {len(plan)}", "loss_curve": curve})
    seconds = time.monotonic() - start
    model.eval()
    final = float(torch.stack(losses[-50:]).mean()) if losses else float("nan")
    return model, {"status": "done", "loss_curve": curve[:: max(1, len(curve) // 40)],
                   "steps": len(plan), "pairs": len(pairs), "seconds": round(seconds, 1),
                   "pairs_per_second": round(sum(len(b) for b in plan) / seconds, 2),
                   "final_loss": round(final, 4), "device": device}


def predict(model: Any, tok: Any, pairs: Sequence[tuple[str, str]], device: str = "cpu",
            batch: int = 64) -> np.ndarray:
    """P(supported) of each pair, with the PyTorch model."""
    import torch

    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
    probs = np.zeros(len(pairs))
    with torch.no_grad():
        for i in range(0, len(order), batch):
            idx = order[i:i + batch]
            x = {k: torch.from_numpy(v).to(device) for k, v in
                 encode(tok, [pairs[j] for j in idx]).items()}
            probs[idx] = torch.sigmoid(model(**x).logits[:, 0].float()).cpu().numpy()
    return probs


def predict_items(model: Any, tok: Any, items: Sequence[Item], device: str = "cpu"
                  ) -> dict[str, list[float]]:
    """Each item's statement probabilities, in statement order."""
    flat = [(i.id, s, w) for i in items for s, w in i.statements]
    probs = predict(model, tok, [(s, w) for _, s, w in flat], device)
    out: dict[str, list[float]] = {i.id: [] for i in items}
    for (iid, _, _), p in zip(flat, probs, strict=True):
        out[iid].append(round(float(p), 5))
    return out


class OnnxScorer:
    """P(supported) with the exported model, in onnxruntime: what scoring would run."""

    def __init__(self, path: Path, tok: Any, threads: int = 2) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        self.session = ort.InferenceSession(str(path), options,
                                            providers=["CPUExecutionProvider"])
        self.tok = tok

    def probabilities(self, pairs: Sequence[tuple[str, str]], batch: int = 32) -> np.ndarray:
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        probs = np.zeros(len(pairs))
        for i in range(0, len(order), batch):
            idx = order[i:i + batch]
            logits = self.session.run(["logits"], encode(self.tok, [pairs[j] for j in idx]))[0]
            probs[idx] = 1.0 / (1.0 + np.exp(-logits[:, 0]))
        return probs


def export(model: Any, tok: Any, out: Path, sample: Sequence[tuple[str, str]]
           ) -> dict[str, Any]:
    """``out/cross_encoder.onnx`` (int8) beside its fp32 source, and how far each is
    from PyTorch on ``sample``."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = model.to("cpu").eval()
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
    ref = predict(model, tok, sample)
    diffs = {name: round(float(np.max(np.abs(OnnxScorer(path, tok).probabilities(sample)
                                                  - ref))), 5)
             for name, path in (("fp32", fp32), ("int8", int8))}
    return {"opset": 17, "int8_bytes": int8.stat().st_size, "fp32_bytes": fp32.stat().st_size,
            "check_pairs": len(sample), "max_abs_probability_diff_vs_pytorch": diffs,
            "quantisation": "onnxruntime.quantization.quantize_dynamic, QInt8 weights"}


def save_trained(model: Any, folder: Path, part_bytes: int = 12_000_000) -> None:
    """The fine-tuned weights in fp16 npz parts of at most ``part_bytes``, all but the
    word embeddings (frozen, so the base model's): what a device run sends back."""
    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().to("cpu").half().numpy() for k, v in model.state_dict().items()
             if k != "bert.embeddings.word_embeddings.weight"}
    part: dict[str, np.ndarray] = {}
    parts = 0
    for key, value in state.items():
        if part and sum(v.nbytes for v in part.values()) + value.nbytes > part_bytes:
            np.savez(folder / f"part{parts}.npz", **part)
            part, parts = {}, parts + 1
        part[key] = value
    np.savez(folder / f"part{parts}.npz", **part)


# Running a plan -----------------------------------------------------------------------

def rank_auroc(scores: Sequence[float], bad: Sequence[bool]) -> float:
    """P(a hallucinated answer scores below a clean one), ties half; for choosing among
    runs only (the report measures with ``bench/local_judge_report.py``'s)."""
    s = np.asarray(scores, dtype=float)
    b = np.asarray(bad, dtype=bool)
    if b.all() or not b.any():
        return float("nan")
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s))
    sorted_s = s[order]
    i = 0
    while i < len(s):
        j = i
        while j < len(s) and sorted_s[j] == sorted_s[i]:
            j += 1
        ranks[order[i:j]] = (i + j + 1) / 2.0
        i = j
    good = ~b
    return float((ranks[good].sum() - good.sum() * (good.sum() + 1) / 2)
                 / (good.sum() * b.sum()))


def choice_score(items: Sequence[Item], probs: dict[str, list[float]]) -> float:
    """Mean over data sets of the AUROC of each answer's lowest statement probability."""
    by_set: dict[str, list[Item]] = defaultdict(list)
    for i in items:
        if probs.get(i.id):
            by_set[i.dataset].append(i)
    values = [rank_auroc([min(probs[i.id]) for i in rows], [i.hallucinated for i in rows])
              for rows in by_set.values()]
    values = [v for v in values if v == v]
    return float(np.mean(values)) if values else float("nan")


def run_plan(prepared: Prepared, base: Path, plan: list[dict[str, Any]], out: Path,
             device: str, threads: int) -> dict[str, Any]:
    """Every run's figures and predictions, in ``out/runs.json``, rewritten after each
    run so that a plan stopped by its time budget leaves the runs it finished."""
    results: dict[str, Any] = {}
    start = time.monotonic()

    def one(run: dict[str, Any], config: Config) -> None:
        tok = tokenizer(base, config.max_tokens)
        pairs = select_pairs(prepared.pool, run["train_folds"], config)
        model, figures = train(pairs, base, tok, config, device, threads, log_every=50,
                               progress=lambda f: None)
        items = [i for i in prepared.items if i.fold in run.get("predict_folds", [])]
        probs = predict_items(model, tok, items, device)
        results[run["name"]] = {"config": asdict(config), "train_folds": run["train_folds"],
                                "predict_folds": run.get("predict_folds", []),
                                "training": figures,
                                "choice_score": round(choice_score(items, probs), 4),
                                "probabilities": probs}
        if run.get("save"):
            save_trained(model, out / run["name"])
        print(json.dumps({k: v for k, v in results[run["name"]].items()
                          if k not in ("probabilities", "training")}), flush=True)
        (out / "runs.json").write_text(json.dumps(
            {"seconds": round(time.monotonic() - start, 1), "runs": results}))

    for step in plan:
        if "select" in step:
            best = max(step["select"], key=lambda n: results[n]["choice_score"])
            print(f"chosen: {best}", flush=True)
            for run in step["then"]:
                one(run, Config(**results[best]["config"]))
        else:
            one(step, replace(Config(), **step.get("config", {})))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prepared", type=Path, required=True)
    parser.add_argument("--base", type=Path, required=True,
                        help="the base model's folder (package files or compact copy)")
    parser.add_argument("--plan", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    run_plan(load_prepared(args.prepared), args.base, json.loads(args.plan.read_text()),
             args.out, args.device, args.threads)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
