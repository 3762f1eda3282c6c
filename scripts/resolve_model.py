"""Rule pinned_model: place the verified pinned cross-encoder files under resources/models/."""

import logging
from pathlib import Path

from rerank_study import models
from rerank_study.rule import run_rule

log = logging.getLogger("pinned_model")


def main(sm):
    ce = models.load_model_pins(sm.params.lockdir)["cross_encoder"]
    meta = models.resolve_pinned_cross_encoder(ce, Path(sm.output[0]).parent, model_dir=sm.config["model_dir"])
    log.info("pinned cross-encoder %s from %s (weights sha256 %s)", meta["identity"], meta["source"],
             meta["weights_sha256"])


run_rule(snakemake, main)  # noqa: F821
