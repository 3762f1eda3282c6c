"""Rule dense (candidate regeneration only): all-MiniLM-L6-v2 (pinned, verified) cosine top-k; corpus
embeddings cached by (model identity, settings, text hash)."""

import logging
from pathlib import Path

import torch

from rerank_study.core.rule import run
from rerank_study.data import beir, splits
from rerank_study.data.acquire import verified_path
from rerank_study.data.pins import DataPins
from rerank_study.rankings import candidates, retrieval
from rerank_study.reranker import models

log = logging.getLogger("dense")


def main(sm):
    torch.set_num_threads(sm.threads)  # speed only: the ranked lists are compared, never the float bytes
    pins = DataPins.load(sm.input.data_pins)
    corpus = beir.read_corpus(verified_path(sm.input.corpus, "corpus.jsonl", pins))
    queries = beir.read_queries(verified_path(sm.input.queries, "queries.jsonl", pins))
    qids = splits.canonical_order(splits.read_split(sm.input.dev) + splits.read_split(sm.input.confirm))
    meta = models.load_model_meta(Path(sm.input.model).parent)
    p = sm.params.dense
    model = retrieval.load_bi_encoder(Path(sm.input.model).parent, p["max_seq_length"])
    doc_ids = list(corpus)
    texts = [corpus[d].full_text for d in doc_ids]
    settings = {"max_seq_length": p["max_seq_length"], "batch_size": p["batch_size"],
                "normalize": p["normalize"], "threads": sm.threads, "torch": torch.__version__}
    key = retrieval.embedding_cache_key({"identity_sha256": meta["identity_sha256"]}, settings, texts)
    d_emb, cached = retrieval.cached_embeddings(
        sm.params.cache, key, lambda: retrieval.encode(model, texts, p["batch_size"], p["normalize"],
                                                       progress=True))
    log.info("corpus embeddings %s (%d docs, key %s)", "from cache" if cached else "computed", len(texts),
             key[:16])
    q_emb = retrieval.encode(model, [queries[q] for q in qids], p["batch_size"], p["normalize"],
                             progress=False)
    scores = retrieval.dense_score_matrix(q_emb, d_emb)
    top = candidates.retriever_top(scores, doc_ids, qids, p["depth"])
    candidates.write_retriever_table(sm.output.table, top)


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
