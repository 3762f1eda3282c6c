# A run file as the reranker (study.reranker_kind: run): the reranker's scores of the run's candidates come from
# a pinned TREC run made by any system; no model is loaded, nothing is inferred. The development run is pinned by
# repin=reranker_run run_file=FILE (<lockdir>/reranker/dev.trec, derived_pins.json -> reranker_run); the
# confirmation queries' run is blind-submitted when the protocol is frozen (scripts/confirm.py freeze
# --reranker-run FILE: <lockdir>/reranker/confirm.trec, its sha256 in the protocol), and an opening reads exactly it.


rule freeze_reranker_run:
    """Explicit pinning (--config repin=reranker_run run_file=FILE, alone): the run is checked against the frozen
    candidates (every development query, each of its candidates.depth candidates once, nothing else, finite scores;
    a refusal names the query and document and freezes nothing), copied byte for byte into the lock folder and
    pinned (this changes the experiment: commit it). The receipt is the declared output."""
    input:  # nothing is read unless the pinning was asked for (the script then refuses at once)
        **({"run_file": config["run_file"], "candidates": P["candidates"], "derived": P["derived_pins"],
            "dev": SPLIT_LISTS["dev"], "confirm": SPLIT_LISTS["confirm"]} if "reranker_run" in REPIN else {}),
    output:
        P["freeze_reranker_run"],
    params:
        allowed="reranker_run" in REPIN,
        lockdir=LOCK,
    log:
        log_of("freeze_reranker_run", per_run=False),
    script:
        "../scripts/freeze_reranker_run.py"


rule reranker_scores:
    """The reranker's score of every analysed candidate, read from the pinned run file (the development run, or in
    an opening the frozen confirmation run, each verified against its pin first and checked against the frozen
    candidates), and the record of what the reranker is (reranker_run.json: file, sha256, ties)."""
    input:
        run=P["reranker_confirm_run"] if CONFIRM else P["reranker_dev_run"],
        derived=P["derived_pins"],
        frozen=P["candidates"],
        splits=list(SPLIT_LISTS.values()),
        candidates=P["run_candidates"],
        queries=P["run_queries"],
    output:
        scores=P["reranker_scores"],
        record=P["reranker_run"],
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
        kind=KIND,
        pin=UNSEAL["protocol"]["model"]["confirmation_run"] if CONFIRM else None,  # an opening: the frozen pin
        reranker=STUDY["reranker"],
        lockdir=LOCK,
    log:
        log_of("reranker_scores"),
    benchmark:
        bench_of("reranker_scores")
    script:
        "../scripts/reranker_scores.py"
