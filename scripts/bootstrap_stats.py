"""Rule bootstrap: grouped + query-level paired bootstrap; saves both index matrices, every
replicate and summary.json (every statistical number of the report)."""

from rerank_study import analysis, splits
from rerank_study.errors import PipelineError
from rerank_study.fileio import atomic_open, fmt_float, read_tsv, sha256_file, write_json
from rerank_study.rule import run_rule


def write_matrix(path, idx, prefix):
    with atomic_open(path, "w") as fh:
        fh.write("replicate\t" + "\t".join(f"{prefix}{j}" for j in range(idx.shape[1])) + "\n")
        for b, row in enumerate(idx.tolist()):
            fh.write(f"{b}\t" + "\t".join(map(str, row)) + "\n")


def main(sm):
    qids = splits.read_split(sm.input.queries)
    rows = read_tsv(sm.input.per_query)
    if [r["qid"] for r in rows] != qids:
        raise PipelineError(f"{sm.input.per_query}: queries differ from the analysed list {sm.input.queries}")
    m = sm.params.metrics
    metric = f"ndcg@{m['ndcg_k']}"
    others = ([f"recall@{k}" for k in m["recall_ks"]] + [f"capped_recall@{k}" for k in m["recall_ks"]]
              + [f"mrr@{m['mrr_k']}"])
    table = {r["qid"]: {k: float(v) for k, v in r.items() if k != "qid" and not k.endswith("first_rel_rank")
                        and not k.startswith("n_")} for r in rows}
    first_rel = {r["qid"]: {meth: (int(r[f"{meth}_first_rel_rank"]) if r[f"{meth}_first_rel_rank"] else None)
                            for meth in analysis.METHODS} for r in rows}
    grows = read_tsv(sm.input.groups)
    gids, groups = [], []
    for r in grows:
        if not gids or gids[-1] != r["group_id"]:
            gids.append(r["group_id"])
            groups.append([])
        groups[-1].append(r["qid"])
    b = sm.params.bootstrap
    comps = {k: tuple(v) for k, v in sm.params.comparisons["all"].items()}
    summary, g_idx, q_idx, reps = analysis.analyse(
        qids, table, groups, gids, comps, sm.params.comparisons["primary"], metric, b["B"], sm.params.seed,
        b["percentiles"], sm.params.threshold, first_rel, others)
    counts = {r["qid"]: (int(r["n_relevant"]), int(r["n_relevant_in_candidates"])) for r in rows}
    summary["evalstats"] = analysis.evaluation_statistics(qids, table, counts, first_rel, groups, comps, summary,
                                                          sm.params.evalstats, metric, sm.params.depth)
    write_matrix(sm.output.grouped_indices, g_idx, "draw")
    write_matrix(sm.output.query_indices, q_idx, "draw")
    cols = list(reps)
    with atomic_open(sm.output.replicates, "w") as fh:
        fh.write("replicate\t" + "\t".join(cols) + "\n")
        for i in range(b["B"]):
            fh.write(f"{i}\t" + "\t".join(fmt_float(float(reps[c][i])) for c in cols) + "\n")
    summary.update({  # (no run name here: the same analysis must give the same bytes in any folder)
        "scorer": "STAND-IN" if sm.params.scorer == "stand-in" else "pinned",
        "inputs": {"per_query_sha256": sha256_file(sm.input.per_query), "groups_sha256": sha256_file(sm.input.groups)},
        "comparisons_definition": {k: f"{a} - {b_} (per-query {metric})" for k, (a, b_) in comps.items()},
    })
    write_json(sm.output.summary, summary)


run_rule(snakemake, main)  # noqa: F821
