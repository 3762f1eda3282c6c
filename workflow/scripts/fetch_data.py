"""Rule fetch_data: acquire and verify the pinned development-side data files (I/O only).

params.names[i] is written to output[i], from the verified cache (params.cache)."""

from rerank_study.core.rule import run
from rerank_study.data.acquire import publish_verified
from rerank_study.data.pins import DataPins


def main(sm):
    cfg = sm.config
    pins = DataPins.load(sm.input.data_pins)
    # the pinned archive's URL (none for a local-only dataset); data.url must equal it (check_study)
    url = pins.url
    publish_verified(list(sm.params.names), list(sm.output), pins, sm.params.cache,
                     mirror=cfg["data_mirror"] or None, zip_path=cfg["data_zip"] or None,
                     url=url, timeout=cfg["data"]["download_timeout_s"])


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
