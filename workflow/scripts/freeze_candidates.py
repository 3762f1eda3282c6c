"""Rule freeze_candidates (only with --config repin=candidates): the regenerated candidate table
and its retrievers' ranked lists become the frozen, committed input; their pin is rewritten.
This changes the experiment: commit lockfiles/ with a message that says why."""

import logging
from pathlib import Path

from rerank_study.core import layout, machine
from rerank_study.core.errors import PipelineError
from rerank_study.core.fileio import atomic_path, read_json, read_once, sha256_bytes, sha256_file, write_json
from rerank_study.core.rule import run
from rerank_study.data import beir, pins, splits
from rerank_study.data.acquire import verified_path
from rerank_study.data.pins import DataPins
from rerank_study.rankings import candidates
from rerank_study.settings.studies import TREC_RUN_FILE

log = logging.getLogger("freeze_candidates")


def freeze_trec_run(sm) -> None:
    """A user's TREC run becomes the study's frozen candidates: the run file (copied byte for byte) and its
    top ``depth`` per development and confirmation query in trec_eval's order, both pinned."""
    lockdir, params, study = Path(sm.params.lockdir), sm.params.candidate_params, sm.params.study
    data_pins = DataPins.load(sm.input.data_pins)
    corpus = beir.read_corpus(verified_path(sm.input.corpus, "corpus.jsonl", data_pins))
    queries = beir.read_queries(verified_path(sm.input.queries, "queries.jsonl", data_pins))
    submitted = read_once(sm.input.trec_run)  # checked, copied and pinned: these bytes
    user_run = candidates.read_user_run(submitted)
    split_of = {q: name for name in ("dev", "confirm") for q in splits.read_split(getattr(sm.input, name))}
    fix = (f"give a run with at least {params['depth']} candidates for every development and confirmation "
           "query (documents of the pinned corpus), or lower candidates.depth knowingly")
    problems = []
    short = candidates.short_queries(user_run, list(split_of), params["depth"])
    if short:
        problems.append(f"{len(short)} queries have fewer than {params['depth']} candidates: "
                        + ", ".join(f"{q} ({n})" for q, n in short[:10]))
    unknown_q = sorted(set(user_run) - set(queries))
    unknown_d = sorted({d for lst in user_run.values() for d, _ in lst} - set(corpus))
    if unknown_q:
        problems.append(f"query ids absent from queries.jsonl: {unknown_q[:10]}")
    if unknown_d:
        problems.append(f"document ids absent from corpus.jsonl: {unknown_d[:10]}")
    if problems:
        raise PipelineError(f"STUDY {study!r}: the TREC run {sm.input.trec_run} cannot be the candidates: "
                            + "; ".join(problems) + f". Fix: {fix}. Nothing was frozen.")
    qids = splits.canonical_order(split_of)
    rows = candidates.trec_candidate_rows(user_run, qids, split_of, params["depth"])
    folder = lockdir / "candidates"
    with atomic_path(folder / TREC_RUN_FILE) as tmp:
        tmp.write_bytes(submitted.data)
    candidates.write_candidates(folder / "candidates.tsv", rows, candidates.TREC_CANDIDATE_HEADER)
    pin = {"file": layout.CANDIDATES, "sha256": sha256_file(folder / "candidates.tsv"),
           "n_queries": len(qids), "params": params, "source": "trec",
           "provenance": {"run_file": f"candidates/{TREC_RUN_FILE}",
                          "run_sha256": sha256_bytes(submitted.data),
                          "given_as": Path(sm.input.trec_run).name}}
    pins.set_pin(lockdir, "candidates", pin)
    write_json(sm.output[0], {"pinned": pin, "lockdir": str(lockdir)})
    log.warning("FROZE the TREC run %s as the candidates of study %s (table sha256 %s) into %s: commit it",
                sm.input.trec_run, study, pin["sha256"], folder)


def main(sm):
    if not sm.params.allowed:
        raise PipelineError("freeze_candidates rewrites the frozen candidates (an input of the experiment). "
                            "Ask for it explicitly: snakemake --config repin=candidates")
    if sm.params.source == "trec":
        return freeze_trec_run(sm)
    lockdir = Path(sm.params.lockdir)
    meta = read_json(sm.input.meta)
    folder = lockdir / "candidates"
    files = {}
    with atomic_path(folder / "candidates.tsv") as tmp:
        tmp.write_bytes(Path(sm.input.regenerated).read_bytes())
        if sha256_file(tmp) != meta["sha256"]:
            raise PipelineError(f"{sm.input.regenerated} changed after it was made (sha256 differs from "
                                f"{sm.input.meta})")
    files["table"] = {"file": layout.CANDIDATES, "sha256": sha256_file(folder / "candidates.tsv")}
    for name in ("bm25", "dense"):
        top = candidates.read_retriever_table(getattr(sm.input, name))
        dest = folder / f"{name}.tsv.gz"
        candidates.write_ranked_lists_gz(dest, {q: [d for d, _, _ in lst] for q, lst in top.items()})
        files[name] = {"file": f"candidates/{name}.tsv.gz", "sha256": sha256_file(dest),
                       "content": "ranked lists only (qid, rank, doc_id); provenance, not read by a run"}
    pin = {"file": files["table"]["file"], "sha256": files["table"]["sha256"], "n_queries": meta["n_queries"],
           "params": meta["params"],
           "provenance": {"retrievers": {k: files[k] for k in ("bm25", "dense")},
                          "regenerated_retriever_tables_sha256": meta["retrievers_sha256"],
                          "machine": machine.facts()}}
    pins.set_pin(lockdir, "candidates", pin)
    write_json(sm.output[0], {"pinned": pin, "lockdir": str(lockdir)})
    log.warning("FROZE the candidates (sha256 %s) into %s: commit lockfiles/ (this changes the experiment)",
                pin["sha256"], folder)


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
