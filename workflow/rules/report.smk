# Report, manifest and the independent audit (standard library only, run with python -I -S).


rule report:
    input:
        summary=P["summary"],
        per_query=P["per_query"],
        pairs=P["pairs"],
        shape_check=P["shape_check"],
        scoring=P["scoring_measurements"],
        model=P["model"],
        derived=P["derived_pins"],
        groups_meta=P["groups_meta"],
        bench_score=bench_of("score"),
        bench_evaluate=bench_of("evaluate"),
        bench_bootstrap=bench_of("bootstrap"),
        retrievers=[P["frozen_bm25"], P["frozen_dense"], P["run_qrels"]] if CONFIRM else [],
    output:
        report=P["report"],
        forest=P["forest_plot"],
        delta=P["delta_plot"],
        measurements=f"{RUNDIR}/measurements/report.json",
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
        lockdir=LOCK,
        kind=KIND,
        run=RUN,
        opening=({"protocol_sha256": UNSEAL["sha256"], "opening": UNSEAL["opening"], "labels": UNSEAL["labels"],
                  "protocol": UNSEAL["protocol"]} if CONFIRM else None),
    log:
        log_of("report"),
    benchmark:
        bench_of("report")
    script:
        "../../scripts/make_report.py"


rule manifest:
    input:
        report=P["report"],
        measurements=f"{RUNDIR}/measurements/report.json",
    output:
        P["manifest"],
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
        paths=P,
        run=RUN,
        rundir=RUNDIR,
        lockdir=LOCK,
        scorer=config["scorer"],
        kind=KIND,
        qrels_key="qrels_confirm" if CONFIRM else "qrels_dev",
        protocol_sha256=UNSEAL["sha256"] if CONFIRM else None,
        labels=UNSEAL["labels"] if CONFIRM else [],
        settings={
            "n_queries": N_QUERIES, "depth": DEPTH, "blend_k": config["blend"]["k"],
            "metrics": config["metrics"], "bootstrap_B": config["bootstrap"]["B"],
            "bootstrap_seed": BOOTSTRAP_SEED, "percentiles": config["bootstrap"]["percentiles"],
            "threshold": config["threshold"], "comparisons": config["comparisons"],
            "max_length": config["ce"]["max_length"],
            "evalstats": config["evalstats"],
        },
    log:
        log_of("manifest"),
    benchmark:
        bench_of("manifest")
    script:
        "../../scripts/write_manifest.py"


rule audit:
    input:
        manifest=P["manifest"],
    output:
        P["audit"],
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
        rundir=RUNDIR,
        lockdir=LOCK,
        python=sys.executable,
        script=str(Path(workflow.basedir) / "scripts" / "audit.py"),
    log:
        log_of("audit"),
    benchmark:
        bench_of("audit")
    shell:
        "{params.python} -I -S {params.script} {params.rundir} --lockdir {params.lockdir} --out {output} > {log} 2>&1"


rule check_reproduction:
    """Compare this finished run with the committed reference results (reads the run, changes nothing)."""
    input:
        manifest=P["manifest"],
        audit=P["audit"],
        reference=[f"{REFERENCE}/{n}" for n in ("reference.json", "logits.tsv", "per_query.tsv")
                   if REFERENCE and Path(f"{REFERENCE}/reference.json").exists()],
    output:
        table=P["reproduction"],
        json=P["reproduction_json"],
    params:
        refdir=REFERENCE or f"{LOCK}/reference/(none for a confirmation opening)",
        run=RUN,
    log:
        log_of("check_reproduction"),
    script:
        "../../scripts/check_reproduction.py"
