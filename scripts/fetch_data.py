"""Rules fetch_data / fetch_sealed_qrels: acquire and verify pinned SciFact files (I/O only).

params.names[i] is written to output[i], from the verified cache (params.cache). With
params.expect_split, the judged queries of the (single) qrels file must equal that split."""

import logging
import shutil

from rerank_study import beir, splits
from rerank_study.acquire import DataPins, acquire, check_file
from rerank_study.errors import PipelineError
from rerank_study.fileio import atomic_path, write_json
from rerank_study.rule import run_rule

log = logging.getLogger("fetch_data")


def main(sm):
    pins = DataPins.load(sm.params.pins)
    names = list(sm.params.names)
    cfg = sm.config
    prov = acquire(names, pins, sm.params.cache, mirror=cfg["data_mirror"] or None, zip_path=cfg["data_zip"] or None,
                   url=cfg["data"]["url"] or None, timeout=cfg["data"]["download_timeout_s"])
    for name, dest in zip(names, sm.output):
        with atomic_path(dest) as tmp:
            shutil.copyfile(f"{sm.params.cache}/{name}", tmp)
            check_file(tmp, name, pins, f"verified cache {sm.params.cache}/{name}")
            if sm.params.get("expect_split"):
                judged = splits.canonical_order(beir.read_qrels(tmp))
                expected = splits.read_split(sm.params.expect_split)
                if judged != expected:
                    raise PipelineError(f"{name}: its judged queries differ from {sm.params.expect_split} "
                                        f"({len(judged)} vs {len(expected)})")
        log.info("%s: %s (verified by %s, sha256 %s)", name, prov[name]["source"], prov[name]["verified_by"],
                 prov[name]["sha256"])
    write_json(f"{sm.params.cache}/acquisition.json", prov)


run_rule(snakemake, main)  # noqa: F821 - injected by Snakemake
