"""Rule freeze_model (only with --config repin=model): the first pins of a study's cross-encoder, from
model_dir, a Hugging Face cache or a download at the named revision, written to <lockdir>/model_pins.json
(rerank_study.reranker.model_pinning). This changes the experiment: commit the lock folder."""

import logging
from pathlib import Path

from rerank_study.core.errors import PipelineError
from rerank_study.core.fileio import write_json
from rerank_study.core.rule import run
from rerank_study.reranker import model_pinning

log = logging.getLogger("freeze_model")


def main(sm):
    if not sm.params.allowed:
        raise PipelineError("freeze_model pins a study's cross-encoder (an input of the experiment). Ask for "
                            "it explicitly: snakemake --config repin=model model_dir=... revision=...")
    folder, revision, source = model_pinning.check_request(sm.config, sm.params.lockdir)
    pinned = model_pinning.model_pins(folder, sm.config["study"]["reranker"], revision, source)
    if Path(sm.params.pins).exists():  # (check_request refused an existing file; none may appear meanwhile)
        raise PipelineError(f"ALREADY PINNED: {sm.params.pins} appeared while pinning; nothing was written.")
    write_json(sm.params.pins, pinned)
    write_json(sm.output[0], {"pinned": pinned, "pins_file": str(sm.params.pins)})
    log.warning("PINNED %s @ %s (%d files, weights sha256 %s) from %s into %s: commit it",
                pinned["cross_encoder"]["repo"], revision, len(pinned["cross_encoder"]["files"]),
                pinned["cross_encoder"]["files"][model_pinning.WEIGHTS]["sha256"], source, sm.params.pins)


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
