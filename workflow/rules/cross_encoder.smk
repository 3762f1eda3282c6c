# The cross-encoder (pinned, or the STAND-IN only when chosen explicitly) and the scoring of every (query,
# candidate) pair of the run; repin=model writes the pins of a study's cross-encoder.


rule freeze_model:
    """Explicit first pinning (--config repin=model, alone): the files of study.reranker from model_dir (pinned at
    the named revision), a Hugging Face cache or a download at revision (resolved to its commit) are checked
    (everything the scorer reads; a model it cannot run is refused, naming what is missing), hashed and written to
    <lockdir>/model_pins.json with the architecture block of its config.json (this changes the experiment: commit
    it). Refuses when the lock folder already pins a model. The receipt is the declared output."""
    output:
        P["freeze_model"],
    params:
        allowed="model" in REPIN,
        pins=P["model_pins"],
        lockdir=LOCK,
        # model_dir / hf_cache / revision are read from the config in the script: the source of the files
    log:
        log_of("freeze_model", per_run=False),
    script:
        "../scripts/freeze_model.py"


if config["scorer"] == STAND_IN:

    rule standin_model:
        input:
            model_pins=P["model_pins"],
        output:
            P["model"],
        params:
            code=CODE,  # library source hash: a change in the science reruns the rule
            head_seed=config["standin"]["head_seed"],
            head_std=config["standin"]["head_std"],
        log:
            log_of("standin_model", per_run=False),
        benchmark:
            bench_of("standin_model", per_run=False)
        script:
            "../scripts/standin_model.py"

else:

    rule pinned_model:
        input:
            model_pins=P["model_pins"],
        output:
            P["model"],
        params:
            code=CODE,  # library source hash: a change in the science reruns the rule
            label_index=STUDY["label_index"],  # the relevance logit of a several-output model (study.label_index)
            # model_dir is read from the config in the script: a location, not a setting
        log:
            log_of("pinned_model", per_run=False),
        benchmark:
            bench_of("pinned_model", per_run=False)
        script:
            "../scripts/pinned_model.py"




rule backend_model:
    """A derived backend's file (ce.backend: ONNX Runtime fp32 or int8; rerank_study.reranker.backends), made from the verified
    model folder by the pinned recipe and checked against its pin in <lockdir>/derived_pins.json (no pin, another
    library version or other bytes: a stop before anything is scored). The pin itself is written only by
    repin=backend (rule freeze_backend)."""
    input:
        model=P["model"],
        model_pins=P["model_pins"],
        derived_pins=P["derived_pins"],
    output:
        P["backend_model"],
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
        backend=BACKEND,
    log:
        log_of(f"backend_model_{BACKEND}", per_run=False),
    script:
        "../scripts/backend_model.py"


rule freeze_backend:
    """Explicit first pinning (--config repin=backend, alone, with the committed config file of ce.backend): the
    derived file of ce.backend made from the verified model folder, its sha256 and recipe written into
    <lockdir>/derived_pins.json (this changes the experiment: commit it). Refuses an existing pin."""
    input:
        model=P["model"],
        model_pins=P["model_pins"],
    output:
        P["freeze_backend"],
    params:
        allowed="backend" in REPIN,
        backend=BACKEND,
        pins=P["derived_pins"],
    log:
        log_of(f"freeze_backend_{BACKEND}", per_run=False),
    script:
        "../scripts/freeze_backend.py"


# a derived backend's scoring rules read its verified file (none for the model itself: its runs are unchanged)
BACKEND_INPUTS = {"backend_model": P["backend_model"], "derived_pins": P["derived_pins"]} if DERIVED else {}


# Scoring is sharded: ce.shards jobs (rule score_shard), each scoring the queries at positions
# shard, shard + N, shard + 2N, ... of the run's canonical query order (scoring.assign_shards), then
# one gather (rule score) that writes the run's single pairs.tsv in canonical order. Batches are per
# query, so the shard count moves no score: N = 1 and N = 4 give the same bytes (tested).
# (SHARDS and the shard paths: common.smk)


wildcard_constraints:
    shard=r"\d+",


rule score_shard:
    """Cross-encoder logits of one shard of the run's queries (a Snakemake job of its own: any executor can place it),
    after the shape check of its first query's first pairs padded to max_length (rerank_study.reranker.shape_check): the tensor
    shapes must be the pinned architecture's, or nothing is scored."""
    input:
        candidates=P["run_candidates"],
        corpus=P["corpus"],
        queries=P["queries"],
        data_pins=P["data_pins"],
        model_pins=P["model_pins"],
        model=P["model"],
        **BACKEND_INPUTS,
    output:
        pairs=P["score_shard_pairs"],
        measurements=P["score_shard_measurements"],
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
        ce=config["ce"],
        cache=P["score_cache"],
        shard=lambda w: int(w.shard),
        shards=SHARDS,
        fresh=CONFIRM,  # a confirmation opening infers every pair and proves equality with existing cache entries
    # speed only: torch uses the threads Snakemake (or the cluster) grants; scores are the same bits at any
    # thread count in oneMKL's strict CNR mode (numerics.py)
    threads: config["ce"]["threads"]
    resources:
        mem_mb=1536,  # measured peak RSS ~0.7 GiB for 5000 pairs (docs/scoring.md); a cluster reserves this
    log:
        f"{RUNDIR}/logs/score_shard/{{shard}}-of-{SHARDS}.log",
    benchmark:
        f"{RUNDIR}/benchmarks/score_shard/{{shard}}-of-{SHARDS}.tsv"
    script:
        "../scripts/score_shard.py"


rule score:
    """Gather the shards into pairs.tsv (canonical order) once every shard's shape check passed (shard 0's, the run's
    first query, is shape_check.json); sum the measurements."""
    localrule: True  # bookkeeping of a second or less: on a cluster it runs beside snakemake (docs/cluster.md)
    input:
        shards=expand(P["score_shard_pairs"], shard=range(SHARDS)),
        shard_measurements=expand(P["score_shard_measurements"], shard=range(SHARDS)),
        candidates=P["run_candidates"],
        model=P["model"],
        **BACKEND_INPUTS,
    output:
        pairs=P["pairs"],
        shape_check=P["shape_check"],
        measurements=P["scoring_measurements"],
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
        ce=config["ce"],
    log:
        log_of("score"),
    benchmark:
        bench_of("score")
    script:
        "../scripts/score.py"


rule verify_scores:
    """Re-infer a seeded sample of the run's batches from scratch (no cache) and require bit equality
    with pairs.tsv (every batch with verify.every_batch); a confirmation opening draws the same sample."""
    input:
        pairs=P["pairs"],
        candidates=P["run_candidates"],
        corpus=P["corpus"],
        queries=P["queries"],
        data_pins=P["data_pins"],
        model=P["model"],
        model_pins=P["model_pins"],
        **BACKEND_INPUTS,
    output:
        record=P["verification"],
        measurements=P["verification_measurements"],
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
        ce=config["ce"],
        batches=config["verify"]["batches"],
        seed=config["verify"]["seed"],
        every_batch=config["verify"]["every_batch"],
        cache=P["score_cache"],
    threads: config["ce"]["threads"]
    log:
        log_of("verify_scores"),
    benchmark:
        bench_of("verify_scores")
    script:
        "../scripts/verify_scores.py"
