"""Our own LangChain collector in an app process exporting over OTLP to the gateway:
the gateway scores what the in-process scorer would have."""

from gateway_helpers import settings
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from ragas_trace import semconv as sc
from ragas_trace.collectors.langchain import RagasCallbackHandler
from ragas_trace.demo.app import APP_NAME, build_chain
from ragas_trace.demo.corpus import QUESTIONS
from ragas_trace.gateway.service import Gateway
from ragas_trace.testing.otlp_receiver import OtlpGrpcReceiver


def test_langchain_collector_spans_are_scored_by_the_gateway(
        downstream: OtlpGrpcReceiver) -> None:
    with Gateway(settings(forward_endpoint=downstream.endpoint, judge="local",
                          sample_rate=1.0)) as gateway:
        assert gateway.grpc is not None
        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(
            OTLPSpanExporter(endpoint=gateway.grpc.endpoint, insecure=True),
            max_export_batch_size=3))  # a request's spans split over several batches
        handler = RagasCallbackHandler(tracer_provider=provider, app_name=APP_NAME)
        chain = build_chain()
        for question in QUESTIONS[:4]:
            chain.invoke(question.text, config={"callbacks": [handler]})
        assert provider.force_flush(10_000)

        def scored(spans: list) -> bool:
            return sum(1 for s in spans if sc.RAGAS_FAITHFULNESS in s.attributes) == 4
        assert downstream.wait_for(scored, timeout=30)
    spans = downstream.spans()
    roots = [s for s in spans if sc.RAGAS_EVALUATION_STATUS in s.attributes
             and s.attributes.get(sc.SPAN_KIND) != sc.KIND_EVALUATOR]
    assert len(roots) == 4
    assert len({(s.trace_id, s.span_id) for s in spans}) == len(spans)
    for root in roots:
        assert root.attributes[sc.RAGAS_APP_NAME] == APP_NAME
        assert root.attributes[sc.RAGAS_EVALUATION_STATUS] == "scored"
        # The passages reached the judge: the retriever spans were reassembled.
        assert root.attributes[sc.RAGAS_CONTEXT_SENTENCES] > 0
