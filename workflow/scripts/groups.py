"""Rule groups: connected components of the analysed queries linked by a shared relevant
document. Inputs: the query ids and the qrels, nothing else."""

from rerank_study.core.fileio import sha256_file, write_json, write_tsv
from rerank_study.core.rule import run
from rerank_study.data import beir, splits
from rerank_study.stats import grouping

GROUP_HEADER = ("group_id", "group_index", "group_size", "qid")


def main(sm):
    qids = splits.read_split(sm.input.queries)
    qrels = beir.read_qrels(sm.input.qrels)
    groups = grouping.evidence_groups(qids, qrels)
    gids = grouping.group_ids(groups)
    write_tsv(sm.output.groups, GROUP_HEADER,
              [(gid, i, len(g), q) for i, (gid, g) in enumerate(zip(gids, groups)) for q in g])
    write_json(sm.output.meta, {
        "rule": "queries linked when they share >= 1 judged relevant document (relevance > 0, qrels only, "
                "documents outside the candidates count); groups = connected components; group order = first "
                "member in canonical query order; group_index = column index in the grouped bootstrap matrix",
        "inputs": {"queries_sha256": sha256_file(sm.input.queries),
                   "qrels_sha256": sha256_file(sm.input.qrels)},
        "n_queries": len(qids), "n_groups": len(groups),
        "size_histogram": {str(k): v for k, v in grouping.size_histogram(groups).items()},
        "groups": {gid: g for gid, g in zip(gids, groups)},
    })


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
