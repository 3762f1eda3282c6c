# The paired analysis: means, grouped (and query-level) paired bootstrap of the per-query
# differences, diagnostics and the declared evaluation statistics -> summary.json.


rule analyse:
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
        B=SETTINGS["bootstrap_B"],
        seed=SETTINGS["bootstrap_seed"],  # development 110; the frozen confirmation protocol 111
        percentiles=SETTINGS["percentiles"],
        threshold=SETTINGS["threshold"],
        comparisons=SETTINGS["comparisons"],
        metrics=SETTINGS["metrics"],
        evalstats=SETTINGS["evalstats"],
        depth=SETTINGS["depth"],
        scorer=config["scorer"],
    log:
        log_of("analyse"),
    benchmark:
        bench_of("analyse")
    script:
        "../scripts/analyse.py"


rule calibrate:
    """How far the grouped interval can be trusted on these data (reported beside it; it decides nothing):
    coverage, type I error, the sign-flip test and the power curve -> calibration.json."""
    input:
        per_query=P["per_query"],
        groups=P["groups"],
        queries=P["run_queries"],
        summary=P["summary"],  # after analyse: the same comparisons, metric and primary
    output:
        P["calibration"],
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
        calibration=SETTINGS["calibration"],  # development seed 110; the frozen confirmation protocol 111
        percentiles=SETTINGS["percentiles"],
        threshold=SETTINGS["threshold"],
        comparisons=SETTINGS["comparisons"],
    threads: 2  # the simulations share the threads; the result does not depend on their number
    log:
        log_of("calibrate"),
    benchmark:
        bench_of("calibrate")
    script:
        "../scripts/calibrate.py"
