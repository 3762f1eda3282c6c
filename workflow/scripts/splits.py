"""Rule splits: verify the committed query splits (never draws; re-pinning is freeze_splits)."""

import logging
from pathlib import Path

from rerank_study.core.errors import PinMismatchError, PipelineError
from rerank_study.core.fileio import atomic_write_text, read_json
from rerank_study.core.rule import run
from rerank_study.data import beir, pins, splits
from rerank_study.data.acquire import verified_path
from rerank_study.data.pins import DataPins
from rerank_study.seal import guard, registry

log = logging.getLogger("splits")


def main(sm):
    data_pins = DataPins.load(sm.input.data_pins)
    queries = beir.read_queries(verified_path(sm.input.queries, "queries.jsonl", data_pins))
    qrels = beir.read_qrels(verified_path(sm.input.qrels_dev, sm.params.qrels_name, data_pins))
    unknown = sorted(set(qrels) - set(queries))
    if unknown:
        raise PipelineError(f"STUDY {sm.params.study!r}: {sm.input.qrels_dev} judges queries absent from "
                            f"{sm.input.queries}: {unknown[:10]}. Fix: the dataset's qrels and queries must "
                            "belong together - re-pin a consistent dataset (repin=data), or correct "
                            "study.qrels_dev.")
    corpus = beir.read_corpus(verified_path(sm.input.corpus, "corpus.jsonl", data_pins))
    differ = beir.generic_loader_disagreements(Path(sm.input.corpus).parent, sm.params.qrels_name, corpus,
                                               queries, qrels)
    if differ:
        raise PipelineError(f"STUDY {sm.params.study!r}: BEIR's GenericDataLoader reads "
                            f"{Path(sm.input.corpus).parent} differently from this pipeline: "
                            f"{'; '.join(differ)}. Fix: the dataset is not in the BEIR layout both readers "
                            "share; correct the files and re-pin them (repin=data).")
    confirm = splits.confirmation_set(queries, qrels, data_pins.pin(sm.params.sealed_name))
    pin = read_json(sm.input.derived).get("splits")
    if pin is None:
        raise PipelineError(
            f"NO SPLIT PIN in {sm.input.derived}. The splits are drawn once and then frozen; to draw and pin "
            "them now run once with --config repin=splits (then commit the lockfiles).")
    settings = splits.split_settings(sm.params.dev_size, sm.params.seed, sm.params.confirm_size, data_pins,
                                    sm.params.qrels_name)
    for key, value in settings.items():
        if pin.get(key) != value:
            raise PinMismatchError(f"split setting {key}", sm.input.derived, "value", pin.get(key), value,
                                   "config/lockfiles", "The splits are frozen: restore the config value, or "
                                   "re-pin knowingly with --config repin=splits (this changes the "
                                   "experiment).")
    lists = {}
    for name in ("dev", "confirm"):
        path = sm.params.lists[name]
        lists[name] = splits.read_split(pins.verify_against(path, pin[name]["sha256"], f"{name} split list",
                                                            "Restore it from git; never edit it."))
    dev, conf = lists["dev"], lists["confirm"]
    if conf != confirm:
        raise PipelineError(f"STUDY {sm.params.study!r}: the pinned confirmation list differs from the "
                            "confirmation queries the data pins define (splits.confirmation_set); restore "
                            "lockfiles from git")
    if not set(dev) <= set(qrels) or set(dev) & set(conf):
        raise PipelineError("the pinned development list is not a subset of the training queries")
    # the seal, on the verified data: the lock folder's sealed set record, and no sealed judgement, query id
    # or query text of any sealed set of the registry on the development side
    registry.verify_record(sm.params.lockdir, queries, conf)
    guard.check_development(sm.config, sm.params.lockdir, sm.params.root,
                            data_dir=Path(sm.input.queries).parent, action=f"run study {sm.params.study!r}")
    atomic_write_text(sm.output.dev, splits.split_text(dev))
    atomic_write_text(sm.output.confirm, splits.split_text(conf))
    log.info("splits verified: dev %d (sha256 %s), confirm %d (sha256 %s)", len(dev), pin["dev"]["sha256"],
             len(conf), pin["confirm"]["sha256"])


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
