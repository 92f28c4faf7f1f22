"""``ragas-trace score --input FILE`` takes any bytes (issue 30): good record lines
mixed with lines of arbitrary bytes, text that is not UTF-8, JSON of any shape and
records with fields of any type. Every good line is scored, in order; every other
non-blank line is reported on stderr with the file name and its line number; the
exit code is the documented one (0 every line scored, 1 some skipped or nothing
scored); no output file when nothing was scored; never a traceback, a Python errno
or a keyword argument in what the user reads."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from any_text import REGRESSIONS, any_text, mojibake_bytes, scaled
from ragas_trace.cli.main import main
from ragas_trace.testing.scripted_judge import ScriptedJudge

pytestmark = pytest.mark.usefixtures("no_internal_errors")

EXIT_OK, EXIT_SKIPPED_LINES = 0, 1
_BOM = b"\xef\xbb\xbf"


def _good(n: int) -> bytes:
    return json.dumps({"question": f"good-{n}?", "contexts": ["The lake is 40 m deep."],
                       "answer": "It is 40 m deep."}).encode()


_FIELD_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=10**300, max_value=10**400),
    st.floats(), any_text(max_pieces=3, large=False),
    st.lists(st.one_of(any_text(max_pieces=2, large=False), st.integers(),
                       st.dictionaries(st.sampled_from(["content", "id", "score", "metadata"]),
                                       st.one_of(st.none(), st.integers(), st.floats(),
                                                 st.text(max_size=5)), max_size=4)),
             max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2))
_RECORDS = st.dictionaries(
    st.sampled_from(["question", "answer", "contexts", "context", "trace_id", "span_id",
                     "app_name", "framework"]), _FIELD_VALUES, max_size=6).map(
    lambda d: json.dumps(d).encode())
_CORPUS_LINES = [text.encode("utf-8", "surrogatepass").replace(b"\n", b" ")
                 for text in REGRESSIONS]
# Lines (without their line break) of every kind a file may hold.
_LINES = st.one_of(
    st.binary(max_size=60), mojibake_bytes(), _RECORDS,
    any_text(max_pieces=4).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.sampled_from(_CORPUS_LINES),
    st.sampled_from([b"[1, 2]", b'"text"', b"null", b"{}", b'{"question": 5}',
                     b'{"question": "q", "answer": "a", "contexts": 7}', b"[" * 100_000,
                     _BOM, b"\r", b"\x00"]),
).map(lambda line: line.replace(b"\n", b" "))



def _blank(number: int, line: bytes) -> bool:
    """A line the command passes over in silence (documented: blank lines)."""
    if number == 1:
        line = line.removeprefix(_BOM)
    try:
        return not line.decode("utf-8").strip()
    except UnicodeDecodeError:
        return False


# The scripted judge and capsys serve every example: each reads its own output.
@settings(scaled(40), suppress_health_check=[*settings.default.suppress_health_check,
                                             HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.tuples(st.booleans(), _LINES), max_size=8), bom=st.booleans())
@example(lines=[(True, b""), (False, b"\xe9"), (True, b"")], bom=True)
@example(lines=[(False, b"\xff\xfe"), (False, b"[" * 100_000)], bom=False)
@example(lines=[(True, b""), *((False, line) for line in _CORPUS_LINES)], bom=False)
def test_any_bytes_every_good_line_scored_every_bad_line_named(
        judge: ScriptedJudge, capsys: pytest.CaptureFixture[str],
        lines: list[tuple[bool, bytes]], bom: bool) -> None:
    body = [_good(n) if good else line for n, (good, line) in enumerate(lines, 1)]
    content = (_BOM if bom else b"") + b"\n".join(body) + (b"\n" if body else b"")
    with tempfile.TemporaryDirectory() as tmp:
        path, out = Path(tmp) / "records.jsonl", Path(tmp) / "scored.jsonl"
        path.write_bytes(content)
        capsys.readouterr()
        code = main(["score", "--input", str(path), "--output", str(out)])
        err = capsys.readouterr().err
        rows = [json.loads(row) for row in out.read_text(encoding="utf-8").splitlines()] \
            if out.exists() else None

    assert "Traceback" not in err and "Errno" not in err, err
    assert not re.search(r"\b[a-z_]+=", err), err  # no keyword argument
    named = {int(n) for n in re.findall(rf"{re.escape(str(path))}:(\d+):", err)}
    good = {n for n, (is_good, _) in enumerate(lines, 1) if is_good}
    silent = {n for n, line in enumerate(body, 1)
              if n not in good and _blank(n, (_BOM if bom and n == 1 else b"") + line)}
    assert not named & good, err
    assert not named & silent, err
    scored = len(body) - len(named) - len(silent)
    assert scored >= len(good)
    if scored == 0:
        assert rows is None, "an output file with nothing scored"
        assert code == EXIT_SKIPPED_LINES, err
        assert "nothing written" in err, err
        return
    assert rows is not None and len(rows) == scored, err
    questions = [row.get("question") for row in rows]
    assert [q for q in questions if q in {f"good-{n}?" for n in good}] == \
        [f"good-{n}?" for n in sorted(good)]
    assert all("ragas" in row for row in rows)
    assert code == (EXIT_SKIPPED_LINES if named else EXIT_OK), err
    if named:
        assert f"{len(named)} line(s) skipped" in err, err
