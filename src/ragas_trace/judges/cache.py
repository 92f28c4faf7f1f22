"""An optional, bounded in-memory cache of judge replies, so that identical records
(the same question, passages and answer, as FAQ-style apps produce all day) are not
paid for twice. Keys hash everything that shapes a reply: model, messages, output
format and limits. Only usable replies are stored."""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from typing import Any

DEFAULT_SIZE = 1024


class ResponseCache:
    """Least-recently-used cache of reply texts and embedding vectors."""

    def __init__(self, max_entries: int = DEFAULT_SIZE) -> None:
        if not isinstance(max_entries, int) or isinstance(max_entries, bool) or max_entries < 1:
            raise ValueError(f"max_entries must be a positive integer, got {max_entries!r}")
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, Any] = OrderedDict()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(**parts: Any) -> str:
        blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()

    def get(self, key: str) -> Any | None:
        with self._lock:
            value = self._entries.get(key)
            if value is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key: str, value: Any) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
