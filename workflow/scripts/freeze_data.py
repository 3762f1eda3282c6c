"""Rule freeze_data (only with --config repin=data): the first verified acquisition of a catalogue dataset, or
of a local BEIR-layout folder outside it (data_dir), writes <lockdir>/data_pins.json
(rerank_study.data.catalogue)
and the lock folder's sealed-set record, both checked against the seal registry first. This changes the
experiment: commit the lock folder."""

import logging
from pathlib import Path

from rerank_study.core.errors import PipelineError
from rerank_study.core.fileio import write_json
from rerank_study.core.rule import run
from rerank_study.data import beir, catalogue, pins
from rerank_study.seal import registry

log = logging.getLogger("freeze_data")


def split_of(qrels_name: str) -> str:
    """'qrels/dev.tsv' -> 'dev' (the catalogue names qrels by split)."""
    return Path(qrels_name).stem


def seal_check(sm, records: dict):
    """Before the pins are written: the new lock folder's sealed set, and its development qrels checked
    against every sealed set of the registry (a folder whose development side holds a sealed set's data cannot
    be made)."""
    lockdir = Path(sm.params.lockdir)

    def check(new_pins: dict, folder: Path):
        files = new_pins["files"]
        sealed = next(n for n, p in files.items() if p.get("role") == "qrels_confirm")
        dev = next(n for n, p in files.items() if p.get("role") == "qrels_dev")
        queries = beir.read_queries(folder / "queries.jsonl")
        record = registry.sealed_record(new_pins, queries, beir.read_qrels(folder / sealed))
        side = registry.DevelopmentSide(lockdir, new_pins["dataset"], files["corpus.jsonl"]["sha256"],
                                        files={dev: {k: files[dev][k] for k in ("sha256", "content_sha256")}},
                                        query_ids={"development qrels": set(beir.read_qrels(folder / dev))})
        sets = registry.build(sm.params.root, skip=lockdir) + [registry.from_record(lockdir, record)]
        registry.check_development_side(side, sets, f"pin the data of study {sm.config['study']['name']!r} "
                                                    "(nothing was written)")
        records["sealed_set"] = record
    return check


def pin(sm, records: dict) -> dict:
    """The pins of a local data_dir folder (a dataset outside the catalogue), or of the catalogue's
    archive."""
    kw = dict(dev_qrels=split_of(sm.params.dev), confirm_qrels=split_of(sm.params.confirm),
              split=sm.params.split if sm.params.dev == sm.params.confirm else None,
              before_write=seal_check(sm, records))
    if sm.config["data_dir"]:
        return catalogue.pin_local_dataset(sm.config["data_dir"], sm.params.dataset, sm.params.pins, **kw)
    entry = catalogue.load_entry(sm.input.catalogue, sm.params.dataset)
    return catalogue.pin_first_acquisition(entry, sm.params.pins, zip_path=sm.config["data_zip"] or None,
                                           timeout=sm.config["data"]["download_timeout_s"], **kw)


def main(sm):
    if not sm.params.allowed:
        raise PipelineError("freeze_data pins a dataset (an input of the experiment). Ask for it explicitly: "
                            "snakemake --config repin=data [data_zip=/path/to/<dataset>.zip | "
                            "data_dir=<folder>]")
    records = {}
    pinned = pin(sm, records)
    pins.set_pin(sm.params.lockdir, "sealed_set", records["sealed_set"])
    write_json(sm.output[0], {"pinned": pinned, "pins_file": str(sm.params.pins)})
    log.warning("PINNED dataset %s into %s (%s): commit it", sm.params.dataset, sm.params.pins,
                f"zip sha256 {pinned['zip']['sha256']}" if "zip" in pinned else "from "
                                                                                f"{sm.config['data_dir']}")


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
