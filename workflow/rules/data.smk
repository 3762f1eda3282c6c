# Pinned SciFact acquisition and the query splits. The confirmation qrels are NOT an output
# here: the development DAG cannot reach them (see confirm.smk and tests/workflow/test_seal_development_dag.py).


rule fetch_data:
    localrule: True  # bookkeeping of a second or less: on a cluster it runs beside snakemake (docs/cluster.md)
    input:
        data_pins=P["data_pins"],
    output:
        corpus=ensure(P["corpus"], sha256=data_sha("corpus.jsonl")),
        queries=ensure(P["queries"], sha256=data_sha("queries.jsonl")),
        qrels_dev=ensure(P["qrels_dev"], sha256=data_sha(QRELS_DEV)),
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
        names=["corpus.jsonl", "queries.jsonl", QRELS_DEV],  # -> output[0], [1], [2]
        cache=P["data_cache"],
        # data_mirror / data_zip / data.url are read from the config inside the script: where the
        # verified bytes came from must not trigger a rerun of everything downstream
    log:
        log_of("fetch_data", per_run=False),
    benchmark:
        bench_of("fetch_data", per_run=False)
    script:
        "../scripts/fetch_data.py"


rule freeze_splits:
    """Explicit re-pinning (--config repin=splits): draw the development split and write both lists
    and their pin into the lockfiles (this changes the experiment: commit it). The lockfiles are
    written as a side effect on purpose: a declared output would be deleted by Snakemake before the
    job runs; the receipt is the declared output."""
    input:  # nothing is read unless re-pinning was asked for (the script then refuses at once)
        **({"queries": P["queries"], "qrels_dev": P["qrels_dev"], "data_pins": P["data_pins"]}
           if "splits" in REPIN else {}),
    output:
        P["freeze_splits"],
    params:
        lockdir=LOCK,
        allowed="splits" in REPIN,
        dev_size=config["splits"]["dev_size"],
        confirm_size=config["splits"]["confirm_size"],
        seed=config["splits"]["seed"],
        qrels_name=QRELS_DEV,  # the pinned name of the development qrels file
        sealed_name=QRELS_SEALED,  # its pin (never the file) says a drawn sealed part's queries
        study=STUDY["name"],
        root=workflow.basedir,  # the repository: the registry of sealed sets the new split is checked against
    log:
        log_of("freeze_splits", per_run=False),
    script:
        "../scripts/freeze_splits.py"


rule splits:
    """Verify the committed split lists against their pins and the data; never draws."""
    localrule: True  # bookkeeping of a second or less: on a cluster it runs beside snakemake (docs/cluster.md)
    input:
        corpus=P["corpus"],  # (BEIR's GenericDataLoader reads the verified folder too: the two readers must agree)
        queries=P["queries"],
        qrels_dev=P["qrels_dev"],
        data_pins=P["data_pins"],
        derived=P["derived_pins"],
        # the committed lists; when this invocation re-pins them, freeze_splits writes them first
        lists=[P["freeze_splits"]] if "splits" in REPIN else list(SPLIT_LISTS.values()),
    output:
        dev=P["split_dev"],
        confirm=P["split_confirm"],
    params:
        code=CODE,  # library source hash: a change in the science reruns the rule
        lists=SPLIT_LISTS,
        dev_size=config["splits"]["dev_size"],
        confirm_size=config["splits"]["confirm_size"],
        seed=config["splits"]["seed"],
        qrels_name=QRELS_DEV,  # the pinned name of the development qrels file
        sealed_name=QRELS_SEALED,  # its pin (never the file) says a drawn sealed part's queries
        study=STUDY["name"],
        lockdir=lambda w, input: os.path.dirname(input.data_pins),
        root=workflow.basedir,  # the repository: the registry of sealed sets (the seal's job-time check)
    log:
        log_of("splits", per_run=False),
    benchmark:
        bench_of("splits", per_run=False)
    script:
        "../scripts/splits.py"


rule freeze_data:
    """Explicit first acquisition (--config repin=data, alone): a BEIR public dataset of the catalogue
    (lockfiles/datasets/beir.json: url, size, md5 as BEIR publishes them) is acquired (data_zip, or the URL),
    checked by size and md5 before it is opened; or a local BEIR-layout folder outside the catalogue (data_dir) is
    read. Either is parsed strictly, and its pins (zip sha256, every file's sha256, qrels content hashes;
    study.qrels_confirm marked sealed) written into the study's lock folder (this changes the experiment: commit
    it). Refuses when the lock folder already pins data."""
    input:
        catalogue=str(Path(workflow.basedir) / config["data"]["catalogue"]) if "data" in REPIN and not config["data_dir"]
        else [],
    output:
        P["freeze_data"],
    params:
        allowed="data" in REPIN,
        pins=P["data_pins"],
        dataset=STUDY["dataset"],
        dev=STUDY["qrels_dev"],
        confirm=STUDY["qrels_confirm"],  # the same file as dev: ONE qrels file, its sealed part drawn (splits.*)
        split={"seed": config["splits"]["seed"], "confirm_size": config["splits"]["confirm_size"]},
        lockdir=LOCK,
        root=workflow.basedir,  # the repository: the registry of sealed sets the new pins are checked against
    log:
        log_of("freeze_data", per_run=False),
    script:
        "../scripts/freeze_data.py"
