"""Rule retention: a derived backend's run against the same study's fp32 torch run
(rerank_study.repro.retention_run: each side read from the files its passing audit vouches for, both held to
what they claim and compared on the same queries, inputs, groups and settings but the backend)
-> retention.json and retention.md."""

import logging

from rerank_study.core.fileio import atomic_write_text, write_json
from rerank_study.core.rule import run
from rerank_study.repro import retention_run

log = logging.getLogger("retention")


def main(sm):
    keys = [k for k, _ in retention_run.SIDE_FILES]
    sides = [retention_run.side({k: getattr(sm.input, f"{which}_{k}") for k in keys}, n)
             for which, n in zip(("torch", "backend"), sm.params.runs)]
    rec = retention_run.record(*sides, sm.params.backend, sm.input.derived_pins, sm.params.runs)
    write_json(sm.output.json, rec)
    atomic_write_text(sm.output.md, retention_run.markdown(rec))
    log.info("retention of %s: conclusion %s; verdicts changed: %s", sm.params.backend,
             "retained" if rec["conclusion"]["conclusion_retained"] else "NOT retained",
             rec["conclusion"]["verdicts_changed"] or "none")


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
