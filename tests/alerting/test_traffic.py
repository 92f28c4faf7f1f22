import numpy as np
import pytest

from ragas_trace.alerting import ScoreMix, load_scores
from ragas_trace.alerting.traffic import Change, scrape_series
from ragas_trace.exporters.metrics import SCORE_BUCKETS

LABELS = {"service": "s", "app": "a", "judge": "j"}


def _mix() -> ScoreMix:
    return ScoreMix.of(load_scores(None, "healthy"), load_scores(None, "bad"))


def test_series_are_the_ones_the_library_exports_and_add_up() -> None:
    series = scrape_series(_mix(), None, scored_per_s=0.2, step_s=60, steps=600,
                           labels=LABELS, rng=np.random.default_rng(1))
    base = 'service="s",app="a",judge="j"'
    les = [*(str(b) for b in SCORE_BUCKETS), "+Inf"]
    assert set(series) == {
        f"ragas_faithfulness_sum{{{base}}}", f"ragas_faithfulness_count{{{base}}}",
        f"ragas_faithfulness_squares_total{{{base}}}",
        f'ragas_evaluations_total{{{base},status="scored"}}',
        *(f'ragas_faithfulness_bucket{{{base},le="{le}"}}' for le in les),
        *(f'ragas_verdicts_total{{{base},metric="faithfulness",label="{v}"}}'
          for v in ("pass", "fail"))}
    count = series[f"ragas_faithfulness_count{{{base}}}"]
    assert count[0] == 0 and np.all(np.diff(count) >= 0)
    assert count[-1] == pytest.approx(0.2 * 60 * 600, rel=0.05)
    assert np.array_equal(series[f'ragas_faithfulness_bucket{{{base},le="+Inf"}}'], count)
    buckets = [series[f'ragas_faithfulness_bucket{{{base},le="{le}"}}'][-1] for le in les]
    assert buckets == sorted(buckets)
    mean = series[f"ragas_faithfulness_sum{{{base}}}"][-1] / count[-1]
    assert mean == pytest.approx(_mix().healthy.mean(), abs=0.02)
    mean_square = series[f"ragas_faithfulness_squares_total{{{base}}}"][-1] / count[-1]
    assert mean_square - mean**2 == pytest.approx(_mix().healthy.var(), abs=0.02)


def test_a_drop_lowers_the_mean_by_its_size_from_the_change_on() -> None:
    mix = _mix()
    change = Change(at_s=300 * 60, share=mix.bad_share(0.2))
    series = scrape_series(mix, change, scored_per_s=2.0, step_s=60, steps=600,
                           labels=LABELS, rng=np.random.default_rng(2))
    base = 'service="s",app="a",judge="j"'
    total, count = (series[f"ragas_faithfulness_{n}{{{base}}}"] for n in ("sum", "count"))
    before = total[300] / count[300]
    after = (total[600] - total[300]) / (count[600] - count[300])
    assert before - after == pytest.approx(0.2, abs=0.03)


def test_a_ramp_reaches_its_share_at_its_end() -> None:
    change = Change(at_s=600, share=0.4, ramp_s=600)
    assert list(change.share_at(np.array([0.0, 600, 900, 1200, 5000]))) == [
        0.0, 0.0, 0.2, 0.4, 0.4]


def test_impossible_drops_and_bad_scores_are_refused() -> None:
    with pytest.raises(ValueError, match="more than the healthy mean"):
        _mix().bad_share(0.8)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        ScoreMix.of([0.5, 1.5], [0.0])
    with pytest.raises(ValueError, match="non-empty"):
        ScoreMix.of([], [0.0])


def test_verdicts_fail_below_the_shipped_judges_threshold_and_add_up() -> None:
    from ragas_trace.alerting.traffic import FAIL_BELOW
    from ragas_trace.judges.local import LocalJudge

    assert LocalJudge().thresholds["faithfulness"] == FAIL_BELOW
    series = scrape_series(_mix(), None, scored_per_s=0.5, step_s=60, steps=600,
                           labels=LABELS, rng=np.random.default_rng(2))
    base = 'service="s",app="a",judge="j"'
    fail, passed = (series[f'ragas_verdicts_total{{{base},metric="faithfulness",label="{v}"}}']
                    for v in ("fail", "pass"))
    count = series[f"ragas_faithfulness_count{{{base}}}"]
    assert np.array_equal(fail + passed, count)
    # The demo's healthy answers: about one in nine fails (its invented answers).
    assert 0.08 < fail[-1] / count[-1] < 0.15
