# Several studies in one invocation (--config studies=[a,b,...]): each study is a Snakemake module of
# this same workflow with its own config (results/<study>/, resources/<study>/, its own lock folder),
# its rules prefixed with study_<name>_; then one cross-study table over the audited runs.
#
# The loop uses the two calls the `module` / `use rule * from` statements compile to (Snakemake 9.27.1,
# snakemake/workflow.py Workflow.module and Workflow.userule): the statements need literal names.

from rerank_study.config import run_name as _run_name

if config["unseal"]:
    raise WorkflowError(f"unseal opens the sealed confirmation of ONE study; studies={config['studies']} names "
                        f"{len(STUDY_CONFIGS)}. Fix: --config studies=[<the study>] unseal=<its protocol sha256>.")
if config["repin"]:
    raise WorkflowError(f"repin={config['repin']} re-pins ONE study's lock folder; studies={config['studies']} names "
                        f"{len(STUDY_CONFIGS)}. Fix: --config studies=[<the study>] repin={config['repin']}.")

STUDY_RUNS = {}  # study name -> its run folder
for _study, _cfg in STUDY_CONFIGS.items():
    _module = _studies.module_name(_study)
    workflow.module(snakefile=workflow.main_snakefile, config=_cfg, name=_module)
    workflow.userule(rules=["*"], from_module=_module, exclude_rules=[], name_modifier=f"{_module}_*",
                     lineno=0)(lambda: None)
    STUDY_RUNS[_study] = f"{_cfg['results']}/{_run_name(_cfg)}"

CROSS = f"{config['results']}/cross-study/{'+'.join(STUDY_CONFIGS)}/cross_study"


rule cross_study:
    """One row per study: the three method means, the primary delta with its grouped interval, n queries,
    n groups, the audit verdict (each study's run must have passed its audit)."""
    input:
        summaries=[f"{r}/summary.json" for r in STUDY_RUNS.values()],
        audits=[f"{r}/audit.json" for r in STUDY_RUNS.values()],
    output:
        tsv=f"{CROSS}.tsv",
        parquet=f"{CROSS}.parquet",
        md=f"{CROSS}.md",
    params:
        studies=list(STUDY_CONFIGS.values()),
        runs=[os.path.basename(r) for r in STUDY_RUNS.values()],
    log:
        f"{config['results']}/cross-study/{'+'.join(STUDY_CONFIGS)}/cross_study.log",
    script:
        "../scripts/cross_study.py"
