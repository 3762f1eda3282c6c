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

# This checkout's library, for the Snakefile AND for every rule script (they run in subprocesses that
# inherit PYTHONPATH, which Python puts before site-packages): never another clone's installed copy.
_LIB = str(Path(workflow.basedir) / "workflow")
sys.path.insert(0, _LIB)
os.environ["PYTHONPATH"] = os.pathsep.join([_LIB] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                                      if p and p != _LIB])

from snakemake.exceptions import WorkflowError
from rerank_study.errors import ConfigError
from rerank_study.config import validate_config

configfile: str(Path(workflow.basedir) / "config" / "config.yaml")

try:
    validate_config(config)
except ConfigError as exc:
    raise WorkflowError(str(exc)) from None


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/candidates.smk"
include: "workflow/rules/score.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/analyse.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/confirm.smk"


rule all:
    input:
        # --config repin=...: a re-pinning invocation (writes the lockfiles, analyses nothing);
        # otherwise the confirmation opening, or the development run up to its audit
        [P[f"freeze_{name}"] for name in sorted(REPIN)] if REPIN else (P["opening"] if CONFIRM else P["audit"]),
    default_target: True
