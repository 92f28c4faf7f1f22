"""Runs inside ``.venv-bench`` (which has ``ragas==0.4.3``): scores one record per
stdin line with Ragas's Faithfulness, AnswerRelevancy and ContextRelevance against
the OpenAI-compatible endpoint given as argv[1], the three metrics concurrently as
``ragas.evaluate`` does for a row, and prints one JSON line of scores per record.

Input lines: {"question": ..., "answer": ..., "contexts": [...]}.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")

from langchain_openai import ChatOpenAI, OpenAIEmbeddings
from ragas.dataset_schema import SingleTurnSample
from ragas.embeddings import LangchainEmbeddingsWrapper
from ragas.llms import LangchainLLMWrapper
from ragas.metrics import AnswerRelevancy, ContextRelevance, Faithfulness


def main() -> None:
    base_url = sys.argv[1]
    llm = LangchainLLMWrapper(ChatOpenAI(model="gpt-4o-mini", base_url=base_url,
                                         api_key="bench", max_retries=0))
    embeddings = LangchainEmbeddingsWrapper(OpenAIEmbeddings(
        model="text-embedding-3-small", base_url=base_url, api_key="bench",
        check_embedding_ctx_length=False))  # the length check downloads a tokenizer
    metrics = [Faithfulness(llm=llm), AnswerRelevancy(llm=llm, embeddings=embeddings),
               ContextRelevance(llm=llm)]

    async def score(row: dict[str, object]) -> dict[str, float]:
        sample = SingleTurnSample(user_input=row["question"], response=row["answer"],
                                  retrieved_contexts=row["contexts"])
        values = await asyncio.gather(*(m.single_turn_ascore(sample) for m in metrics))
        return {m.name: float(v) for m, v in zip(metrics, values, strict=True)}

    loop = asyncio.new_event_loop()
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip():
            print(json.dumps(loop.run_until_complete(score(json.loads(line)))), flush=True)


if __name__ == "__main__":
    main()
