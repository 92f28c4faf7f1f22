"""The app of the production tests (tests/deploy/test_production_deploy.py), as a
user runs one: FastAPI, ``POST /ask``, the demo's LCEL RAG chain (TF-IDF retriever,
prompt, a scripted chat model that invents a fact in about one answer in five,
``StrOutputParser``), ``setup()`` at import with the local judge, every request
sampled, the rest (OTLP endpoint, Phoenix annotations, metrics port,
``PROMETHEUS_MULTIPROC_DIR``) from the environment, as the guides say.

    python -m gunicorn production_app:app --chdir DIR -k uvicorn.workers.UvicornWorker
"""

from __future__ import annotations

import os

from fastapi import FastAPI
from pydantic import BaseModel

import ragas_trace
from ragas_trace.demo.app import build_chain
from ragas_trace.demo.behaviour import Behaviour

rt = ragas_trace.setup(service_name="support-bot", judge="local", sample_rate=1.0,
                       project_from_service=True)
chain = build_chain(Behaviour(hallucination_rate=0.2, evasion_rate=0.0, seed=os.getpid()))
handler = rt.langchain_handler(app_name="support")
app = FastAPI()


class Question(BaseModel):
    question: str


@app.post("/ask")
def ask(body: Question) -> dict[str, str]:
    answer = chain.invoke(body.question, config={"callbacks": [handler]})
    return {"answer": answer}
