"""Rule pinned_model: place the verified pinned cross-encoder files under resources/models/."""

import logging
from pathlib import Path

from rerank_study import models
from rerank_study.fileio import read_json
from rerank_study.rule import run

log = logging.getLogger("pinned_model")


def main(sm):
    ce = read_json(sm.input.model_pins)["cross_encoder"]
    meta = models.resolve_pinned_cross_encoder(ce, Path(sm.output[0]).parent, model_dir=sm.config["model_dir"])
    log.info("pinned cross-encoder %s from %s (weights sha256 %s)", meta["identity"], meta["source"],
             meta["weights_sha256"])


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
