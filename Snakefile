# Reproducible, sealed evaluation of a cross-encoder reranker and an RRF blend on BEIR SciFact.
#
#   snakemake --cores 4 --config data_mirror=../shared/data/scifact scorer=stand-in   (offline, stand-in)
#   snakemake --cores 4 --config model_dir=/path/to/ms-marco-MiniLM-L6-v2             (the pinned model)
#   add smoke=true for 5 queries x 10 candidates through the same code.
#
# Config: config/config.yaml (every key documented in config/README.md), validated against
# workflow/schemas/config.schema.yaml before anything runs.

import os
import sys
from pathlib import Path

# Byte code: neither this process nor its jobs write caches into the checkout's code folders
sys.dont_write_bytecode = True
os.environ["PYTHONDONTWRITEBYTECODE"] = "1"

# This checkout's library, for the Snakefile AND for every rule script (they run in subprocesses that
# inherit PYTHONPATH, which Python puts before site-packages): never another clone's installed copy.
_LIB = str(Path(workflow.basedir) / "workflow")
sys.path.insert(0, _LIB)
os.environ["PYTHONPATH"] = os.pathsep.join([_LIB] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                                      if p and p != _LIB])

from snakemake.exceptions import WorkflowError

from rerank_study.settings import studies as _studies
from rerank_study.core.errors import PipelineError

configfile: str(Path(workflow.basedir) / "config" / "config.yaml")

# config.yaml + the command line, validated; --config studies=[a,b,...]: each study's config (studies=[a]: this
# invocation IS study a, its config replaces the default study's)
try:
    STUDY_CONFIGS = _studies.invocation_studies(config, workflow.config_settings.overwrite_config, workflow.basedir)
except PipelineError as exc:
    raise WorkflowError(str(exc)) from None
if len(STUDY_CONFIGS) == 1 and "synthesis" in sys.argv[1:]:  # the target asked for, on one study's datasets
    raise WorkflowError(f"REFUSED: a synthesis needs two or more datasets (got 1) (studies={list(STUDY_CONFIGS)}). "
                        "Fix: --config studies=[<a>,<b>,...], one study per dataset.")
if config["family"] and len(STUDY_CONFIGS) < 2:  # a family is confirmed over its studies, two or more
    raise WorkflowError(f"REFUSED: family={config['family']} pools the openings of a family's studies; "
                        f"studies={list(STUDY_CONFIGS)} names {len(STUDY_CONFIGS)}. Fix: --config studies=[<a>,<b>,...] "
                        f"family={config['family']} (the family's studies, in its order: "
                        "lockfiles/families/<name>/family_protocol.json).")
if len(STUDY_CONFIGS) == 1:
    config.clear()
    config.update(next(iter(STUDY_CONFIGS.values())))


if len(STUDY_CONFIGS) > 1:

    include: "workflow/rules/studies.smk"

    rule all:
        input:
            [f"{r}/audit.json" for r in STUDY_RUNS.values()],
            [f"{r}/{n}.parquet" for r in STUDY_RUNS.values() for n in ("pairs", "per_query")],
            f"{CROSS}.tsv",
        default_target: True

else:

    include: "workflow/rules/main.smk"

    rule all:
        input:
            # --config repin=...: a re-pinning invocation (writes the lockfiles, analyses nothing);
            # otherwise the confirmation opening, or the development run up to its audit
            [P[f"freeze_{name}"] for name in sorted(REPIN)] if REPIN else (P["opening"] if CONFIRM else P["audit"]),
            [] if REPIN else [P["pairs_parquet"], P["per_query_parquet"]],
            # a derived backend's development run: its conclusion retention against the torch run (retention.smk)
            [P["retention_md"]] if DERIVED and not (REPIN or CONFIRM) else [],
        default_target: True

