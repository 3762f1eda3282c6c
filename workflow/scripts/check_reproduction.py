"""Rule check_reproduction: is this finished run byte-identical to the committed reference, and where it is
not, did the experiment reproduce? One verdict line (IDENTICAL / REPRODUCED / DIFFERENT / NOT-COMPARABLE /
NO-REFERENCE), the artefact table and the reproducibility measures; it reads the run and the reference and
changes nothing else."""

import logging
from pathlib import Path

from rerank_study.core.fileio import atomic_write_text, write_json
from rerank_study.core.rule import run
from rerank_study.repro import reference

log = logging.getLogger("check_reproduction")


def main(sm):
    rundir = Path(sm.input.manifest).parent
    result = reference.compare(rundir, sm.params.refdir, sm.params.blend_k)
    write_json(sm.output.json, result)
    atomic_write_text(sm.output.table, reference.render(result, sm.params.run))
    (log.info if result["verdict"] in ("IDENTICAL", "REPRODUCED") else log.warning)(
        "REPRODUCTION %s: %s against %s (table: %s)", result["verdict"], sm.params.run, sm.params.refdir,
        sm.output.table)


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
