"""What judging one record costs: LLM calls, sequential rounds, prompt and completion
tokens and their price, of our OpenAI judge against Ragas 0.4.3's Faithfulness +
AnswerRelevancy + ContextRelevance on the same records in the same run.

Price is in input-token equivalents at gpt-4o-mini's list prices: an output token
costs 4 input tokens, an embedding token 0.02 / 0.15 of one.

Data: the 50 WikiEval contexts in ``../shared/data/wikieval-50.json`` (beside the checkout)
(question, reference answer as the answer, Wikipedia context). Both judges talk to
one loopback OpenAI server that answers one statement per answer sentence; tokens
are counted by the server with one counter for both sides
(``ragas_trace.testing.tokens``, an offline approximation of a BPE count), and the
prompt tokens include what a provider bills beyond the messages: the JSON schema
sent in ``response_format`` and any tool definitions, counted the same way. Rounds
are the longest chain of calls where each starts after the previous one ended
(the server adds a fixed latency, so concurrent calls overlap). Records alternate
which side goes first.

Ragas runs in its own virtualenv (default ``.venv-ragas``:
``python3 -m venv .venv-ragas && .venv-ragas/bin/pip install ragas==0.4.3
'langchain-community<0.4'``); without it only our side is measured and the
issue's figure for Ragas is printed for reference.

    python bench/judge_cost.py [--records 50] [--latency-ms 250] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ragas_replies import reply as ragas_reply
from ragas_trace.judges.openai_judge import OpenAIJudge
from ragas_trace.testing.openai_server import (
    CHAT_PATH,
    FakeOpenAIServer,
    RecordedRequest,
)
from ragas_trace.testing.tokens import count_tokens
from results_file import write_results

# shared/ sits beside the checkout
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "wikieval-50.json"
ROOT = Path(__file__).resolve().parent.parent
ISSUE_RAGAS_FIGURE = {"chat_calls": 5, "embedding_calls": 2, "rounds": 3, "prompt_tokens": 5778,
                      "completion_tokens": 484, "embedding_tokens": 52}
TARGET_RATIO = 0.65  # prompt tokens
TARGET_PRICE_RATIO = 0.6
OUTPUT_PRICE = 4.0  # gpt-4o-mini: $0.60 / $0.15 per million
EMBEDDING_PRICE = 0.02 / 0.15  # text-embedding-3-small against gpt-4o-mini input


@dataclass
class Cost:
    chat_calls: int
    embedding_calls: int
    rounds: int
    prompt_tokens: int  # chat prompts, schemas included
    completion_tokens: int
    embedding_tokens: int
    schema_tokens: int  # of prompt_tokens: response_format schemas and tool definitions

    @property
    def price(self) -> float:
        return price_of(self.prompt_tokens, self.completion_tokens, self.embedding_tokens)


def price_of(prompt: float, completion: float, embedding: float) -> float:
    return prompt + OUTPUT_PRICE * completion + EMBEDDING_PRICE * embedding


def cost_of(requests: list[RecordedRequest]) -> Cost:
    chat = [r for r in requests if r.path == CHAT_PATH]
    embeddings = [r for r in requests if r.path != CHAT_PATH]
    return Cost(len(chat), len(embeddings), rounds(requests),
                sum(r.prompt_tokens + schema_tokens(r.body) for r in chat),
                sum(r.completion_tokens for r in chat),
                sum(r.prompt_tokens for r in embeddings),
                sum(schema_tokens(r.body) for r in chat))


def schema_tokens(body: dict[str, Any]) -> int:
    """Prompt tokens a provider bills beyond the messages: the JSON schema of
    ``response_format`` and any ``tools`` definitions, which it feeds the model as
    text on every call. The server counts messages only."""
    billed = [body[k] for k in ("response_format", "tools", "functions") if body.get(k)]
    return sum(count_tokens(json.dumps(part, separators=(",", ":"))) for part in billed)


def rounds(requests: list[RecordedRequest]) -> int:
    """Length of the longest chain of requests each starting after the previous ended."""
    ordered = sorted(requests, key=lambda r: r.started)
    depth: list[int] = []
    for i, r in enumerate(ordered):
        before = [depth[j] for j in range(i) if ordered[j].ended <= r.started]
        depth.append(1 + max(before, default=0))
    return max(depth, default=0)


class RagasSide:
    """The Ragas worker process, fed one record at a time."""

    def __init__(self, python: Path, base_url: str) -> None:
        self._proc = subprocess.Popen(
            [str(python), "-W", "ignore", str(ROOT / "bench" / "ragas_worker.py"), base_url],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if self._proc.stdin is None or self._proc.stdout is None:
            raise RuntimeError("the Ragas worker has no pipes")
        self._stdin, self._stdout = self._proc.stdin, self._proc.stdout
        if self._stdout.readline().strip() != "ready":
            raise RuntimeError("the Ragas worker did not start (see its error above)")

    def score(self, record: dict[str, Any]) -> dict[str, float]:
        self._stdin.write(json.dumps(record) + "\n")
        self._stdin.flush()
        line = self._stdout.readline()
        if not line:
            raise RuntimeError("the Ragas worker stopped")
        result: dict[str, float] = json.loads(line)
        return result

    def close(self) -> None:
        self._stdin.close()
        self._proc.wait(timeout=30)


def measure(server: FakeOpenAIServer, run: Callable[[], object],
            by_task: dict[str, list[int]] | None = None) -> Cost:
    """Cost of ``run()``; ``by_task`` collects (prompt, completion) tokens per judge task."""
    server.reset_counters()
    run()
    requests = server.recorded()
    if by_task is not None:
        for r in requests:
            if r.task is not None:
                totals = by_task.setdefault(str(r.task), [0, 0])
                totals[0] += r.prompt_tokens + schema_tokens(r.body)
                totals[1] += r.completion_tokens
    return cost_of(requests)


def summarise(costs: list[Cost]) -> dict[str, float]:
    return {field: statistics.mean(getattr(c, field) for c in costs)
            for field in asdict(costs[0])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=50)
    parser.add_argument("--data", type=Path, default=DATA,
                        help="the WikiEval records (default: shared/data beside the checkout)")
    parser.add_argument("--latency-ms", type=float, default=250.0,
                        help="server latency per request; makes concurrent calls overlap")
    parser.add_argument("--ragas-python", type=Path, default=ROOT / ".venv-ragas/bin/python")
    parser.add_argument("--no-local", action="store_true",
                        help="skip the local judge's speed and memory section")
    parser.add_argument("--local-threads", type=int, default=os.cpu_count() or 1,
                        help="onnxruntime threads of the local judge (default: every core, "
                             "as the issue's target is records/s on the machine's cores; "
                             "the library's own default is half of them)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    rows = json.loads(args.data.read_text(encoding="utf-8"))[: args.records]
    records = [{"question": r["question"], "answer": r["gt_answer"], "contexts": [r["context"]]}
               for r in rows]
    ours: list[Cost] = []
    theirs: list[Cost] = []
    self_reported: list[dict[str, int]] = []
    by_task: dict[str, list[int]] = {}
    with FakeOpenAIServer(latency_s=args.latency_ms / 1000, chat_handler=ragas_reply) as server:
        judge = OpenAIJudge(model="gpt-4o-mini", base_url=server.base_url, api_key="bench",
                            max_retries=0)
        ragas = RagasSide(args.ragas_python, server.base_url) \
            if args.ragas_python.exists() else None
        loop = asyncio.new_event_loop()

        def run_ours(record: dict[str, Any]) -> None:
            s = loop.run_until_complete(judge.evaluate(record["question"], record["contexts"],
                                                       record["answer"]))
            failed = {m: r for m, r in s.status.items() if r not in ("scored", "no_statements")}
            if failed:
                raise RuntimeError(f"our judge failed on a benchmark record: {s.reasons}")
            self_reported.append(asdict(s.usage))

        for i, record in enumerate(records):
            sides: list[tuple[list[Cost], Callable[[], object], dict[str, list[int]] | None]] \
                = [(ours, lambda record=record: run_ours(record), by_task)]
            if ragas is not None:
                sides.append((theirs, lambda record=record: ragas.score(record), None))
            for costs, run, tasks in sides if i % 2 == 0 else sides[::-1]:
                costs.append(measure(server, run, tasks))
        loop.run_until_complete(judge.aclose())
        loop.close()
        if ragas is not None:
            ragas.close()

    report: dict[str, Any] = {
        "records": len(records),
        "token_count": "ragas_trace.testing.tokens (offline BPE approximation), both sides",
        "ours": summarise(ours),
        "ours_by_task_prompt_completion": {
            task: [round(p / len(records)), round(c / len(records))]
            for task, (p, c) in sorted(by_task.items())},
        "ours_self_reported_prompt_tokens_incl_embeddings": statistics.mean(
            u["prompt_tokens"] for u in self_reported),
    }
    if theirs:
        report["ragas_0_4_3"] = summarise(theirs)
        report["ragas_measured"] = True
    else:
        report["ragas_0_4_3"] = ISSUE_RAGAS_FIGURE
        report["ragas_measured"] = False
    base = report["ragas_0_4_3"]["prompt_tokens"]
    report["prompt_token_ratio"] = round(report["ours"]["prompt_tokens"] / base, 3)
    for side in ("ours", "ragas_0_4_3"):
        row = report[side]
        row["price"] = round(price_of(row["prompt_tokens"], row["completion_tokens"],
                                      row["embedding_tokens"]), 1)
    report["price_ratio"] = round(report["ours"]["price"] / report["ragas_0_4_3"]["price"], 3)
    report["per_record_ratios"] = _ratio_spread(ours, theirs)
    report["target_met"] = (report["prompt_token_ratio"] <= TARGET_RATIO
                            and report["price_ratio"] <= TARGET_PRICE_RATIO)
    if not args.no_local:
        report["local_judge"] = local_judge_section(args.records, args.local_threads)
    print(json.dumps(report, indent=2) if args.json else render(report))
    if theirs:
        write_results("judge_cost", _figures(report))
    return 0


def _figures(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    ours, theirs = report["ours"], report["ragas_0_4_3"]
    baseline = "Ragas 0.4.3 on the same records, same run"
    return {
        "price_ratio": {"value": report["price_ratio"], "baseline": baseline,
                        "target": f"<= {TARGET_PRICE_RATIO}", "exact": True,
                        "label": "OpenAI judge: price per record (input-token equivalents "
                                 "at gpt-4o-mini prices) vs Ragas"},
        "prompt_token_ratio": {"value": report["prompt_token_ratio"], "baseline": baseline,
                               "target": f"<= {TARGET_RATIO}", "exact": True,
                               "label": "OpenAI judge: prompt tokens per record vs Ragas"},
        "price_ours": {"value": ours["price"], "unit": "token-equivalents",
                       "label": "OpenAI judge: price per record"},
        "price_ragas": {"value": theirs["price"], "unit": "token-equivalents",
                        "label": "Ragas 0.4.3: price per record"},
        "prompt_tokens_ours": {"value": round(ours["prompt_tokens"]), "unit": "tokens",
                               "exact": True,
                               "label": "OpenAI judge: prompt tokens per record (schemas "
                                        "included)"},
        "prompt_tokens_ragas": {"value": round(theirs["prompt_tokens"]), "unit": "tokens",
                                "exact": True,
                                "label": "Ragas 0.4.3: prompt tokens per record"},
        "price_ratio_per_record": {
            "value": f"{report['per_record_ratios']['min']:.2f} to "
                     f"{report['per_record_ratios']['max']:.2f}",
            "label": "OpenAI judge: price ratio vs Ragas, lowest and highest record"},
        "schema_tokens_ours": {"value": round(ours["schema_tokens"], 1), "unit": "tokens",
                               "exact": True,
                               "label": "OpenAI judge: response_format schema tokens per record "
                                        "(in its prompt tokens)"},
        "schema_tokens_ragas": {"value": round(theirs["schema_tokens"], 1), "unit": "tokens",
                                "exact": True,
                                "label": "Ragas 0.4.3: schema and tool tokens per record "
                                         "(in its prompt tokens)"},
        "completion_tokens_ours": {"value": round(ours["completion_tokens"], 1),
                                   "unit": "tokens",
                                   "label": "OpenAI judge: completion tokens per record"},
        "completion_tokens_ragas": {"value": round(theirs["completion_tokens"], 1),
                                    "unit": "tokens",
                                    "label": "Ragas 0.4.3: completion tokens per record"},
        "calls_ours": {"value": f"{ours['chat_calls']:g} chat + {ours['embedding_calls']:g} "
                                f"embeddings in {ours['rounds']:.1f} rounds",
                       "label": "OpenAI judge: calls per record"},
        "calls_ragas": {"value": f"{theirs['chat_calls']:g} chat + "
                                 f"{theirs['embedding_calls']:g} embeddings in "
                                 f"{theirs['rounds']:.1f} rounds",
                        "label": "Ragas 0.4.3: calls per record"},
    }


def local_judge_section(records: int, threads: int) -> dict[str, Any]:
    """``local_judge_speed.py`` in a fresh process, so its peak RSS is its own."""
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "local_judge_speed.py"),
                          "--records", str(records), "--threads", str(threads)],
                         capture_output=True, text=True,
                         timeout=900, check=False)
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1:] or ["failed"]}
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _ratio_spread(ours: list[Cost], theirs: list[Cost]) -> dict[str, float] | None:
    """Per-record spread of the price ratio."""
    if not theirs:
        return None
    ratios = sorted(o.price / t.price for o, t in zip(ours, theirs, strict=True))
    return {"min": round(ratios[0], 3), "median": round(statistics.median(ratios), 3),
            "max": round(ratios[-1], 3)}


def render(report: dict[str, Any]) -> str:
    ours, theirs = report["ours"], report["ragas_0_4_3"]
    source = "measured in this run" if report["ragas_measured"] else "the issue's figure"
    lines = [f"judge cost per record, {report['records']} WikiEval records "
             f"(Ragas: {source}; tokens: {report['token_count']})",
             f"{'':<20}{'ours':>12}{'ragas 0.4.3':>14}"]
    for field in ("chat_calls", "embedding_calls", "rounds", "prompt_tokens", "schema_tokens",
                  "completion_tokens", "embedding_tokens"):
        mine, other = ours.get(field), theirs.get(field)
        lines.append(f"{field:<20}{mine:>12.1f}" + (f"{other:>14.1f}" if other is not None
                                                      else f"{'-':>14}"))
    lines.append(f"{'price':<20}{ours['price']:>12.1f}{theirs['price']:>14.1f}")
    lines.append(f"prompt-token ratio ours/ragas: {report['prompt_token_ratio']:.3f} "
                 f"(target <= {TARGET_RATIO})")
    lines.append(f"price ratio ours/ragas: {report['price_ratio']:.3f} "
                 f"(target <= {TARGET_PRICE_RATIO}; output x{OUTPUT_PRICE:g}, "
                 f"embeddings x{EMBEDDING_PRICE:.3f}; per record {report['per_record_ratios']})")
    lines.append(f"ours per task [prompt, completion]: {report['ours_by_task_prompt_completion']}")
    local = report.get("local_judge")
    if local is not None:
        lines.append(f"local judge: {local}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
