import os
import zlib
from collections import Counter

from ragas_trace.testing.trace_router import HashRing


def _go_find(items: list[tuple[int, str]], pos: int) -> str:
    """The loadbalancing exporter's bsearch, transcribed branch by branch."""
    def bsearch(left: list[tuple[int, str]], right: list[tuple[int, str]]) -> tuple[int, str]:
        if left[-1][0] == pos:
            return left[-1]
        if right[0][0] == pos:
            return right[0]
        if pos > right[-1][0]:
            return left[0]
        if pos > left[-1][0]:
            if len(right) == 1:
                return right[0]
            return bsearch(right[:len(right) // 2], right[len(right) // 2:])
        if len(left) == 1:
            return left[0]
        return bsearch(left[:len(left) // 2], left[len(left) // 2:])
    return bsearch(items[:len(items) // 2], items[len(items) // 2:])[1]


def test_ring_matches_the_collector_algorithm() -> None:
    endpoints = ["gateway-0:4317", "gateway-1:4317", "gateway-2:4317"]
    ring = HashRing(endpoints)
    items: list[tuple[int, str]] = []
    used: set[int] = set()
    for endpoint in endpoints:
        for i in range(100):
            pos = zlib.crc32(endpoint.encode() + bytes([i])) % 36000
            if pos not in used:
                used.add(pos)
                items.append((pos, endpoint))
    items.sort()
    share: Counter[str] = Counter()
    for _ in range(3000):
        trace_id = os.urandom(16)
        expected = _go_find(items, zlib.crc32(trace_id) % 36000)
        assert ring.endpoint_for(trace_id) == expected
        share[expected] += 1
    assert all(n > 500 for n in share.values()), share
