# The sealed confirmation. These rules exist only when --config unseal=<protocol sha256> passed
# every guard of rerank_study.protocol.check_unseal (checked in common.smk before any job):
#
#   python scripts/confirm.py freeze --dev-run results/dev     (once; writes lockfiles/protocol.*)
#   snakemake confirm --cores 4 --config unseal=<sha256 in lockfiles/protocol.sha256>
#
# fetch_sealed_qrels is the ONLY rule of the project that reads the confirmation judgements.

if CONFIRM:

    rule fetch_sealed_qrels:
        input:
            confirm=P["split_confirm"],
            data_pins=P["data_pins"],
        output:
            ensure(P["qrels_confirm"], sha256=data_sha(_protocol.SEALED_QRELS)),
        params:
            code=CODE,  # library source hash: a change in the science reruns the rule
            name=_protocol.SEALED_QRELS,
            cache=P["sealed_cache"],
        log:
            log_of("fetch_sealed_qrels"),
        benchmark:
            bench_of("fetch_sealed_qrels")
        script:
            "../scripts/fetch_sealed_qrels.py"

    rule record_opening:
        """Record the opening in the append-only ledger (and check a re-opening reproduces the first)."""
        input:
            manifest=P["manifest"],
            audit=P["audit"],
            summary=P["summary"],
        output:
            P["opening"],
        params:
            lockdir=LOCK,
            run=RUN,
            unseal={k: UNSEAL[k] for k in ("sha256", "opening", "previous", "git", "labels")},
        log:
            log_of("record_opening"),
        script:
            "../scripts/record_opening.py"

    rule confirm:
        """The target a user names: open the sealed confirmation (guarded above) and record it."""
        input:
            P["opening"],

else:

    rule confirm:
        """Without a valid unseal token the confirmation stays sealed (the guard explains why)."""
        output:
            f"{OUT}/confirm-sealed",
        log:
            f"{OUT}/logs/confirm-sealed.log",
        run:
            from rerank_study.protocol import check_unseal

            check_unseal(config, LOCK, workflow.basedir)  # raises SealError with the reason and the fix
