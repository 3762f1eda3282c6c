# The run's inputs, then the reranker's scores of every (query, candidate) pair: a cross-encoder scores them here
# (cross_encoder.smk: the pinned model or, chosen explicitly, the STAND-IN), or a run-file reranker's pinned TREC run
# gives them (reranker_run.smk; study.reranker_kind: run, no model is loaded).


rule run_inputs:
    """The run's analysed queries, their candidates (cut at the run's depth) and their qrels."""
    localrule: True  # bookkeeping of a second or less: on a cluster it runs beside snakemake (docs/cluster.md)
    input:
        candidates=P["candidates"],  # the committed, frozen table (verified against its pin)
        derived=P["derived_pins"],
        data_pins=P["data_pins"],
        split=RUN_SPLIT,
        qrels=P[RUN_QRELS_KEY],
    output:
        queries=P["run_queries"],
        candidates=P["run_candidates"],
        qrels=P["run_qrels"],
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
        candidate_params=candidate_params(config),
        n_queries=N_QUERIES,
        depth=DEPTH,
        qrels_pin=RUN_QRELS_PIN,
        split_label="confirm" if CONFIRM else "dev",
        study=STUDY["name"],
    log:
        log_of("run_inputs"),
    benchmark:
        bench_of("run_inputs")
    script:
        "../scripts/run_inputs.py"


if RERANKER_KIND == RUN_FILE:

    include: "reranker_run.smk"

else:

    include: "cross_encoder.smk"
