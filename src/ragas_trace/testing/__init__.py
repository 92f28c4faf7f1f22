"""Test helpers shipped with the package: the project's own tests use them, and so
can users testing their instrumentation. Nothing here touches the network beyond
127.0.0.1."""

from ragas_trace.testing.tracing import InMemoryTracing

__all__ = ["InMemoryTracing"]
