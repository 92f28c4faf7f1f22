import json
import logging

from ragas_trace.gateway.logs import JsonFormatter


def test_json_lines_carry_extra_fields_and_exceptions() -> None:
    record = logging.LogRecord("ragas_trace.gateway", logging.WARNING, __file__, 1,
                               "refused %d", (413,), None)
    record.reason = "too big"
    entry = json.loads(JsonFormatter().format(record))
    assert entry["level"] == "warning"
    assert entry["message"] == "refused 413"
    assert entry["reason"] == "too big"
    assert entry["time"].endswith("Z")
    try:
        raise ValueError("boom")
    except ValueError:
        import sys
        record.exc_info = sys.exc_info()
    assert "ValueError: boom" in json.loads(JsonFormatter().format(record))["exception"]
