# Conclusion retention of a derived backend (ce.backend: onnx, onnx-int8; docs/backends.md): this run against the
# same study's fp32 torch run of the same queries and candidates (which must exist and have passed its audit: it is
# read, never made, by this invocation).

if DERIVED and not CONFIRM and not REPIN:
    TORCH_RUN = run_name({**config, "ce": {**config["ce"], "backend": TORCH_BACKEND}})
    TORCH_RUNDIR = f"{OUT}/{TORCH_RUN}"
    if config["run_name"]:
        raise WorkflowError(f"run_name={config['run_name']} with backend {BACKEND!r}: the retention finds the torch run "
                            "by the development run's own name (dev / smoke, -standin); leave run_name empty.")

    def _retention_inputs(wildcards):
        """Both runs' audited files; the torch run is read, never made, here (a stop names the command)."""
        if not Path(f"{TORCH_RUNDIR}/audit.json").is_file():
            raise WorkflowError(f"RETENTION of backend {BACKEND!r} compares this run with the fp32 torch run of the "
                                f"same study, queries and candidates, {TORCH_RUNDIR}, which does not exist (no "
                                f"{TORCH_RUNDIR}/audit.json). Fix: run it first, with the same --config but without "
                                "the backend's --configfile; or ask for this run's audit alone: snakemake "
                                f"{RUNDIR}/audit.json (with this invocation's options).")
        files = {f"{side}_{key}": f"{rundir}/{name}" for side, rundir in (("torch", TORCH_RUNDIR), ("backend", RUNDIR))
                 for key, name in (("audit", "audit.json"), ("manifest", "manifest.json"),
                                   ("per_query", "per_query.tsv"), ("pairs", "pairs.tsv"), ("groups", "groups.tsv"))}
        return {**files, "derived_pins": P["derived_pins"]}  # the backend's pinned file (both audits' subject)

    rule retention:
        """The torch run's and this run's audited files (each read once against its audited manifest): both analyses
        on the same groups and draws, the interval of the difference of their primary deltas, the verdicts changed,
        and the logits' agreement (rerank_study.retention)."""
        input:
            unpack(_retention_inputs),
        output:
            json=P["retention_json"],
            md=P["retention_md"],
        params:
            code=CODE,  # library source hash: a change in the science reruns the rule
            backend=BACKEND,
            runs=[TORCH_RUN, RUN],
        log:
            f"{OUT}/retention/{RUN}/retention.log",  # beside its outputs (nothing is written into a run folder)
        script:
            "../scripts/retention.py"
