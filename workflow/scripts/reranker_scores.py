"""Rule reranker_scores: a run-file reranker's score of every analysed candidate (reranker_scores.tsv), read
from its pinned run (verified against its pin, checked against the frozen candidates), and reranker_run.json:
what the reranker is (the file and its sha256) and the queries whose candidates all have one score (warned:
ranked by document id)."""

import logging
from pathlib import Path

from rerank_study.core.fileio import read_json, write_json, write_tsv
from rerank_study.core.rule import run
from rerank_study.data import splits
from rerank_study.data.pins import verify_against
from rerank_study.rankings import candidates
from rerank_study.reranker import reranker_run

log = logging.getLogger("reranker_scores")


def pinned(sm) -> dict:
    """The pin the run file must match: the development run's (derived_pins.json), or an opening's frozen
    one."""
    if sm.params.kind == "confirmation":
        return sm.params.pin
    return read_json(sm.input.derived)[reranker_run.PIN_NAME]


def main(sm):
    cfg, lockdir = sm.config, Path(sm.params.lockdir)
    pin = pinned(sm)
    what = f"the reranker run of study {cfg['study']['name']!r}"
    checked = verify_against(sm.input.run, pin["sha256"], what,
                             "It must be the pinned run (the development run's pin, or the protocol's "
                             "frozen confirmation run): restore it from git; nothing was read from it.")
    user_run = reranker_run.checked_run(cfg, lockdir, checked, sm.params.kind, "before scoring")
    qids = splits.read_split(sm.input.queries)
    cands = candidates.read_candidates(sm.input.candidates)
    rows = reranker_run.score_rows(user_run, cands, qids)
    tied = reranker_run.tied_queries(user_run, cands, qids)
    if tied:
        log.warning("STUDY %s: %d analysed query(ies) have one score for all candidates in %s (%s): %s",
                    cfg["study"]["name"], len(tied), sm.input.run, ", ".join(tied[:20]),
                    reranker_run.TIE_WARNING)
    write_tsv(sm.output.scores, reranker_run.SCORES_HEADER, rows)
    write_json(sm.output.record, reranker_run.record(sm.params.reranker, pin, qids, len(rows), tied))
    log.info("read %d scores of %d queries from %s (sha256 %s)", len(rows), len(qids), sm.input.run,
             pin["sha256"])


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
