"""Service mode (``ragas-trace serve``): an OTLP receiver that scores RAG traces from
any process and forwards every span to the next OTLP hop.

receivers (``grpc_receiver``, ``http_receiver``, with ``decode`` and ``security``)
-> ``ingest`` -> ``convert`` (protobuf -> ``ReceivedSpan``) -> ``assembler`` (trace
reassembly) -> ``scoring`` (the library's ``ScoringSpanProcessor``) -> ``forward``
(bounded queue) -> ``downstream`` (official OTLP exporter). ``service.Gateway``
wires them from ``settings.GatewaySettings``."""
