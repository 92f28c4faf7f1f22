"""Regenerate the score samples ``ragas-trace alerts simulate`` replays by default:
the faithfulness the local judge that ships (its model file in the package) gives the
demo app's answers, once with the demo's default behaviour (healthy) and once with
every answer hallucinated (bad).

    .venv/bin/python tools/derive_alert_scores.py

``make alert-derive`` runs this, then ``bench/alert_simulation.py`` (the shipped rules
measured on the new samples) and ``tools/gen_docs.py`` (the alerting guide's tables).
"""

from __future__ import annotations

import json
from pathlib import Path

from ragas_trace.demo.runner import DemoOptions, run_demo
from ragas_trace.judges.local import LocalJudge
from ragas_trace.results import Metric

DATA = Path(__file__).resolve().parents[1] / "src" / "ragas_trace" / "alerting" / "data"
REQUESTS = 400


def _faithfulness(hallucination_rate: float, evasion_rate: float, seed: int) -> list[float]:
    result = run_demo(DemoOptions(requests=REQUESTS, out_dir=None, seed=seed,
                                  hallucination_rate=hallucination_rate,
                                  evasion_rate=evasion_rate))
    if not result.scoring_finished:
        raise RuntimeError("the local judge did not score every request")
    return [round(value, 4) for row in result.rows
            if (value := row.scores.get(Metric.FAITHFULNESS)) is not None]


def main() -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    samples = {"demo-healthy-scores.json": _faithfulness(0.1, 0.05, seed=1),
               "demo-bad-scores.json": _faithfulness(1.0, 0.0, seed=2)}
    for name, values in samples.items():
        (DATA / name).write_text(json.dumps(values) + "\n", encoding="utf-8")
        print(f"{name}: {len(values)} scores, mean {sum(values) / len(values):.3f}")
    print(f"judge: local, faithfulness threshold {LocalJudge().thresholds['faithfulness']:g}")


if __name__ == "__main__":
    main()
