"""Rule backend_model: the derived file of ce.backend, made from the verified model folder by its pinned
recipe and checked against its pin (rerank_study.reranker.backends.ready: no pin, another library version or
other
bytes stop the run before anything is scored)."""

import logging
from pathlib import Path

from rerank_study.core.fileio import read_json
from rerank_study.core.rule import run
from rerank_study.reranker import backends

log = logging.getLogger("backend_model")


def main(sm):
    arch = read_json(sm.input.model_pins)["cross_encoder"]["architecture"]
    _, sha = backends.ready(Path(sm.input.model).parent, sm.params.backend, arch, sm.input.derived_pins,
                            sm.output[0])
    log.info("derived %s: %s (sha256 %s, its pin's)", sm.params.backend, sm.output[0], sha)


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
