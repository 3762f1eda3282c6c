"""Rule fetch_sealed_qrels: the ONLY reader of the sealed confirmation judgements (guards passed
before the DAG was built). FIRST it appends this opening's 'started' line to the append-only ledger
(flushed and fsynced, refused if this opening number was already started), THEN it acquires the
judgements, verifies them against their pin (their judged queries must equal the confirmation split)
and copies them into the opening's folder. A look interrupted at any later point stays recorded."""

import datetime as dt
import logging

from rerank_study import protocol
from rerank_study.acquire import DataPins, publish_verified
from rerank_study.fileio import write_json
from rerank_study.rule import run

log = logging.getLogger("fetch_sealed_qrels")


def main(sm):
    cfg = sm.config
    entry = dict(sm.params.start, time=dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat())
    line = protocol.record_start(sm.params.lockdir, entry)  # before a single sealed byte is read
    log.warning("OPENING %s STARTED: recorded in %s/%s line %d before the sealed judgements are copied",
                entry["opening"], sm.params.lockdir, protocol.LEDGER, line)
    prov = publish_verified([sm.params.name], [sm.output.qrels], DataPins.load(sm.input.data_pins), sm.params.cache,
                            mirror=cfg["data_mirror"] or None, zip_path=cfg["data_zip"] or None,
                            url=cfg["data"]["url"] or None, timeout=cfg["data"]["download_timeout_s"],
                            expect_split=sm.input.confirm)
    write_json(sm.output.started, {"ledger": f"{sm.params.lockdir}/{protocol.LEDGER}", "line": line, "entry": entry,
                                   "copied_from": prov[sm.params.name]["source"]})


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
