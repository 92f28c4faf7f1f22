"""OnnxChecker takes any text in statements and windows (``any_text``: every Unicode
category, lone surrogates, 100,000-character tokens), through three kinds of
tokenizer: word-level, WordPiece (BERT's, the judge's own file) and byte-level BPE
(RoBERTa's kind, whose offsets are per byte): a check in [0, 1] from one of the
statement's windows, the same whether the statement is read alone or with others."""

from __future__ import annotations

import math
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from any_text import any_text, scaled
from ragas_trace.judges.local.checker import Check, Statement, Window
from ragas_trace.judges.local.onnx_checker import OnnxChecker
from ragas_trace.testing.checker_model import DENY, SUPPORT, write_checker_directory

WORDPIECE = Path(str(resources.files("ragas_trace.judges.local") / "data" / "tokenizer.json"))


def byte_level_bpe(path: Path) -> Path:
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.train_from_iterator(
        [f"{SUPPORT} the tower is in paris 1889", f"{DENY} the tower"] * 20,
        trainers.BpeTrainer(special_tokens=["<s>", "<pad>", "</s>", "<unk>"], vocab_size=300,
                            initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    tokenizer.save(str(path))
    return path


@pytest.fixture(scope="module", params=["word-level", "wordpiece", "byte-level-bpe"])
def checker(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
            ) -> OnnxChecker:
    root = tmp_path_factory.mktemp(request.param)
    tokenizer = {"word-level": None, "wordpiece": WORDPIECE,
                 "byte-level-bpe": byte_level_bpe(root / "bpe.json")}[request.param]
    # A short max_length: most pairs are cut, and long statements too.
    return OnnxChecker.from_directory(write_checker_directory(
        root / "m", tokenizer=tokenizer, token_type_ids=request.param != "byte-level-bpe",
        config={"max_length": 24}), batch_size=3)


@scaled(30)
@given(st.lists(st.tuples(any_text(max_pieces=4),
                          st.lists(any_text(max_pieces=4), max_size=3)),
                min_size=1, max_size=4))
def test_any_text_gets_a_check_from_its_own_windows(
        checker: OnnxChecker, record: list[tuple[str, list[str]]]) -> None:
    statements = [Statement(s) for s, _ in record]
    windows = [[Window(w) for w in own] for _, own in record]
    checks = checker.check(statements, windows)
    assert len(checks) == len(statements)
    for check, own in zip(checks, windows, strict=True):
        if not own:
            assert check == Check(0.0, -1, "")
            continue
        assert 0.0 <= check.probability <= 1.0 and not math.isnan(check.probability)
        assert 0 <= check.window < len(own) and check.evidence == own[check.window].text
    alone = [checker.check([s], [w])[0] for s, w in zip(statements, windows, strict=True)]
    assert [c.probability for c in checks] == pytest.approx(
        [c.probability for c in alone], rel=1e-6)
