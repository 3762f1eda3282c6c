"""Rule candidates: RRF(k=60) of the BM25 and dense top lists, top 50 per query; verify the pin
(or write it, only with --config repin=candidates)."""

import logging
from pathlib import Path

from rerank_study import candidates, pins, splits, trec
from rerank_study.errors import PinMismatchError, PipelineError
from rerank_study.fileio import atomic_path, read_json, sha256_file, write_json
from rerank_study.rule import run_rule

log = logging.getLogger("candidates")


def main(sm):
    p = sm.params.candidates
    dev, conf = splits.read_split(sm.input.dev), splits.read_split(sm.input.confirm)
    split_of = {**{q: "dev" for q in dev}, **{q: "confirm" for q in conf}}
    qids = splits.canonical_order(split_of)
    bm25 = candidates.read_retriever_table(sm.input.bm25)
    dense = candidates.read_retriever_table(sm.input.dense)
    rows = candidates.fuse(bm25, dense, qids, split_of, p["rrf_k"], p["depth"])
    short = [q for q in qids if sum(1 for r in rows if r[0] == q) != p["depth"]]
    if short:
        raise PipelineError(f"queries with fewer than {p['depth']} fused candidates: {short[:10]}")
    lockdir = Path(sm.params.lockdir)
    params = {"rrf_k": p["rrf_k"], "depth": p["depth"], "bm25": p["bm25"], "dense": p["dense"],
              "tie_rule": "score desc, doc id string desc",
              "bi_encoder_identity_sha256": read_json(sm.input.bi_encoder)["identity_sha256"],
              "splits_sha256": {"dev": sha256_file(sm.input.dev), "confirm": sha256_file(sm.input.confirm)}}
    with atomic_path(sm.output.table) as tmp:
        candidates.write_candidates(tmp, rows)
        actual = sha256_file(tmp)
        pin = pins.get_pin(lockdir, "candidates")
        if "candidates" in sm.config["repin"].split(","):  # not a param: must not trigger reruns
            pins.set_pin(lockdir, "candidates", {"sha256": actual, "params": params, "n_queries": len(qids),
                                                 "file": "candidates.tsv"})
            log.warning("PINNED the candidates (sha256 %s) in %s: commit it", actual, pins.derived_path(lockdir))
        elif pin is None:
            raise PipelineError(
                f"NO CANDIDATE PIN in {pins.derived_path(lockdir)}. Candidates are generated once and frozen; to pin "
                "them now run once with --config repin=candidates (then commit the lockfiles).")
        else:
            if pin["params"] != params:
                raise PinMismatchError("candidate generation settings", pins.derived_path(lockdir), "params",
                                       pin["params"], params, "config", "Restore the pinned settings, or re-pin "
                                       "knowingly with --config repin=candidates (this changes the experiment).")
            if actual != pin["sha256"]:
                raise PinMismatchError(
                    "candidates.tsv (regenerated)", sm.output.table, "sha256", pin["sha256"], actual,
                    "bm25 + dense + RRF on this machine",
                    "The regenerated candidates differ from the frozen ones (e.g. different floating-point results "
                    "of the dense model on this CPU). Nothing was published. Use the frozen candidates of the "
                    "pinned run, or re-pin knowingly with --config repin=candidates (this changes the experiment).")
    ranked = {q: [] for q in qids}
    for r in rows:
        ranked[r[0]].append(r[3])
    trec.write_run(sm.output.run, ranked, "rrf50")
    write_json(sm.output.meta, {"sha256": sha256_file(sm.output.table), "params": params, "n_queries": len(qids),
                                "n_dev": len(dev), "n_confirm": len(conf),
                                "retrievers": {"bm25_sha256": sha256_file(sm.input.bm25),
                                               "dense_sha256": sha256_file(sm.input.dense)}})


run_rule(snakemake, main)  # noqa: F821
