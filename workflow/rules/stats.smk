# Grouped (and query-level) paired bootstrap of the per-query differences.


rule bootstrap:
    input:
        per_query=P["per_query"],
        groups=P["groups"],
        queries=P["run_queries"],
    output:
        grouped_indices=P["grouped_indices"],
        query_indices=P["query_indices"],
        replicates=P["replicates"],
        summary=P["summary"],
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
        bootstrap=config["bootstrap"],
        seed=BOOTSTRAP_SEED,  # development 110; the frozen confirmation protocol 111
        threshold=config["threshold"],
        comparisons=config["comparisons"],
        metrics=config["metrics"],
        evalstats=config["evalstats"],
        depth=DEPTH,
        scorer=config["scorer"],
    log:
        log_of("bootstrap"),
    benchmark:
        bench_of("bootstrap")
    script:
        "../../scripts/bootstrap_stats.py"
