"""Rule freeze_reranker_run (only with --config repin=reranker_run run_file=FILE): a run-file reranker's
development run, checked against the frozen candidates, becomes <lockdir>/reranker/dev.trec (a byte copy) and
its pin in derived_pins.json. This changes the experiment: commit the lock folder."""

import logging
from pathlib import Path

from rerank_study.core import layout
from rerank_study.core.errors import PipelineError
from rerank_study.core.fileio import atomic_path, read_once, write_json
from rerank_study.core.rule import run
from rerank_study.data import pins
from rerank_study.reranker import reranker_run

log = logging.getLogger("freeze_reranker_run")


def main(sm):
    if not sm.params.allowed:
        raise PipelineError("freeze_reranker_run pins the reranker's development run (an input of the "
                            "experiment). Ask for it explicitly: snakemake --config repin=reranker_run "
                            "run_file=/path/to/your.run")
    cfg, lockdir, source = sm.config, Path(sm.params.lockdir), Path(sm.input.run_file)
    submitted = read_once(source)  # checked, copied and pinned: these bytes
    user_run = reranker_run.checked_run(cfg, lockdir, submitted, "development", "nothing was frozen")
    frozen, dev, _ = reranker_run.frozen_and_splits(lockdir)
    depth = cfg["candidates"]["depth"]
    with atomic_path(lockdir / layout.RERANKER_DEV_RUN) as tmp:
        tmp.write_bytes(submitted.data)
    pin = reranker_run.pin(layout.RERANKER_DEV_RUN, submitted.data, source.name, len(dev), depth)
    pins.set_pin(lockdir, reranker_run.PIN_NAME, pin)
    tied = reranker_run.tied_queries(user_run, {q: frozen[q][:depth] for q in dev}, dev)
    if tied:
        log.warning("STUDY %s: the run %s gives %d development query(ies) one score for all candidates (%s): "
                    "%s",
                    cfg["study"]["name"], source, len(tied), ", ".join(tied[:20]), reranker_run.TIE_WARNING)
    write_json(sm.output[0], {"pinned": pin, "lockdir": str(lockdir), "all_tied_queries": tied})
    log.warning("PINNED the reranker run %s of study %s as %s (sha256 %s): commit the lock folder", source,
                cfg["study"]["name"], lockdir / layout.RERANKER_DEV_RUN, pin["sha256"])


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
