# Several studies in one invocation (--config studies=[a,b,...]): each study is a Snakemake module of this
# same workflow with its own config (results/<study>/, resources/<study>/, its own lock folder), its rules
# prefixed with study_<name>_; then one cross-study table over the audited runs. The modules are declared
# with Snakemake's own `module` and `use rule` statements, written for this invocation's study names into a
# generated file that is included here (rerank_study.settings.studies.modules_file): the statements need literal names.

from rerank_study.core import layout as _layout
from rerank_study.settings.config import run_name as _run_name
from rerank_study.core.names import CROSS_ENCODER as _CROSS_ENCODER

if config["unseal"]:
    raise WorkflowError(f"unseal opens the sealed confirmation of ONE study; studies={config['studies']} names "
                        f"{len(STUDY_CONFIGS)}. Fix: --config studies=[<the study>] unseal=<its protocol sha256>.")
if config["repin"]:
    raise WorkflowError(f"repin={config['repin']} re-pins ONE study's lock folder; studies={config['studies']} names "
                        f"{len(STUDY_CONFIGS)}. Fix: --config studies=[<the study>] repin={config['repin']}.")

# a family of studies (--config family=<name>): every study has completed its opening under the protocol the family
# recorded, started after the family was frozen; else refused here, before any job (rerank_study.seal.family)
FAMILY = None
if config["family"]:
    from rerank_study.seal import family as _family

    try:
        FAMILY = _family.check_confirmation(config, STUDY_CONFIGS, workflow.basedir)
    except PipelineError as exc:
        raise WorkflowError(str(exc)) from None
elif "synthesis_confirm" in sys.argv[1:]:
    raise WorkflowError("REFUSED: synthesis_confirm decides a frozen family of studies, and none is named. Fix: "
                        "--config studies=[<a>,<b>,...] family=<name> (python scripts/confirm.py freeze-family "
                        "froze it; docs/across-datasets.md).")


# (an absolute path: Snakemake resolves a relative include against this file's folder, not the working directory)
include: str(_studies.modules_file(STUDY_CONFIGS, Path(config["resources"]).resolve() / "studies"))


STUDY_RUNS = {s: f"{c['results']}/{_run_name(c)}" for s, c in STUDY_CONFIGS.items()}  # study name -> its run folder
SCORED = [s for s, c in STUDY_CONFIGS.items() if c["study"]["reranker_kind"] == _CROSS_ENCODER]  # a cross-encoder
CROSS = f"{config['results']}/cross-study/{'+'.join(STUDY_CONFIGS)}/cross_study"
SYNTHESIS = f"{config['results']}/synthesis/{'+'.join(STUDY_CONFIGS)}"
# a declared synthesis (config synthesis.weighting) is a section of the cross-study report; none: a line says so
SYNTHESIS_DECLARED = bool((config.get("synthesis") or {}).get("weighting"))


rule cross_study:
    """One row per study: the three method means, the primary delta with its grouped interval, n queries,
    n groups, the reranker (kind, identity, sha256), its backend, the audit verdict (each study's run must have passed
    its audit); then the retention section: each study of a derived backend against the invocation's fp32 torch study
    of the same model, inputs and settings (rerank_study.repro.retention_run, as rule retention); then the section
    "Across datasets": synthesis.md as its passing audit lists it when the invocation declares a synthesis
    (config synthesis.weighting; rule synthesis is then run first), a line saying none is declared otherwise."""
    input:
        summaries=[f"{r}/summary.json" for r in STUDY_RUNS.values()],
        audits=[f"{r}/audit.json" for r in STUDY_RUNS.values()],
        manifests=[f"{r}/manifest.json" for r in STUDY_RUNS.values()],  # what each reranker is (identity, sha256)
        # the retention's sides, of each scored study (a run file has no pairs), and each study's derived pins
        per_query=[f"{STUDY_RUNS[s]}/per_query.tsv" for s in SCORED],
        pairs=[f"{STUDY_RUNS[s]}/pairs.tsv" for s in SCORED],
        groups=[f"{STUDY_RUNS[s]}/groups.tsv" for s in SCORED],
        scoring=[f"{STUDY_RUNS[s]}/measurements/scoring.json" for s in SCORED],
        derived_pins=[f"{c['lockdir']}/{_layout.DERIVED_PINS}" for c in STUDY_CONFIGS.values()],
        synthesis=[f"{SYNTHESIS}/synthesis.md", f"{SYNTHESIS}/audit.json"] if SYNTHESIS_DECLARED else [],
    output:
        tsv=f"{CROSS}.tsv",
        parquet=f"{CROSS}.parquet",
        md=f"{CROSS}.md",
        retention=f"{CROSS}_retention.tsv",
    params:
        studies=list(STUDY_CONFIGS.values()),
        scored=SCORED,  # the studies whose sides are the per_query, pairs, groups and scoring inputs, in order
        runs=[os.path.basename(r) for r in STUDY_RUNS.values()],
    log:
        f"{config['results']}/cross-study/{'+'.join(STUDY_CONFIGS)}/cross_study.log",
    script:
        "../scripts/cross_study.py"


