"""The local judge's fitted part: the model file it ships, the thresholds calibrated
for it, and what happens when the file is unreadable (a recorded failure, never a
made-up score)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from ragas_trace.config import Settings
from ragas_trace.judges.base import judge_thresholds
from ragas_trace.judges.local import LocalJudge
from ragas_trace.judges.local import judge as judge_module
from ragas_trace.judges.local.combine import ANSWER_FEATURES
from ragas_trace.judges.local.features import STATEMENT_FEATURES
from ragas_trace.judges.local.framing import SHORT_FEATURES
from ragas_trace.judges.local.scoring import relevance_thresholds
from ragas_trace.judges.local.support_model import (
    MODEL_FILE,
    SupportModelError,
    load_models,
    toward_overlap,
)
from ragas_trace.results import DEFAULT_THRESHOLDS, Metric, MetricStatus

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tools"))
from fit_local_judge import fit_logistic, fold_of


def test_the_shipped_model_matches_the_measured_features() -> None:
    models = load_models()
    assert set(models.statement.features) == set(STATEMENT_FEATURES)
    assert set(models.short.features) == set(SHORT_FEATURES)
    assert set(models.answer.features) == set(ANSWER_FEATURES)
    document = json.loads(MODEL_FILE.read_text(encoding="utf-8"))
    # Where it comes from is recorded with it.
    assert "ragtruth-summary" in document["data"] and document["folds"] == 5
    assert 0.0 < models.thresholds["faithfulness"] < 1.0


def test_the_judge_labels_with_its_own_calibrated_thresholds(judge: LocalJudge) -> None:
    assert judge.thresholds == {"faithfulness": load_models().thresholds["faithfulness"],
                                **relevance_thresholds()}
    assert set(judge.thresholds) == set(DEFAULT_THRESHOLDS)
    assert Settings.load(env={}).thresholds_for(judge) == judge.thresholds
    chosen = Settings.load(env={"RAGAS_TRACE_THRESHOLD_FAITHFULNESS": "0.9"})
    assert chosen.thresholds_for(judge)["faithfulness"] == 0.9
    assert chosen.thresholds_for(judge)["answer_relevance"] == judge.thresholds[
        "answer_relevance"]
    # A judge without calibrated thresholds (the LLM judges) keeps the defaults.
    assert judge_thresholds(object()) == dict(DEFAULT_THRESHOLDS)


def test_an_unreadable_model_file_is_an_error_that_names_it(tmp_path: Path) -> None:
    broken = tmp_path / "support_model.json"
    document = json.loads(MODEL_FILE.read_text(encoding="utf-8"))
    document["statement"]["features"] = document["statement"]["features"][:-1]
    broken.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(SupportModelError, match="refit"):
        load_models(broken)
    broken.write_text("{", encoding="utf-8")
    with pytest.raises(SupportModelError, match=r"support_model\.json"):
        load_models(broken)


def test_without_its_model_faithfulness_fails_and_the_rest_is_scored(
        judge: LocalJudge, monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> None:
        raise SupportModelError("cannot read support_model.json: missing")

    monkeypatch.setattr(judge_module, "load_models", missing)
    scores = judge.evaluate_sync("Who designed it?", ["Maud Keswick designed it."],
                                 "Maud Keswick designed it.")
    for metric in Metric:
        assert scores.result(metric).status is MetricStatus.FAILED
        assert "support_model.json" in (scores.result(metric).reason or "")
        assert scores.result(metric).value is None


def test_fitting_recovers_the_direction_of_the_evidence() -> None:
    rng = np.random.default_rng(7)
    x = rng.normal(size=(400, 2))
    y = (x[:, 0] - 0.5 * x[:, 1] + rng.normal(scale=0.3, size=400) > 0).astype(float)
    model = fit_logistic(x, y, ("a", "b"))
    assert model.coef[0] > 0 > model.coef[1]
    assert model.probability({"a": 2.0, "b": -1.0}) > 0.9 > 0.1 > model.probability(
        {"a": -2.0, "b": 1.0})


def test_one_intercept_per_set_fits_what_ranks_within_a_set() -> None:
    # "a" tells the labels apart within each set; "b" only says which set a row is
    # from, and set "qa" is mostly unsupported, set "summary" mostly supported.
    rng = np.random.default_rng(11)
    sets = ["qa"] * 300 + ["summary"] * 300
    b = np.asarray([0.0] * 300 + [1.0] * 300)
    a = rng.normal(size=600)
    base = np.where(b == 1.0, 2.0, -2.0)
    y = (base + 1.5 * a + rng.normal(scale=0.5, size=600) > 0).astype(float)
    x = np.column_stack([a, b])
    pooled = fit_logistic(x, y, ("a", "b"))
    within = fit_logistic(x, y, ("a", "b"), groups=sets, reference=("summary",))
    assert pooled.coef[1] > 1.0
    assert abs(within.coef[1]) < 0.05 * abs(within.coef[0])
    assert within.coef[0] > 0
    # It keeps the reference set's intercept: a middling row of that set is likely
    # supported, as most of that set is.
    assert within.probability({"a": 0.0, "b": 1.0}) > 0.8
    qa_only = fit_logistic(x, y, ("a", "b"), groups=sets, reference=("qa",))
    assert qa_only.probability({"a": 0.0, "b": 1.0}) < 0.2


def test_faithfulness_leans_toward_word_overlap_by_the_fitted_weight() -> None:
    models = load_models()
    assert 0.0 < models.lexical_weight < 0.5
    assert toward_overlap(0.7, 0.2, 0.0) == pytest.approx(0.7)
    assert toward_overlap(0.7, 0.7, 0.3) == pytest.approx(0.7)
    # The same fitted probability: the answer whose words the context holds scores
    # higher, one with none of them (a share of 0: no log-odds) lower, never 0.
    held, none = toward_overlap(0.6, 0.95, 0.1), toward_overlap(0.6, 0.0, 0.1)
    assert held > 0.6 > none > 0.0
    values = dict.fromkeys(models.answer.features, 0.5) | {"word_overlap": 0.0}
    assert models.faithfulness(values) < models.answer.probability(values)


def test_folds_keep_a_source_together_and_are_fixed() -> None:
    assert fold_of("summary-123") == fold_of("summary-123")
    assert {fold_of(f"summary-{i}") for i in range(200)} == set(range(5))
