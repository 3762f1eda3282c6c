"""Rule fetch_sealed_qrels: the ONLY reader of the sealed confirmation judgements (guards passed before the
DAG was built). FIRST it appends this opening's 'started' line to the append-only ledger (flushed and
fsynced, refused if this opening number of the sealed set is taken in any ledger), to the trace file
outside the work tree, and commits the ledger (a repository lock folder), THEN it acquires the judgements,
verifies them against their pin (their judged queries must equal the confirmation split) and copies them into
the opening's folder. A look interrupted at any later point stays recorded."""

import datetime as dt
import logging
from pathlib import Path

from rerank_study.core.fileio import write_json
from rerank_study.core.rule import run
from rerank_study.data.acquire import publish_verified
from rerank_study.data.pins import DataPins
from rerank_study.seal import guard, ledger, registry, traces
from rerank_study.seal.locations import LEDGER

log = logging.getLogger("fetch_sealed_qrels")


def other_ledgers(root, lockdir, sets):
    """Every line of the registry's other ledgers, their history and the local traces (read at the moment of
    writing)."""
    own = (Path(lockdir) / LEDGER).resolve()
    return lambda: [ln for ln in guard.all_lines(root, sets) if Path(ln.source).resolve() != own]


def main(sm):
    cfg, lockdir, root = sm.config, sm.params.lockdir, sm.params.root
    entry = dict(sm.params.start, time=dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat())
    sets = registry.build(root, [lockdir])
    belongs = guard.belongs_to(registry.set_of(sets, lockdir), sets)
    # before any sealed byte
    line = ledger.record_start(lockdir, entry, other_ledgers(root, lockdir, sets), belongs)
    trace = traces.write_trace(root, lockdir, entry)
    commit = ledger.commit_ledger(root, lockdir, f"seal: opening {entry['opening']} of protocol "
                                                 f"{entry['protocol_sha256'][:12]} started")
    log.warning("OPENING %s STARTED: recorded in %s/%s line %d (commit %s) and in %s, before the sealed "
                "judgements are copied", entry["opening"], lockdir, LEDGER, line, commit, trace)
    prov = publish_verified([sm.params.name], [sm.output.qrels], DataPins.load(sm.input.data_pins),
                            sm.params.cache, mirror=cfg["data_mirror"] or None,
                            zip_path=cfg["data_zip"] or None, url=cfg["data"]["url"] or None,
                            timeout=cfg["data"]["download_timeout_s"], expect_split=sm.input.confirm)
    write_json(sm.output.started, {"ledger": f"{lockdir}/{LEDGER}", "line": line, "commit": commit,
                                   "trace": str(trace), "entry": entry,
                                   "copied_from": prov[sm.params.name]["source"]})


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
