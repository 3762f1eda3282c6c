# The sealed confirmation. These rules exist only when --config unseal=<protocol sha256> passed
# every guard of rerank_study.seal.guard.check_unseal (checked in common.smk before any job):
#
#   python scripts/confirm.py freeze --dev-run results/dev     (once; writes lockfiles/protocol.* + ledger)
#   snakemake confirm --cores 4 --config unseal=<sha256 in lockfiles/protocol.sha256>
#
# fetch_sealed_qrels is the ONLY rule of the project that reads the confirmation judgements, and every
# target that touches them depends on it: it appends the opening's 'started' line to the append-only
# ledger (flushed, fsynced), and to the trace file outside the work tree, BEFORE it copies them into the
# opening's folder. record_opening appends 'completed' after the audit passed.

if CONFIRM:

    rule fetch_sealed_qrels:
        input:
            confirm=P["split_confirm"],
            data_pins=P["data_pins"],
        output:
            qrels=ensure(P["qrels_confirm"], sha256=data_sha(QRELS_SEALED)),
            started=P["opening_started"],
        params:
            code=CODE,  # library source hash: a change in the science reruns the rule
            name=QRELS_SEALED,
            cache=P["sealed_cache"],
            lockdir=LOCK,
            root=workflow.basedir,  # the repository: its registry of sealed sets and its trace file
            start=UNSEAL["start"],  # the ledger line (its time is added when it is written)
        log:
            log_of("fetch_sealed_qrels"),
        benchmark:
            bench_of("fetch_sealed_qrels")
        script:
            "../scripts/fetch_sealed_qrels.py"

    rule record_opening:
        """Record the completed opening in the append-only ledger (a re-opening must reproduce the first)."""
        input:
            manifest=P["manifest"],
            audit=P["audit"],
            summary=P["summary"],
            started=P["opening_started"],
            # how the scores were made: a cross-encoder's scoring record, or a run file's record
            scoring=P["scoring_measurements"] if RERANKER_KIND == CROSS_ENCODER else P["reranker_run"],
        output:
            P["opening"],
        params:
            lockdir=LOCK,
            root=workflow.basedir,  # the repository: the completed line is committed there
            run=RUN,
            unseal={k: UNSEAL[k] for k in ("sha256", "opening", "previous", "git", "labels", "method_sha256")},
        log:
            log_of("record_opening"),
        script:
            "../scripts/record_opening.py"

    rule confirm:
        """The target a user names: open the sealed confirmation (guarded above) and record it."""
        input:
            P["opening"],

else:
    # `snakemake confirm` without a valid token: refused while the workflow is parsed, before any job (the guard
    # says why and how); the rule below is only reached through the API, where the targets are not known yet
    if "confirm" in sys.argv[1:]:
        _checked(_seal_guard.check_unseal, config, LOCK, workflow.basedir)

    rule confirm:
        """Without a valid unseal token the confirmation stays sealed (the guard explains why)."""
        output:
            f"{OUT}/confirm-sealed",
        log:
            f"{OUT}/logs/confirm-sealed.log",
        run:
            _seal_guard.check_unseal(config, LOCK, workflow.basedir)  # raises SealError with the reason and fix
