# Evidence groups (qrels + query ids ONLY, written before any score is merged) and the
# per-query evaluation of the three methods.


rule groups:
    localrule: True  # bookkeeping of a second or less: on a cluster it runs beside snakemake (docs/cluster.md)
    input:
        queries=P["run_queries"],
        qrels=P["run_qrels"],
    output:
        groups=P["groups"],
        meta=P["groups_meta"],
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
    log:
        log_of("groups"),
    benchmark:
        bench_of("groups")
    script:
        "../scripts/groups.py"


rule evaluate:
    localrule: True  # bookkeeping of a second or less: on a cluster it runs beside snakemake (docs/cluster.md)
    input:
        groups=P["groups"],  # the group manifest exists before any score is merged with qrels
        queries=P["run_queries"],
        candidates=P["run_candidates"],
        pairs=SCORES,  # the reranker's scores: a cross-encoder's pairs.tsv, or a run file's reranker_scores.tsv
        qrels=P["run_qrels"],
    output:
        rankings=P["rankings"],
        rrf=P["run_rrf"],
        ce=P["run_ce"],
        blend=P["run_blend"],
        per_query=P["per_query"],
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
        blend_k=SETTINGS["blend_k"],
        metrics=SETTINGS["metrics"],
        score_column="logit" if RERANKER_KIND == CROSS_ENCODER else "score",
    log:
        log_of("evaluate"),
    benchmark:
        bench_of("evaluate")
    script:
        "../scripts/evaluate.py"


rule run_metadata:
    """The ir_metadata sidecar of each TREC run (runs/<method>.yaml): platform, implementation, method, data."""
    localrule: True  # bookkeeping of a second or less: on a cluster it runs beside snakemake (docs/cluster.md)
    input:
        rrf=P["run_rrf"],
        ce=P["run_ce"],
        blend=P["run_blend"],
        candidates=P["run_candidates"],
        queries=P["run_queries"],
        # the reranker's record (identity, weights sha256); a cross-encoder's scoring record: the threads it used
        **({"model": P["model"], "scoring": P["scoring_measurements"]} if RERANKER_KIND == CROSS_ENCODER
           else {"model": P["reranker_run"]}),
        data_pins=P["data_pins"],
    output:
        rrf=P["meta_rrf"],
        ce=P["meta_ce"],
        blend=P["meta_blend"],
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
        method=METHOD_SHA,
        settings=SETTINGS,
        kind=KIND,
    log:
        log_of("run_metadata"),
    benchmark:
        bench_of("run_metadata")
    script:
        "../scripts/run_metadata.py"
