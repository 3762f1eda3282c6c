"""Rule standin_model: build the STAND-IN cross-encoder deterministically (explicit choice only)."""

import logging
from pathlib import Path

from rerank_study import models
from rerank_study.rule import run_rule

log = logging.getLogger("standin")


def main(sm):
    mp = models.load_model_pins(sm.params.lockdir)
    meta = models.build_standin(mp["bi_encoder"], mp["cross_encoder"], Path(sm.output[0]).parent,
                                sm.params.head_seed, sm.params.head_std)
    log.warning("built the STAND-IN scorer %s: its scores carry NO meaning", meta["identity"])


run_rule(snakemake, main)  # noqa: F821
