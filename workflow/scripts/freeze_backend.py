"""Rule freeze_backend (only with --config repin=backend): the first pin of ce.backend's derived file, made
from the verified model folder and written into <lockdir>/derived_pins.json
(rerank_study.reranker.backends.pin_into).
This changes the experiment: commit the lock folder."""

import logging
from pathlib import Path

from rerank_study.core.errors import PipelineError
from rerank_study.core.fileio import read_json, write_json
from rerank_study.core.rule import run
from rerank_study.reranker import backends

log = logging.getLogger("freeze_backend")


def main(sm):
    if not sm.params.allowed:
        raise PipelineError(
            "freeze_backend pins a derived reranker (an input of the experiment). Ask for it "
            "explicitly: snakemake --configfile config/backends/<backend>.yaml --config "
            "repin=backend"
        )
    if sm.params.backend == backends.TORCH:
        raise PipelineError(
            "repin=backend: ce.backend is 'torch' (the model itself, nothing to derive). Give the "
            "backend's config file: --configfile config/backends/onnx.yaml (or onnx-int8.yaml)"
        )
    arch = read_json(sm.input.model_pins)["cross_encoder"]["architecture"]
    entry = backends.pin_into(sm.params.pins, sm.params.backend, Path(sm.input.model).parent, arch)
    write_json(sm.output[0], {"pinned": entry, "pins_file": str(sm.params.pins)})
    log.warning(
        "PINNED backend %s of %s: sha256 %s (%d bytes) into %s: commit it",
        sm.params.backend,
        entry["source"]["identity"],
        entry["sha256"],
        entry["bytes"],
        sm.params.pins,
    )


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
