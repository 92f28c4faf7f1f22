"""ragas-trace: Ragas metrics on live OpenTelemetry traces of RAG apps."""

from ragas_trace.extract import extract_record
from ragas_trace.record import Context, RagRecord
from ragas_trace.results import JudgeUsage, Metric, MetricResult, MetricStatus, Scores
from ragas_trace.scoring import ascore, score
from ragas_trace.setup import RagasTrace, setup

__all__ = [
    "Context",
    "JudgeUsage",
    "Metric",
    "MetricResult",
    "MetricStatus",
    "RagRecord",
    "RagasTrace",
    "Scores",
    "ascore",
    "extract_record",
    "score",
    "setup",
]
