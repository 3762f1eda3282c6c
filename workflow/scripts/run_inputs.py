"""Rule run_inputs: the analysed queries (the development split - all, or the first N for smoke -
or, in a confirmation opening, the confirmation split), their candidates cut at the run's depth,
and ONLY their judgements."""

from rerank_study.core.errors import PinMismatchError, PipelineError
from rerank_study.core.fileio import atomic_write_text, write_tsv
from rerank_study.core.rule import run
from rerank_study.data import beir, pins, splits
from rerank_study.data.acquire import verified_path
from rerank_study.data.pins import DataPins
from rerank_study.rankings import candidates


def check_frozen_candidates(sm):
    """The committed table is the pinned one, and the config still describes how it was made; return the
    checked table (the bytes whose hash matched: the one thing read below)."""
    pin, table = pins.verify_frozen_candidates(sm.input.derived, sm.input.candidates)
    for key, value in sm.params.candidate_params.items():
        if pin["params"].get(key) != value:
            raise PinMismatchError(
                f"candidate setting {key}", sm.input.derived, "value", pin["params"].get(key), value,
                "config", "The frozen candidates were made with the pinned value. Restore it in "
                "config/config.yaml, or re-freeze knowingly: snakemake --config repin=candidates (this "
                "changes the experiment).")
    return table


def main(sm):
    table = check_frozen_candidates(sm)
    split = splits.read_split(sm.input.split)
    qids = split[: sm.params.n_queries] if sm.params.n_queries else split
    depth = sm.params.depth
    by_q = {q: [] for q in qids}
    for r in candidates.read_candidate_rows(table):
        if r["qid"] in by_q and int(r["rank"]) <= depth:
            by_q[r["qid"]].append(r)
    label = sm.params.split_label
    bad = [q for q, lst in by_q.items() if len(lst) != depth or any(r["split"] != label for r in lst)]
    if bad:
        raise PipelineError(f"STUDY {sm.params.study!r}: {table} has fewer than {depth} "
                            f"{label} candidates (or another split) for queries {bad[:10]}. Fix: freeze "
                            f"candidates at least {depth} deep (snakemake --config repin=candidates ...), or "
                            "lower candidates.depth knowingly.")
    qrels = beir.read_qrels(verified_path(sm.input.qrels, sm.params.qrels_pin,
                                          DataPins.load(sm.input.data_pins)))
    unjudged = [q for q in qids if not any(rel > 0 for rel in qrels.get(q, {}).values())]
    if unjudged:
        raise PipelineError("analysed queries without a relevant judgement (relevance > 0) in "
                            f"{sm.input.qrels}: {unjudged[:10]}. Every metric divides by the relevant "
                            "documents: fix the qrels or re-draw the splits from queries that have one "
                            "(snakemake --config repin=splits).")
    atomic_write_text(sm.output.queries, splits.split_text(qids))
    header = candidates.candidate_header(table)  # the frozen RRF table's, or a TREC run's
    candidates.write_candidates(sm.output.candidates,
                                [tuple(r[c] for c in header) for q in qids for r in by_q[q]], header)
    write_tsv(sm.output.qrels, beir.QRELS_HEADER,
              [(q, d, rel) for q in qids for d, rel in sorted(qrels[q].items())])


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
