"""Rule freeze_candidates (only with --config repin=candidates): the regenerated candidate table
and its retrievers' ranked lists become the frozen, committed input; their pin is rewritten.
This changes the experiment: commit lockfiles/ with a message that says why."""

import logging
from pathlib import Path

from rerank_study import candidates, machine, pins
from rerank_study.errors import PipelineError
from rerank_study.fileio import atomic_path, read_json, sha256_file, write_json
from rerank_study.rule import run

log = logging.getLogger("freeze_candidates")


def main(sm):
    if not sm.params.allowed:
        raise PipelineError("freeze_candidates rewrites the frozen candidates (an input of the experiment). Ask for it "
                            "explicitly: snakemake --config repin=candidates")
    lockdir = Path(sm.params.lockdir)
    meta = read_json(sm.input.meta)
    folder = lockdir / "candidates"
    files = {}
    with atomic_path(folder / "candidates.tsv") as tmp:
        tmp.write_bytes(Path(sm.input.regenerated).read_bytes())
        if sha256_file(tmp) != meta["sha256"]:
            raise PipelineError(f"{sm.input.regenerated} changed after it was made (sha256 differs from {sm.input.meta})")
    files["table"] = {"file": "candidates/candidates.tsv", "sha256": sha256_file(folder / "candidates.tsv")}
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
