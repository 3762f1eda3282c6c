"""Rule fetch_sealed_qrels: the ONLY reader of the sealed confirmation judgements. Acquires and
verifies them (guards passed before the DAG was built); their judged queries must equal the
confirmation split."""

from rerank_study.acquire import DataPins, publish_verified
from rerank_study.rule import run


def main(sm):
    cfg = sm.config
    publish_verified([sm.params.name], [sm.output[0]], DataPins.load(sm.input.data_pins), sm.params.cache,
                     mirror=cfg["data_mirror"] or None, zip_path=cfg["data_zip"] or None,
                     url=cfg["data"]["url"] or None, timeout=cfg["data"]["download_timeout_s"],
                     expect_split=sm.input.confirm)


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
