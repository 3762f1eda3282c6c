"""Rule standin_model: build the STAND-IN cross-encoder deterministically (explicit choice only)."""

import logging
from pathlib import Path

from rerank_study import models
from rerank_study.fileio import read_json
from rerank_study.rule import run

log = logging.getLogger("standin")


def main(sm):
    mp = read_json(sm.input.model_pins)
    meta = models.build_standin(mp["bi_encoder"], mp["cross_encoder"], Path(sm.output[0]).parent,
                                sm.params.head_seed, sm.params.head_std)
    log.warning("built the STAND-IN scorer %s: its scores carry NO meaning", meta["identity"])


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
