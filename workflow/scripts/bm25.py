"""Rule bm25 (candidate regeneration only): BM25 (bm25s, lucene, k1 1.5, b 0.75, English stop words, Snowball
stemmer) top-k."""

from rerank_study.core.rule import run
from rerank_study.data import beir, splits
from rerank_study.data.acquire import verified_path
from rerank_study.data.pins import DataPins
from rerank_study.rankings import candidates, retrieval


def main(sm):
    pins = DataPins.load(sm.input.data_pins)
    corpus = beir.read_corpus(verified_path(sm.input.corpus, "corpus.jsonl", pins))
    queries = beir.read_queries(verified_path(sm.input.queries, "queries.jsonl", pins))
    qids = splits.canonical_order(splits.read_split(sm.input.dev) + splits.read_split(sm.input.confirm))
    doc_ids = list(corpus)
    p = sm.params.bm25
    scores = retrieval.bm25_score_matrix([corpus[d].full_text for d in doc_ids], [queries[q] for q in qids],
                                         p["k1"], p["b"], p["method"], p["stopwords"], p["stemmer"])
    top = candidates.retriever_top(scores, doc_ids, qids, p["depth"])
    candidates.write_retriever_table(sm.output.table, top)


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
