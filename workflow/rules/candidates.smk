# The frozen candidates are an INPUT of the experiment: committed in <lockdir>/candidates/ and
# pinned in <lockdir>/derived_pins.json. No rule of a development or confirmation run produces
# them; the rules below exist only for the two explicit targets:
#
#   snakemake check_candidates    regenerate BM25 + dense + RRF and report the drift of the ranked
#                                 lists against the frozen table (never touches the lockfiles)
#   snakemake --config repin=candidates   (= target freeze_candidates) re-freeze: write the
#                                 regenerated table, its retriever lists and its pin into the
#                                 lockfiles (this changes the experiment: commit it)


rule bi_encoder:
    input:
        model_pins=P["model_pins"],
    output:
        P["bi_encoder"],
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
    log:
        log_of("bi_encoder", per_run=False),
    benchmark:
        bench_of("bi_encoder", per_run=False)
    script:
        "../scripts/bi_encoder.py"


rule bm25:
    input:
        corpus=P["corpus"],
        queries=P["queries"],
        data_pins=P["data_pins"],
        dev=P["split_dev"],
        confirm=P["split_confirm"],
    output:
        table=P["bm25"],
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
        bm25=config["candidates"]["bm25"],
    log:
        log_of("bm25", per_run=False),
    benchmark:
        bench_of("bm25", per_run=False)
    script:
        "../scripts/bm25.py"


rule dense:
    input:
        corpus=P["corpus"],
        queries=P["queries"],
        data_pins=P["data_pins"],
        dev=P["split_dev"],
        confirm=P["split_confirm"],
        model=P["bi_encoder"],
    output:
        table=P["dense"],
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
        dense={k: v for k, v in config["candidates"]["dense"].items() if k != "threads"},  # threads: speed only
        cache=P["embedding_cache"],
    threads: config["candidates"]["dense"]["threads"]  # speed only: torch takes what the scheduler grants
    log:
        log_of("dense", per_run=False),
    benchmark:
        bench_of("dense", per_run=False)
    script:
        "../scripts/dense.py"


rule fuse_candidates:
    """Regenerate the candidate table (resources only; never the frozen one)."""
    input:
        bm25=P["bm25"],
        dense=P["dense"],
        dev=P["split_dev"],
        confirm=P["split_confirm"],
        bi_encoder=P["bi_encoder"],
    output:
        table=P["regenerated"],
        meta=P["regenerated_meta"],
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
        candidates=candidate_params(config),
    log:
        log_of("fuse_candidates", per_run=False),
    benchmark:
        bench_of("fuse_candidates", per_run=False)
    script:
        "../scripts/fuse_candidates.py"


rule check_candidates:
    """Drift of the regenerated ranked lists against the frozen table, per split (reads no qrels)."""
    input:
        frozen=P["candidates"],
        derived=P["derived_pins"],
        regenerated=_regenerable,
        meta=P["regenerated_meta"],
    output:
        table=P["drift"],
        json=P["drift_json"],
    params:
        code=CODE,
    log:
        log_of("check_candidates", per_run=False),
    script:
        "../scripts/check_candidates.py"


rule freeze_candidates:
    """Explicit re-freezing (--config repin=candidates): the regenerated table becomes the frozen
    one. Writes into the lockfiles as a side effect on purpose (a declared output would be deleted
    by Snakemake before the job runs); the receipt is the declared output."""
    input:  # nothing is regenerated unless re-freezing was asked for (the script then refuses at once)
        **({} if "candidates" not in REPIN else
           {"regenerated": P["regenerated"], "meta": P["regenerated_meta"], "bm25": P["bm25"], "dense": P["dense"]}
           if STUDY["candidates"] == "frozen" else  # a user's TREC run (study.candidates: trec; trec_run=FILE):
           {"trec_run": config["trec_run"], "dev": P["split_dev"], "confirm": P["split_confirm"],
            "corpus": P["corpus"], "queries": P["queries"], "data_pins": P["data_pins"]}),
    output:
        P["freeze_candidates"],
    params:
        lockdir=LOCK,
        allowed="candidates" in REPIN,
        source=STUDY["candidates"],
        study=STUDY["name"],
        candidate_params=candidate_params(config),
    log:
        log_of("freeze_candidates", per_run=False),
    script:
        "../scripts/freeze_candidates.py"
