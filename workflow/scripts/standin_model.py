"""Rule standin_model: build the STAND-IN cross-encoder deterministically (explicit choice only)."""

import logging
from pathlib import Path

from rerank_study.core.errors import PipelineError
from rerank_study.core.fileio import read_json
from rerank_study.core.rule import run
from rerank_study.reranker import models

log = logging.getLogger("standin")


def main(sm):
    mp = read_json(sm.input.model_pins)
    # the stand-in's source (all-MiniLM-L6-v2) is pinned with the default study only
    if "bi_encoder" not in mp:
        raise PipelineError(
            f"NO STAND-IN FOR {mp['cross_encoder']['repo']}: the STAND-IN is built from all-MiniLM-L6-v2 "
            f"(hidden_size 384), verified by the bi_encoder pins of {sm.input.model_pins}, which pins none; "
            f"this reranker has hidden_size {mp['cross_encoder']['architecture']['hidden_size']}. Fix: score "
            "with the pinned model itself (scorer=pinned, model_dir=<its files>).")
    meta = models.build_standin(mp["bi_encoder"], mp["cross_encoder"], Path(sm.output[0]).parent,
                                sm.params.head_seed, sm.params.head_std)
    models.verify_standin(meta, mp.get("standin"), sm.input.model_pins)
    log.warning("built the STAND-IN scorer %s: its scores carry NO meaning", meta["identity"])


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
