"""Rule freeze_splits (only with --config repin=splits): draw the development split, derive the
confirmation split (queries without training judgements) and write both lists and their pin
into the lockfiles. This changes the experiment: commit lockfiles/."""

import logging
from pathlib import Path

from rerank_study.core import layout
from rerank_study.core.errors import PipelineError
from rerank_study.core.fileio import atomic_write_text, read_json, sha256_text, write_json
from rerank_study.core.rule import run
from rerank_study.data import beir, pins, splits
from rerank_study.data.acquire import verified_path
from rerank_study.data.pins import DataPins
from rerank_study.seal import registry
from rerank_study.settings.config import repin_set

log = logging.getLogger("freeze_splits")


def check_seal(sm, lockdir: Path, queries: dict, dev: list, confirm: list) -> dict:
    """The lock folder's new sealed set record; the new development side (its split) checked against every
    sealed set of the registry, this folder's new one included. Raises before anything is written."""
    record = registry.sealed_record(read_json(lockdir / layout.DATA_PINS), queries, confirm)
    sets = registry.build(sm.params.root, skip=lockdir) + [registry.from_record(lockdir, record)]
    side = registry.with_split(registry.development_side(lockdir, Path(sm.input.queries).parent,
                                                         repinning=repin_set(sm.config)), dev, queries)
    registry.check_development_side(side, sets, f"pin the splits of study {sm.params.study!r} (nothing "
                                    "was written)")
    return record


def main(sm):
    if not sm.params.allowed:
        raise PipelineError("freeze_splits redraws the query splits (an input of the experiment). Ask for it "
                            "explicitly: snakemake --config repin=splits")
    data_pins = DataPins.load(sm.input.data_pins)
    queries = beir.read_queries(verified_path(sm.input.queries, "queries.jsonl", data_pins))
    qrels = beir.read_qrels(verified_path(sm.input.qrels_dev, sm.params.qrels_name, data_pins))
    unknown = sorted(set(qrels) - set(queries))
    if unknown:
        raise PipelineError(f"STUDY {sm.params.study!r}: {sm.input.qrels_dev} judges queries absent from "
                            f"{sm.input.queries}: {unknown[:10]}. Fix: the dataset's qrels and queries must "
                            "belong together - re-pin a consistent dataset (repin=data), or correct "
                            "study.qrels_dev. Nothing was drawn.")
    confirm = splits.confirmation_set(queries, qrels, data_pins.pin(sm.params.sealed_name))
    if len(confirm) != sm.params.confirm_size:
        raise PipelineError(f"expected {sm.params.confirm_size} confirmation queries (queries without "
                            f"training judgements), found {len(confirm)}: the data is not the pinned dataset")
    dev = splits.draw_dev_split(qrels, sm.params.dev_size, sm.params.seed)
    lockdir = Path(sm.params.lockdir)
    record = check_seal(sm, lockdir, queries, dev, confirm)  # before anything is written
    for name, ids in (("dev", dev), ("confirm", confirm)):
        atomic_write_text(lockdir / "splits" / f"{name}.txt", splits.split_text(ids))
    pin = {**splits.split_settings(sm.params.dev_size, sm.params.seed, sm.params.confirm_size, data_pins,
                                    sm.params.qrels_name),
           "drawn_from": splits.DRAWN_FROM,
           "dev": {"path": layout.SPLIT_DEV, "n": len(dev), "sha256": sha256_text(splits.split_text(dev))},
           "confirm": {"path": layout.SPLIT_CONFIRM, "n": len(confirm),
                       "sha256": sha256_text(splits.split_text(confirm))}}
    pins.set_pin(lockdir, "splits", pin)
    pins.set_pin(lockdir, "sealed_set", record)
    write_json(sm.output[0], {"pinned": pin, "lockdir": str(lockdir)})
    log.warning("PINNED the query splits into %s (dev %d, confirm %d): commit them", lockdir, len(dev),
                len(confirm))


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
