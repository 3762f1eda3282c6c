# Conclusion retention of a derived backend (ce.backend: onnx, onnx-int8; docs/backends.md): this run against the
# same study's fp32 torch run of the same queries and candidates (which must exist and have passed its audit: it is
# read, never made, by this invocation).

if DERIVED and not CONFIRM and not REPIN:
    from rerank_study.repro import retention_run as _retention_run

    TORCH_RUN = run_name({**config, "ce": {**config["ce"], "backend": TORCH_BACKEND}})
    TORCH_RUNDIR = f"{OUT}/{TORCH_RUN}"
    if config["run_name"]:
        raise WorkflowError(f"run_name={config['run_name']} with backend {BACKEND!r}: the retention finds the torch run "
                            "by the development run's own name (dev / smoke, -standin); leave run_name empty.")

    rule retention:
        """The torch run's and this run's audited files (each read once against its audited manifest): both analyses
        on the same groups and draws, the interval of the difference of their primary deltas, the verdicts changed,
        and the logits' agreement (rerank_study.repro.retention)."""
        input:
            # both runs' audited files; the torch run is read, never made, here (a stop names the command)
            unpack(lambda w: _retention_run.rule_inputs(TORCH_RUNDIR, RUNDIR, P["derived_pins"], BACKEND)),
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
