"""Rule freeze_data (only with --config repin=data): the first verified acquisition of a catalogue dataset
writes <lockdir>/data_pins.json (rerank_study.catalogue). This changes the experiment: commit the lock folder."""

import logging
from pathlib import Path

from rerank_study import catalogue
from rerank_study.errors import PipelineError
from rerank_study.fileio import write_json
from rerank_study.rule import run

log = logging.getLogger("freeze_data")


def split_of(qrels_name: str) -> str:
    """'qrels/dev.tsv' -> 'dev' (the catalogue names qrels by split)."""
    return Path(qrels_name).stem


def main(sm):
    if not sm.params.allowed:
        raise PipelineError("freeze_data pins a dataset (an input of the experiment). Ask for it explicitly: "
                            "snakemake --config repin=data [data_zip=/path/to/<dataset>.zip]")
    entry = catalogue.load_entry(sm.input.catalogue, sm.params.dataset)
    pins = catalogue.pin_first_acquisition(entry, sm.params.pins, dev_qrels=split_of(sm.params.dev),
                                           confirm_qrels=split_of(sm.params.confirm),
                                           zip_path=sm.config["data_zip"] or None,
                                           split=sm.params.split if sm.params.dev == sm.params.confirm else None,
                                           timeout=sm.config["data"]["download_timeout_s"])
    write_json(sm.output[0], {"pinned": pins, "pins_file": str(sm.params.pins)})
    log.warning("PINNED dataset %s into %s (zip sha256 %s): commit it", sm.params.dataset, sm.params.pins,
                pins["zip"]["sha256"])


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
