# Report, manifest, the independent audit (standard library only, run with python -I -S) and the
# reproduction check against the committed reference results.


rule report:
    input:
        summary=P["summary"],
        calibration=P["calibration"],
        per_query=P["per_query"],
        pairs=SCORES,
        # the query browser of report.html: the three rankings, the judgements, the groups and the texts
        rankings=P["rankings"],
        qrels=P["run_qrels"],
        groups=P["groups"],
        corpus=P["corpus"],
        queries=P["queries"],
        # the reranker: a cross-encoder's scoring record, shape check and model, or a run file's record
        **({"shape_check": P["shape_check"], "scoring": P["scoring_measurements"], "model": P["model"],
            "bench_score": bench_of("score")} if RERANKER_KIND == CROSS_ENCODER
           else {"reranker": P["reranker_run"], "bench_reranker_scores": bench_of("reranker_scores")}),
        data_pins=P["data_pins"],
        derived=P["derived_pins"],
        groups_meta=P["groups_meta"],
        bench_evaluate=bench_of("evaluate"),
        bench_analyse=bench_of("analyse"),
        # the frozen RRF candidates' retriever lists (a TREC-run study has none: its run is the first stage)
        retrievers=[P["frozen_bm25"], P["frozen_dense"], P["run_qrels"]] if CONFIRM and STUDY["candidates"] == "frozen"
        else [],
        started=[P["opening_started"]] if CONFIRM else [],  # the ledger line recording what was opened, when
    output:
        report=P["report"],
        # marked for `snakemake --report`: the results browser (captions: workflow/report/, STAND-IN banner there)
        html=report(P["report_html"], caption="../report/report_html.rst", category="Report"),
        forest=report(P["forest_plot"], caption="../report/forest.rst", category="Figures"),
        delta=report(P["delta_plot"], caption="../report/primary_delta.rst", category="Figures"),
        power=report(P["power_plot"], caption="../report/power_curve.rst", category="Calibration"),
        measurements=P["report_measurements"],
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
        kind=KIND,
        run=RUN,
        study=STUDY,
        reranker_kind=RERANKER_KIND,
        opening=({"protocol_sha256": UNSEAL["sha256"], "opening": UNSEAL["opening"], "labels": UNSEAL["labels"],
                  "unfinished": UNSEAL["unfinished"], "completed": [e["opening"] for e in UNSEAL["previous"]]}
                 if CONFIRM else None),
    log:
        log_of("report"),
    benchmark:
        bench_of("report")
    script:
        "../scripts/report.py"


rule tables:
    """Paper-ready tables of the methods and comparisons (CSV and LaTeX with booktabs), from summary.json only."""
    localrule: True  # bookkeeping of a second or less: on a cluster it runs beside snakemake (docs/cluster.md)
    input:
        summary=P["summary"],
    output:
        methods_csv=report(P["table_methods_csv"], caption="../report/table_methods.rst", category="Tables"),
        methods_tex=report(P["table_methods_tex"], caption="../report/table_methods.rst", category="Tables"),
        comparisons_csv=report(P["table_comparisons_csv"], caption="../report/table_comparisons.rst",
                               category="Tables"),
        comparisons_tex=report(P["table_comparisons_tex"], caption="../report/table_comparisons.rst",
                               category="Tables"),
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
    log:
        log_of("tables"),
    benchmark:
        bench_of("tables")
    script:
        "../scripts/tables.py"


rule manifest:
    """Every artefact of the run (declared here as an input) with its role, path and sha256."""
    localrule: True  # bookkeeping of a second or less: on a cluster it runs beside snakemake (docs/cluster.md)
    input:
        **{key: P[key] for key in manifest_keys(RUN_QRELS_KEY, RERANKER_KIND)},
        model=P["model"] if RERANKER_KIND == CROSS_ENCODER else P["reranker_run"],  # the reranker's identity
        data_pins=P["data_pins"],
    output:
        P["manifest"],
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
        method=METHOD_SHA,  # everything that decides a result (frozen into the confirmation protocol)
        run=RUN,
        rundir=lambda w, output: os.path.dirname(output[0]),  # paths are written relative to the run folder
        lockdir=LOCK_OF,
        scorer=config["scorer"],
        kind=KIND,
        protocol_sha256=UNSEAL["sha256"] if CONFIRM else None,
        labels=UNSEAL["labels"] if CONFIRM else [],
        settings=SETTINGS,
    log:
        log_of("manifest"),
    benchmark:
        bench_of("manifest")
    script:
        "../scripts/manifest.py"


