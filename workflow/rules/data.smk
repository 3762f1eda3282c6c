# Pinned SciFact acquisition and the query splits. The confirmation qrels are NOT an output
# here: the development DAG cannot reach them (see confirm.smk and tests/test_seal.py).


rule fetch_data:
    output:
        corpus=ensure(P["corpus"], sha256=data_sha("corpus.jsonl")),
        queries=ensure(P["queries"], sha256=data_sha("queries.jsonl")),
        qrels_dev=ensure(P["qrels_dev"], sha256=data_sha("qrels/train.tsv")),
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
        names=["corpus.jsonl", "queries.jsonl", "qrels/train.tsv"],  # -> output[0], [1], [2]
        pins=f"{LOCK}/data_pins.json",
        cache=P["data_cache"],
        # data_mirror / data_zip / data.url are read from the config inside the script: where the
        # verified bytes came from must not trigger a rerun of everything downstream
    log:
        log_of("fetch_data", per_run=False),
    benchmark:
        bench_of("fetch_data", per_run=False)
    script:
        "../../scripts/fetch_data.py"


rule splits:
    input:
        queries=P["queries"],
        qrels_dev=P["qrels_dev"],
    output:
        dev=P["split_dev"],
        confirm=P["split_confirm"],
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
        lockdir=LOCK,
        pins=f"{LOCK}/data_pins.json",
        dev_size=config["splits"]["dev_size"],
        confirm_size=config["splits"]["confirm_size"],
        seed=config["splits"]["seed"],
    log:
        log_of("splits", per_run=False),
    benchmark:
        bench_of("splits", per_run=False)
    script:
        "../../scripts/make_splits.py"