if "synthesis" in sys.argv[1:]:  # the target asked for: an undeclared weighting or test stops before any job
    from rerank_study.synthesis import synthesis as _synthesis

    try:
        _synthesis.check_declared(config["synthesis"])
        _synthesis.check_tests(config["synthesis"], _synthesis.shared_comparisons(
            [list(c["comparisons"]["all"]) for c in STUDY_CONFIGS.values()]))
    except ValueError as exc:
        raise WorkflowError(f"REFUSED: {exc}.") from None


rule synthesis:
    """One declared answer across the datasets of the invocation's studies (`snakemake synthesis`): the pooled
    primary delta under the declared weighting with its stratified grouped bootstrap interval, a random-effects
    meta-analysis beside it, consistency and leave-one-dataset-out (rerank_study.synthesis). Each study's run
    must have passed its audit."""
    input:
        summaries=[f"{r}/summary.json" for r in STUDY_RUNS.values()],
        audits=[f"{r}/audit.json" for r in STUDY_RUNS.values()],
        manifests=[f"{r}/manifest.json" for r in STUDY_RUNS.values()],
        per_query=[f"{r}/per_query.tsv" for r in STUDY_RUNS.values()],
        groups=[f"{r}/groups.tsv" for r in STUDY_RUNS.values()],
    output:
        json=f"{SYNTHESIS}/synthesis.json",
        tsv=f"{SYNTHESIS}/synthesis.tsv",
        tex=f"{SYNTHESIS}/synthesis.tex",
        md=f"{SYNTHESIS}/synthesis.md",
        html=f"{SYNTHESIS}/synthesis.html",  # synthesis.md as one self-contained page, forest.png inlined
        forest=f"{SYNTHESIS}/forest.png",
        indices=[f"{SYNTHESIS}/indices/{s}.tsv" for s in STUDY_CONFIGS],
        audit=f"{SYNTHESIS}/audit.json",  # its own audit (scripts/audit --synthesis), run by the rule
    params:
        studies=list(STUDY_CONFIGS.values()),
        synthesis=config["synthesis"],
        runs=list(STUDY_RUNS.values()),
        audit=[sys.executable, str(Path(workflow.basedir) / "scripts" / "audit")],
        configfiles=[os.path.abspath(str(c)) for c in workflow.overwrite_configfiles],
    log:
        f"{SYNTHESIS}/synthesis.log",
    script:
        "../scripts/synthesis.py"


if FAMILY:
    # each study's completed opening (its ledger's completed line names the run folder), under results/<study>/
    FAMILY_RUNS = {s: f"{STUDY_CONFIGS[s]['results']}/{o['run']}" for s, o in FAMILY["openings"].items()}
    CONFIRMED = f"{config['results']}/families/{FAMILY['name']}"

    rule synthesis_confirm:
        """The family's confirmation (`snakemake synthesis_confirm --config family=<name> studies=[...]`): the
        synthesis of rule synthesis on each study's completed opening, under the family's frozen synthesis block,
        audited; then its decision (the pooled interval's lower bound above the threshold) in decision.json and
        synthesis.md, and a completed line in the family's ledger."""
        input:
            summaries=[f"{r}/summary.json" for r in FAMILY_RUNS.values()],
            audits=[f"{r}/audit.json" for r in FAMILY_RUNS.values()],
            manifests=[f"{r}/manifest.json" for r in FAMILY_RUNS.values()],
            per_query=[f"{r}/per_query.tsv" for r in FAMILY_RUNS.values()],
            groups=[f"{r}/groups.tsv" for r in FAMILY_RUNS.values()],
        output:
            json=f"{CONFIRMED}/synthesis.json",
            tsv=f"{CONFIRMED}/synthesis.tsv",
            tex=f"{CONFIRMED}/synthesis.tex",
            md=f"{CONFIRMED}/synthesis.md",
            html=f"{CONFIRMED}/synthesis.html",
            forest=f"{CONFIRMED}/forest.png",
            indices=[f"{CONFIRMED}/indices/{s}.tsv" for s in STUDY_CONFIGS],
            audit=f"{CONFIRMED}/audit.json",
            decision=f"{CONFIRMED}/decision.json",
        params:
            studies=list(STUDY_CONFIGS.values()),
            synthesis=FAMILY["protocol"]["synthesis"],  # the frozen block (the invocation's equals it)
            runs=list(FAMILY_RUNS.values()),
            audit=[sys.executable, str(Path(workflow.basedir) / "scripts" / "audit")],
            configfiles=[os.path.abspath(str(c)) for c in workflow.overwrite_configfiles],
            family=FAMILY,
            synthesis_script=str(Path(workflow.basedir) / "workflow" / "scripts" / "synthesis.py"),
        log:
            f"{CONFIRMED}/synthesis.log",
        script:
            "../scripts/synthesis_confirm.py"
