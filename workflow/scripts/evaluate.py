"""Rule evaluate: CE ranks, the blend, three TREC runs and the per-query metric table. The CE side is the
study's reranker: a cross-encoder's logits (pairs.tsv) or a run file's scores (reranker_scores.tsv), ranked
alike (score descending, ties by document id string descending); rankings.tsv keeps them in its ``logit``
column."""

from rerank_study.core import names
from rerank_study.core.errors import PipelineError
from rerank_study.core.fileio import read_tsv, write_tsv
from rerank_study.core.rule import run
from rerank_study.data import beir, splits
from rerank_study.rankings import candidates, trec
from rerank_study.rankings.ranking import rerank_query
from rerank_study.stats import metrics

RANKING_HEADER = ("qid", "doc_id", "r0", "logit", "r1", "blend_score", "blend_rank")


def read_logits(path, column: str = "logit") -> dict[str, dict[str, float]]:
    logits: dict[str, dict[str, float]] = {}
    for i, row in enumerate(read_tsv(path), start=2):
        q = logits.setdefault(row["qid"], {})
        if row["doc_id"] in q:
            raise PipelineError(f"{path} line {i}: duplicate pair ({row['qid']}, {row['doc_id']})")
        q[row["doc_id"]] = float(row[column])
    return logits


def main(sm):
    qids = splits.read_split(sm.input.queries)
    cands = candidates.read_candidates(sm.input.candidates)
    qrels = beir.read_qrels(sm.input.qrels)
    logits = read_logits(sm.input.pairs, sm.params.score_column)
    if list(cands) != qids or set(logits) != set(qids):
        raise PipelineError("pairs / candidates / analysed queries disagree on the query set")
    m = sm.params.metrics
    measures = names.measures(m)
    header = ["qid", "n_relevant", "n_relevant_in_candidates"] + [names.column(meth, x)
                                                                  for meth in names.METHODS
                                                                   for x in measures]
    rank_rows, pq_rows, orders = [], [], {meth: {} for meth in names.METHODS}
    for q in qids:
        try:
            res = rerank_query(cands[q], logits[q], sm.params.blend_k)
        except ValueError as exc:
            raise PipelineError(f"query {q}: {exc}") from None
        for d in cands[q]:
            rank_rows.append((q, d, res["r0"][d], logits[q][d], res["r1"][d], res["blend_score"][d],
                              res["blend_rank"][d]))
        row = [q, None, None]
        for meth in names.METHODS:
            order = res["order"][meth]
            orders[meth][q] = order
            vals = metrics.query_metrics(order, qrels[q], m["ndcg_k"], m["recall_ks"], m["mrr_k"])
            row[1], row[2] = vals["n_relevant"], vals["n_relevant_in_list"]
            row += [vals[str(x)] for x in measures]
        pq_rows.append(row)
    write_tsv(sm.output.rankings, RANKING_HEADER, rank_rows)
    for meth in names.METHODS:
        trec.write_run(getattr(sm.output, meth), orders[meth], meth, qids)
    write_tsv(sm.output.per_query, header, pq_rows)


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
