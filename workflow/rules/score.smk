# The cross-encoder (pinned, or the STAND-IN only when chosen explicitly), the run's inputs
# and the scoring of every (query, candidate) pair.

if config["scorer"] == "stand-in":

    rule standin_model:
        output:
            P["model"],
        params:
            code=CODE,  # library source hash: a change in the science reruns the rule
            lockdir=LOCK,
            head_seed=config["standin"]["head_seed"],
            head_std=config["standin"]["head_std"],
        log:
            log_of("standin_model", per_run=False),
        benchmark:
            bench_of("standin_model", per_run=False)
        script:
            "../../scripts/build_standin.py"

else:

    rule pinned_model:
        output:
            P["model"],
        params:
            code=CODE,  # library source hash: a change in the science reruns the rule
            lockdir=LOCK,  # model_dir is read from the config in the script (a location, not a setting)
        log:
            log_of("pinned_model", per_run=False),
        benchmark:
            bench_of("pinned_model", per_run=False)
        script:
            "../../scripts/resolve_model.py"


rule run_inputs:
    """The run's analysed queries, their candidates (cut at the run's depth) and their qrels."""
    input:
        candidates=P["candidates"],  # the committed, frozen table (verified against its pin)
        derived=P["derived_pins"],
        data_pins=f"{LOCK}/data_pins.json",
        split=RUN_SPLIT,
        qrels=RUN_QRELS,
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
    log:
        log_of("run_inputs"),
    benchmark:
        bench_of("run_inputs")
    script:
        "../../scripts/run_inputs.py"


rule score:
    input:
        candidates=P["run_candidates"],
        corpus=P["corpus"],
        queries=P["queries"],
        model=P["model"],
    output:
        pairs=P["pairs"],
        shape_check=P["shape_check"],
        measurements=P["scoring_measurements"],
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
        pins=f"{LOCK}/data_pins.json",
        ce=config["ce"],
        cache=P["score_cache"],
        hidden_size=MODEL_PINS["cross_encoder"]["architecture"]["hidden_size"],
    threads: config["ce"]["threads"]
    log:
        log_of("score"),
    benchmark:
        bench_of("score")
    script:
        "../../scripts/score_pairs.py"