rule audit:
    """The independent audit of the finished run (its inputs: everything the manifest lists), then (a cross-encoder)
    its second stage: the auditor's own re-inference of batches it draws with fresh randomness (audit.reinfer_batches;
    an opening: every batch) with upstream sentence-transformers, in a child process that needs torch."""
    input:
        manifest=P["manifest"],
        data_pins=P["data_pins"],
        model_pins=[P["model_pins"]] if RERANKER_KIND == CROSS_ENCODER else [],
        derived=P["derived_pins"],
        # a cross-encoder's folder (MODEL.json and the model files): what the auditor re-infers with; a run-file
        # reranker has nothing to re-infer (the audit re-derives its scores from the pinned run)
        model=[P["model"]] if RERANKER_KIND == CROSS_ENCODER else [],
        # a derived backend's file (ce.backend): re-inferred by the auditor with ONNX Runtime
        backend_model=[P["backend_model"]] if DERIVED else [],
    output:
        P["audit"],
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
        rundir=lambda w, input: os.path.dirname(input.manifest),
        lockdir=lambda w, input: os.path.dirname(input.data_pins),
        # the second stage: the auditor's own re-inference (audit.reinfer_batches; an opening: every batch)
        reinfer=lambda w, input: (f"--reinfer {'all' if CONFIRM else config['audit']['reinfer_batches']} --model-dir "
                                  f"{shlex.quote(os.path.dirname(input.model[0]))}"
                                  + (f" --derived-file {shlex.quote(input.backend_model[0])}" if input.backend_model else "")
                                  if input.model else ""),
        python=sys.executable,
        script=str(Path(workflow.basedir) / "scripts" / "audit"),  # a standard-library package: python -I -S <folder>
        study=f"--study {config['study_file']}" if config["study_file"] else "",  # the anchor of another study
        # the config files this invocation gave (snakemake --configfile): the audit merges them over config.yaml
        configfiles=" ".join(f"--configfile {shlex.quote(os.path.abspath(str(c)))}" for c in workflow.overwrite_configfiles),
    threads: config["ce"]["threads"]  # the re-inference stage's torch threads (speed only)
    log:
        log_of("audit"),
    benchmark:
        bench_of("audit")
    shell:
        # -B and a byte-code folder that cannot exist: the audit is compiled from its source (a .pyc beside it is never
        # read) and writes no cache into the checkout; its re-inference child runs with the same python (-I -B)
        "{params.python} -I -S -B -X pycache_prefix=/dev/null/pycache {params.script} {params.rundir} "
        "--lockdir {params.lockdir} {params.study} {params.configfiles} {params.reinfer} "
        "--reinfer-python {params.python} --reinfer-threads {threads} --out {output} > {log} 2>&1"


rule check_reproduction:
    """Compare this finished run with the committed reference results (reads the run, changes nothing)."""
    input:
        manifest=P["manifest"],
        audit=P["audit"],
        reference=[f"{REFERENCE}/{n}" for n in ("reference.json", "logits.tsv", "per_query.tsv")
                   if REFERENCE and Path(f"{REFERENCE}/reference.json").exists()],
    output:
        table=report(P["reproduction"], caption="../report/reproduction.rst", category="Reproduction"),
        json=P["reproduction_json"],
    params:
        # the reference folder (its files are the inputs); where none is committed, where one would be
        refdir=lambda w, input: (os.path.dirname(input.reference[0]) if input.reference
                                 else REFERENCE or "(no reference applies to a confirmation opening)"),
        run=RUN,
        blend_k=SETTINGS["blend_k"],
    log:
        log_of("check_reproduction"),
    script:
        "../scripts/check_reproduction.py"


rule parquet:
    """Parquet copies of pairs.tsv and per_query.tsv (pandas; ids kept as strings, floats read back exactly).
    Conveniences only: the TSVs are the audited artefacts."""
    localrule: True  # bookkeeping of a second or less: on a cluster it runs beside snakemake (docs/cluster.md)
    input:
        pairs=SCORES,  # (a run-file reranker: its reranker_scores.tsv)
        per_query=P["per_query"],
    output:
        pairs=P["pairs_parquet"],
        per_query=P["per_query_parquet"],
    log:
        log_of("parquet"),
    script:
        "../scripts/parquet.py"
