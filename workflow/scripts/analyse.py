"""Rule analyse: per-method means, the grouped + query-level paired bootstrap, diagnostics and the
declared evaluation statistics; saves both index matrices, every replicate and summary.json
(every statistical number of the report)."""

from rerank_study.core import names
from rerank_study.core.errors import PipelineError
from rerank_study.core.fileio import (
    atomic_open,
    fmt_float,
    read_tsv,
    sha256_file,
    write_index_matrix,
    write_json,
)
from rerank_study.core.rule import run
from rerank_study.data import splits
from rerank_study.stats import analysis, run_tables


def main(sm):
    qids = splits.read_split(sm.input.queries)
    rows = read_tsv(sm.input.per_query)
    if [r["qid"] for r in rows] != qids:
        raise PipelineError(f"{sm.input.per_query}: queries differ from the analysed list {sm.input.queries}")
    p = sm.params
    plan = analysis.AnalysisPlan.from_settings({
        "metrics": p.metrics, "comparisons": p.comparisons, "bootstrap_B": p.B, "bootstrap_seed": p.seed,
        "percentiles": p.percentiles, "threshold": p.threshold})
    table, first_rel = run_tables.metric_table(rows), run_tables.first_relevant(rows)
    gids, groups = run_tables.read_groups(sm.input.groups)
    summary, g_idx, q_idx, reps = analysis.analyse(qids, table, groups, gids, plan=plan, first_rel=first_rel)
    counts = {r["qid"]: (int(r["n_relevant"]), int(r["n_relevant_in_candidates"])) for r in rows}
    summary["evalstats"] = analysis.evaluation_statistics(qids, table, counts=counts, first_rel=first_rel,
                                                          groups=groups, plan=plan, summary=summary,
                                                          ev=p.evalstats, depth=p.depth)
    write_index_matrix(sm.output.grouped_indices, g_idx, "draw")
    write_index_matrix(sm.output.query_indices, q_idx, "draw")
    cols = list(reps)
    with atomic_open(sm.output.replicates, "w") as fh:
        fh.write("replicate\t" + "\t".join(cols) + "\n")
        for i in range(plan.B):
            fh.write(f"{i}\t" + "\t".join(fmt_float(float(reps[c][i])) for c in cols) + "\n")
    summary.update({  # (no run name here: the same analysis must give the same bytes in any folder)
        "scorer": names.scorer_label(p.scorer),
        "inputs": {"per_query_sha256": sha256_file(sm.input.per_query),
                   "groups_sha256": sha256_file(sm.input.groups)},
        "comparisons_definition": {k: f"{a} - {b} (per-query {plan.metric})"
                                   for k, (a, b) in plan.comparisons.items()},
    })
    write_json(sm.output.summary, summary)


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
