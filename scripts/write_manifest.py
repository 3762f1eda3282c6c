"""Rule manifest: every artefact of the run with its role, path and sha256.

Every path is relative to the run folder (inputs outside it, such as data, splits and the
frozen candidates, as ``../..``-style paths), so the audit finds them from wherever it runs. ``deterministic: false`` marks the measurement files
(timings, memory) and the report that shows them: same inputs and pins give byte-identical
files for every other entry."""

import os
from pathlib import Path

from rerank_study.fileio import read_json, sha256_file, write_json
from rerank_study.rule import run_rule

INPUTS = [("corpus", "corpus"), ("queries", "queries"), ("split_dev", "split_dev"),
          ("split_confirm", "split_confirm"), ("candidates", "candidates")]
RUN = [("run_queries", "analysed_queries"), ("run_candidates", "candidates"), ("run_qrels", "qrels_run"),
       ("groups", "groups"), ("groups_meta", "groups"), ("pairs", "pairs"), ("shape_check", "shape_check"),
       ("rankings", "rankings"), ("run_rrf", "runs"), ("run_ce", "runs"), ("run_blend", "runs"),
       ("per_query", "per_query"), ("grouped_indices", "bootstrap_indices"), ("query_indices", "bootstrap_indices"),
       ("replicates", "replicates"), ("summary", "summary"), ("forest_plot", "figure"), ("delta_plot", "figure"),
       ("report", "report"), ("scoring_measurements", "measurements")]
NON_DETERMINISTIC = {"report", "scoring_measurements"}


def main(sm):
    p = sm.params.paths
    rundir = Path(sm.params.rundir)
    entries = []
    qk = sm.params.qrels_key  # qrels_dev, or qrels_confirm in a confirmation opening
    for key, role in INPUTS + [(qk, qk)]:
        entries.append({"key": key, "role": role, "scope": "input", "path": os.path.relpath(p[key], rundir),
                        "sha256": sha256_file(p[key]),
                        "deterministic": True})
    for key, role in RUN:
        path = Path(p[key])
        entries.append({"key": key, "role": role, "scope": "run", "path": str(path.relative_to(rundir)),
                        "sha256": sha256_file(path), "deterministic": key not in NON_DETERMINISTIC})
    meas = Path(sm.input.measurements)
    entries.append({"key": "report_measurements", "role": "measurements", "scope": "run",
                    "path": str(meas.relative_to(rundir)), "sha256": sha256_file(meas), "deterministic": False})
    model = read_json(p["model"])
    write_json(sm.output[0], {
        "run": sm.params.run,
        "scorer": "STAND-IN" if sm.params.scorer == "stand-in" else "pinned",
        "model_identity": model["identity"],
        "model_weights_sha256": model["weights_sha256"],
        "lockdir": os.path.relpath(sm.params.lockdir, rundir),
        "kind": sm.params.kind,
        "protocol_sha256": sm.params.protocol_sha256,
        "labels": sm.params.labels,
        "code_sha256": sm.params.code,
        "settings": sm.params.settings,
        "artefacts": entries,
    })


run_rule(snakemake, main)  # noqa: F821
