"""Rule manifest: every artefact of the run (each a declared input of this rule) with its role,
path and sha256.

Every path is relative to the run folder (inputs outside it, such as data, splits and the frozen
candidates, as ``../..``-style paths), so the audit finds them from wherever it runs.
``deterministic: false`` marks the measurement files (timings, memory) and the report that shows
them: same inputs and pins give byte-identical files for every other entry."""

import os

from rerank_study.core import layout, names
from rerank_study.core.fileio import read_json, sha256_file, write_json
from rerank_study.core.rule import run


def main(sm):
    rundir = sm.params.rundir
    entries = []
    for key in sm.input.keys():
        if key in ("model", "data_pins"):  # the scorer's identity and the lockfile folder, recorded below
            continue
        path = sm.input.get(key)
        role, scope = layout.role_of(key)
        entries.append({"key": key, "role": role, "scope": scope, "path": os.path.relpath(path, rundir),
                        "sha256": sha256_file(path), "deterministic": key not in layout.NON_DETERMINISTIC})
    model = read_json(sm.input.model)
    write_json(sm.output[0], {
        "run": sm.params.run,
        "scorer": names.scorer_label(sm.params.scorer),
        "model_identity": model["identity"],
        "model_weights_sha256": model["weights_sha256"],
        "lockdir": os.path.relpath(sm.params.lockdir, rundir),
        "kind": sm.params.kind,
        "protocol_sha256": sm.params.protocol_sha256,
        "labels": sm.params.labels,
        "code_sha256": sm.params.code,
        "method_sha256": sm.params.method,
        "settings": sm.params.settings,
        "artefacts": entries,
    })


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
