"""Rule splits: verify (or, only when asked with repin=splits, draw and pin) the query splits."""

import logging
from pathlib import Path

from rerank_study import beir, pins, splits
from rerank_study.acquire import DataPins, verified_path
from rerank_study.errors import PinMismatchError, PipelineError
from rerank_study.fileio import atomic_write_text, sha256_text
from rerank_study.rule import run_rule

log = logging.getLogger("splits")


def main(sm):
    data_pins = DataPins.load(sm.params.pins)
    queries = beir.read_queries(verified_path(sm.input.queries, "queries.jsonl", data_pins))
    qrels = beir.read_qrels(verified_path(sm.input.qrels_dev, "qrels/train.tsv", data_pins))
    unknown = sorted(set(qrels) - set(queries))
    if unknown:
        raise PipelineError(f"training qrels mention queries absent from queries.jsonl: {unknown[:10]}")
    confirm = splits.confirmation_ids(queries, qrels)
    if len(confirm) != sm.params.confirm_size:
        raise PipelineError(f"expected {sm.params.confirm_size} confirmation queries (queries without training "
                            f"judgements), found {len(confirm)}: the data is not the pinned SciFact")
    lockdir = Path(sm.params.lockdir)
    repin = "splits" in sm.config["repin"].split(",")  # not a param: must not trigger reruns
    pin = pins.get_pin(lockdir, "splits")
    settings = {"dev_size": sm.params.dev_size, "seed": sm.params.seed, "confirm_size": sm.params.confirm_size,
                "drawn_from": "canonically sorted training-qrels query ids, numpy default_rng(seed).choice without "
                              "replacement; confirmation = queries without training judgements",
                "qrels_dev_sha256": data_pins.pin("qrels/train.tsv")["sha256"],
                "queries_sha256": data_pins.pin("queries.jsonl")["sha256"]}
    if pin is None or repin:
        if pin is None and not repin:
            raise PipelineError(
                f"NO SPLIT PIN in {pins.derived_path(lockdir)}. The splits are drawn once and then frozen; to draw and "
                "pin them now run once with --config repin=splits (then commit the lockfiles).")
        dev = splits.draw_dev_split(qrels, sm.params.dev_size, sm.params.seed)
        for name, ids in (("dev", dev), ("confirm", confirm)):
            atomic_write_text(lockdir / "splits" / f"{name}.txt", splits.split_text(ids))
        pins.set_pin(lockdir, "splits", {
            **settings,
            "dev": {"path": "splits/dev.txt", "n": len(dev), "sha256": sha256_text(splits.split_text(dev))},
            "confirm": {"path": "splits/confirm.txt", "n": len(confirm), "sha256": sha256_text(splits.split_text(confirm))},
        })
        log.warning("PINNED the query splits into %s (dev %d, confirm %d): commit them", lockdir, len(dev), len(confirm))
        pin = pins.get_pin(lockdir, "splits")
    for key in ("dev_size", "seed", "confirm_size", "qrels_dev_sha256", "queries_sha256"):
        if pin[key] != settings[key]:
            raise PinMismatchError(f"split setting {key}", pins.derived_path(lockdir), "value", pin[key], settings[key],
                                   "config/lockfiles",
                                   "The splits are frozen: restore the config value, or re-pin knowingly with "
                                   "--config repin=splits (this changes the experiment).")
    lists = {}
    for name in ("dev", "confirm"):
        path = lockdir / pin[name]["path"]
        pins.verify_against(path, pin[name]["sha256"], f"{name} split list", "Restore it from git; never edit it.")
        lists[name] = splits.read_split(path)
    dev, conf = lists["dev"], lists["confirm"]
    if conf != confirm:
        raise PipelineError("the pinned confirmation list differs from the queries without training judgements")
    if not set(dev) <= set(qrels) or set(dev) & set(conf):
        raise PipelineError("the pinned development list is not a subset of the training queries")
    atomic_write_text(sm.output.dev, splits.split_text(dev))
    atomic_write_text(sm.output.confirm, splits.split_text(conf))
    log.info("splits verified: dev %d (sha256 %s), confirm %d (sha256 %s)", len(dev), pin["dev"]["sha256"],
             len(conf), pin["confirm"]["sha256"])


run_rule(snakemake, main)  # noqa: F821
