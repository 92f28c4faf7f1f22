from collections.abc import Iterator

import pytest
from gateway_helpers import settings

from ragas_trace.gateway.service import Gateway
from ragas_trace.testing.otlp_receiver import OtlpGrpcReceiver


@pytest.fixture
def downstream() -> Iterator[OtlpGrpcReceiver]:
    with OtlpGrpcReceiver() as receiver:
        yield receiver


@pytest.fixture
def gateway(downstream: OtlpGrpcReceiver) -> Iterator[Gateway]:
    with Gateway(settings(forward_endpoint=downstream.endpoint)) as gw:
        yield gw
