# The frozen candidates: BM25 top-100 + dense top-100, fused by RRF (k=60), top 50 per query,
# for the development AND the confirmation queries (query text only, no qrels). Pinned by
# sha256 in <lockdir>/derived_pins.json; a run verifies the pin and never re-pins silently.


rule bi_encoder:
    output:
        P["bi_encoder"],
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
        lockdir=LOCK,
    log:
        log_of("bi_encoder", per_run=False),
    benchmark:
        bench_of("bi_encoder", per_run=False)
    script:
        "../../scripts/bi_encoder.py"


rule bm25:
    input:
        corpus=P["corpus"],
        queries=P["queries"],
        dev=P["split_dev"],
        confirm=P["split_confirm"],
    output:
        table=P["bm25"],
        run=P["bm25_run"],
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
        pins=f"{LOCK}/data_pins.json",
        bm25=config["candidates"]["bm25"],
    log:
        log_of("bm25", per_run=False),
    benchmark:
        bench_of("bm25", per_run=False)
    script:
        "../../scripts/retrieve_bm25.py"


rule dense:
    input:
        corpus=P["corpus"],
        queries=P["queries"],
        dev=P["split_dev"],
        confirm=P["split_confirm"],
        model=P["bi_encoder"],
    output:
        table=P["dense"],
        run=P["dense_run"],
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
        pins=f"{LOCK}/data_pins.json",
        dense=config["candidates"]["dense"],
        threads=config["ce"]["threads"],
        cache=P["embedding_cache"],
    threads: config["ce"]["threads"]
    log:
        log_of("dense", per_run=False),
    benchmark:
        bench_of("dense", per_run=False)
    script:
        "../../scripts/retrieve_dense.py"


rule candidates:
    input:
        bm25=P["bm25"],
        dense=P["dense"],
        dev=P["split_dev"],
        confirm=P["split_confirm"],
        bi_encoder=P["bi_encoder"],
    output:
        table=P["candidates"],
        run=P["candidates_run"],
        meta=P["candidates_meta"],
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
        lockdir=LOCK,
        candidates=config["candidates"],
    log:
        log_of("candidates", per_run=False),
    benchmark:
        bench_of("candidates", per_run=False)
    script:
        "../../scripts/fuse_candidates.py"
