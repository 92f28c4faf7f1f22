"""A bounded, thread-safe LRU of text -> embedding. RAG apps retrieve the same
passages again and again; their sentences are embedded once."""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]


class VectorCache:
    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[str, Vector] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, text: str) -> Vector | None:
        with self._lock:
            vector = self._entries.get(text)
            if vector is not None:
                self._entries.move_to_end(text)
            return vector

    def put(self, text: str, vector: Vector) -> None:
        if self._capacity <= 0:
            return
        with self._lock:
            self._entries[text] = vector
            self._entries.move_to_end(text)
            while len(self._entries) > self._capacity:
                self._entries.popitem(last=False)
