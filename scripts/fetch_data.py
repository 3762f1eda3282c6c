"""Rule fetch_data: acquire and verify the development-side SciFact files (I/O only)."""

import logging
import shutil

from rerank_study.acquire import DataPins, acquire, check_file
from rerank_study.fileio import atomic_path, write_json
from rerank_study.rule import run_rule

log = logging.getLogger("fetch_data")


def main(sm):
    pins = DataPins.load(sm.params.pins)
    names = list(sm.params.names)
    cfg = sm.config
    prov = acquire(names, pins, sm.params.cache, mirror=cfg["data_mirror"] or None, zip_path=cfg["data_zip"] or None,
                   url=cfg["data"]["url"] or None, timeout=cfg["data"]["download_timeout_s"])
    outputs = dict(zip(names, [sm.output.corpus, sm.output.queries, sm.output.qrels_dev]))
    for name, dest in outputs.items():
        with atomic_path(dest) as tmp:
            shutil.copyfile(f"{sm.params.cache}/{name}", tmp)
            check_file(tmp, name, pins, f"verified cache {sm.params.cache}/{name}")
        log.info("%s: %s (verified by %s, sha256 %s)", name, prov[name]["source"], prov[name]["verified_by"],
                 prov[name]["sha256"])
    write_json(f"{sm.params.cache}/acquisition.json", prov)


run_rule(snakemake, main)  # noqa: F821 - injected by Snakemake
