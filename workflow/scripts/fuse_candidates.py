"""Rule fuse_candidates: regenerate the candidate table (RRF k=60 of the BM25 and dense top lists,
top 50 per query) into resources/ — for the drift check and explicit re-freezing only."""

from rerank_study.core.errors import PipelineError
from rerank_study.core.fileio import read_json, sha256_file, write_json
from rerank_study.core.rule import run
from rerank_study.data import splits
from rerank_study.rankings import candidates


def main(sm):
    p = sm.params.candidates
    dev, conf = splits.read_split(sm.input.dev), splits.read_split(sm.input.confirm)
    split_of = {**{q: "dev" for q in dev}, **{q: "confirm" for q in conf}}
    qids = splits.canonical_order(split_of)
    ranked = {name: {q: [d for d, _, _ in lst] for q, lst in candidates.read_retriever_table(path).items()}
              for name, path in (("bm25", sm.input.bm25), ("dense", sm.input.dense))}
    rows = candidates.fuse(ranked["bm25"], ranked["dense"], qids, split_of, p["rrf_k"], p["depth"])
    counts = {q: 0 for q in qids}
    for r in rows:
        counts[r[0]] += 1
    short = [q for q, n in counts.items() if n != p["depth"]]
    if short:
        raise PipelineError(f"queries with fewer than {p['depth']} fused candidates: {short[:10]}")
    candidates.write_candidates(sm.output.table, rows)
    write_json(sm.output.meta, {
        "sha256": sha256_file(sm.output.table), "n_queries": len(qids), "n_dev": len(dev),
        "n_confirm": len(conf),
        "params": {**p, "bi_encoder_identity_sha256": read_json(sm.input.bi_encoder)["identity_sha256"],
                   "splits_sha256": {"dev": sha256_file(sm.input.dev),
                                     "confirm": sha256_file(sm.input.confirm)}},
        "retrievers_sha256": {"bm25": sha256_file(sm.input.bm25), "dense": sha256_file(sm.input.dense)},
    })


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
