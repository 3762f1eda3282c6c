"""Rule pinned_model: place the verified pinned cross-encoder files under resources/models/."""

import logging
from pathlib import Path

from rerank_study.core.fileio import read_json, write_json
from rerank_study.core.rule import run
from rerank_study.reranker import models

log = logging.getLogger("pinned_model")


def main(sm):
    ce = read_json(sm.input.model_pins)["cross_encoder"]
    dest = Path(sm.output[0]).parent
    meta = models.resolve_pinned_cross_encoder(ce, dest, model_dir=sm.config["model_dir"],
                                               hf_cache_dir=sm.config["hf_cache"] or None)
    models.check_architecture(ce, dest, ce["repo"])  # the pinned facts are the verified config.json's
    if sm.params.label_index is not None:
        meta = models.with_label_index(meta, sm.params.label_index)
        write_json(dest / "MODEL.json", meta)
    log.info("pinned cross-encoder %s from %s (weights sha256 %s)", meta["identity"], meta["source"],
             meta["weights_sha256"])


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
