"""Build the PLANTED family: three small BEIR-layout datasets whose run-file reranker has a known effect.

    python tests/data/make_planted_studies.py [--out ROOT] [--pin]

Writes, under ROOT (default tests/data):
  planted/<name>/corpus.jsonl, queries.jsonl, qrels/dev.tsv, qrels/test.tsv     (BEIR layout)
  studies/planted-<name>.yaml                                                    (a run-file study)
and, with ``--pin``, the study's lock folder studies/planted-<name>/lockfiles written by the project's own
tools (``snakemake --config studies=[...] repin=data data_dir=...``, ``repin=splits``, ``repin=candidates
trec_run=...``, ``repin=reranker_run run_file=...``) from a first-stage run and a reranker run made here.

NOT REAL DATA. Every query has ONE relevant document (grade 1), so nDCG@10 of a ranking that puts it at
rank r is 1/log2(1 + r), and the depth is 10 (every candidate counts). A query's PATTERN (a, c): the relevant
document is candidate a of the first-stage run (rrf rank a) and the reranker's run moves it to rank c, the
other candidates keeping their relative order. The blend is 1/(60 + r0) + 1/(60 + r1); its rank of the
relevant document, by hand (the other candidates' ranks are (j, j+1) or (j+1, j), j = 1..9):

  P0 (1, 1):   every method rank 1                                     Δ = 0
  H1 (1, 10):  1/61+1/70 = 0.030679 < 1/61+1/62, 1/62+1/63, 1/63+1/64, 1/64+1/65 (= 0.031010),
               > 1/65+1/66 (= 0.030536)               -> blend rank 5   Δ = 1/log2 6 - 1/log2 11 = +0.097790
  H2 (1, 4):   1/61+1/64 = 0.032018 < 1/61+1/62 (= 0.032522), > 1/62+1/63 (= 0.032002)
                                                      -> blend rank 2   Δ = 1/log2 3 - 1/log2 5  = +0.200249
  L1 (10, 1):  the mirror of H1                       -> blend rank 5   Δ = 1/log2 6 - 1          = -0.613147
  L2 (4, 1):   the mirror of H2                       -> blend rank 2   Δ = 1/log2 3 - 1          = -0.369070

(Δ = blend - ce, the primary comparison blend-ce.) No two candidates of a query tie in any method. The family:

  alpha (helps): 16 development queries, 8 H2, 4 H1, 4 P0; each query its own group
  beta  (helps): 24 development queries, 10 H1, 6 H2, 7 P0, 1 L2; q01 and q05 (both H1) share their relevant
                 document (one group of two, 23 groups)
  gamma (hurts): 12 development queries, 6 L1, 4 L2, 2 P0; each query its own group

and 4 sealed confirmation queries each (pattern P0, never opened by the tests). Standard library only for the
data; the same inputs give the same bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent          # tests/data
REPO = HERE.parent.parent
DEPTH = 10
N_CONFIRM = 4
PATTERNS = {"P0": (1, 1), "H1": (1, 10), "H2": (1, 4), "L1": (10, 1), "L2": (4, 1)}
BLEND_RANK = {"P0": 1, "H1": 5, "H2": 2, "L1": 5, "L2": 2}      # by hand, above
FAMILY = {
    "alpha": {"patterns": ["H2"] * 8 + ["H1"] * 4 + ["P0"] * 4, "shared": ()},
    "beta": {"patterns": ["H1"] * 10 + ["H2"] * 6 + ["P0"] * 7 + ["L2"], "shared": (("q01", "q05"),)},
    "gamma": {"patterns": ["L1"] * 6 + ["L2"] * 4 + ["P0"] * 2, "shared": ()},
}
TEST_FIXTURE_SRC = HERE / "lockfiles" / "TEST_FIXTURE"


def interleave(patterns: list[str]) -> list[str]:
    """The patterns dealt round-robin by kind (so the kinds are spread over the query ids)."""
    kinds: dict[str, list[str]] = {}
    for p in patterns:
        kinds.setdefault(p, []).append(p)
    out: list[str] = []
    while any(kinds.values()):
        for k in list(kinds):
            if kinds[k]:
                out.append(kinds[k].pop())
    return out


def dev_patterns(name: str) -> dict[str, str]:
    """{development qid: pattern} of one dataset."""
    return {f"q{i:02d}": p for i, p in enumerate(interleave(FAMILY[name]["patterns"]), start=1)}


def relevant_doc(name: str, qid: str) -> str:
    for group in FAMILY[name]["shared"]:
        if qid in group:
            return f"{group[0]}-rel"
    return f"{qid}-rel"


def candidates(name: str, qid: str, a: int) -> list[str]:
    """The first-stage order: the relevant document at position ``a``."""
    others = [f"{qid}-d{j:02d}" for j in range(1, DEPTH)]
    return others[:a - 1] + [relevant_doc(name, qid)] + others[a - 1:]


def reranked(order: list[str], rel: str, c: int) -> list[str]:
    others = [d for d in order if d != rel]
    return others[:c - 1] + [rel] + others[c - 1:]


def trec(qid: str, order: list[str], tag: str) -> str:
    return "".join(f"{qid} Q0 {d} {r} {DEPTH + 1 - r}.000000 {tag}\n" for r, d in enumerate(order, start=1))


def all_queries(name: str) -> dict[str, str]:
    """{qid: pattern}: the development queries, then the sealed ones (P0)."""
    dev = dev_patterns(name)
    n = len(dev)
    return {**dev, **{f"q{n + i:02d}": "P0" for i in range(1, N_CONFIRM + 1)}}


def jsonl(records: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def qrels(rows: list[tuple[str, str]]) -> str:
    return "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, d in rows)


def dataset_files(name: str) -> dict[str, str]:
    """{relative path: text} of one dataset, its first-stage run and its reranker's development run."""
    queries, docs, first, rerank, dev_rows, test_rows = [], {}, [], [], [], []
    dev = dev_patterns(name)
    for qid, pattern in all_queries(name).items():
        a, c = PATTERNS[pattern]
        order = candidates(name, qid, a)
        rel = relevant_doc(name, qid)
        queries.append({"_id": qid, "text": f"planted query {qid} of {name}", "metadata": {}})
        for d in order:
            docs.setdefault(d, {"_id": d, "title": "", "text": f"planted document {d} of {name}"})
        first.append(trec(qid, order, "planted-first-stage"))
        (dev_rows if qid in dev else test_rows).append((qid, rel))
        if qid in dev:
            rerank.append(trec(qid, reranked(order, rel, c), "planted-reranker"))
    return {"corpus.jsonl": jsonl(sorted(docs.values(), key=lambda d: d["_id"])),
            "queries.jsonl": jsonl(queries), "qrels/dev.tsv": qrels(dev_rows),
            "qrels/test.tsv": qrels(test_rows),
            "first_stage.trec": "".join(first), "reranker_dev.trec": "".join(rerank)}


def study_file(name: str) -> str:
    n_dev = len(dev_patterns(name))
    return f"""# A PLANTED study (tests/data/make_planted_studies.py): a run-file reranker with a known
# effect on dataset {name}; its lock folder written by the project's own repin commands. Paths relative
# to this file's folder.
study:
  name: planted-{name}
  dataset: planted-{name}
  qrels_dev: qrels/dev.tsv
  qrels_confirm: qrels/test.tsv
  reranker_kind: run
  reranker: planted-reranker
  label_index: null
  candidates: trec
lockdir: planted-{name}/lockfiles
data_mirror: ../planted/{name}
model_dir: ""
scorer: pinned
splits:
  dev_size: {n_dev}
  confirm_size: {N_CONFIRM}
  seed: 110
candidates:
  depth: {DEPTH}
metrics:
  recall_ks: [5, {DEPTH}]
bootstrap:
  B: 500
evalstats:
  power:
    confirm_n: {N_CONFIRM}
calibration:
  S: 40
  B_inner: 50
  R: 200
  S_power: 10
  n_audit: 3
"""


def write(root: Path, name: str) -> Path:
    """The dataset and the study file; returns the folder of the two runs (not committed)."""
    runs = root / "planted" / f".runs-{name}"
    for rel, text in dataset_files(name).items():
        path = (runs if rel.endswith(".trec") else root / "planted" / name) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / "studies" / f"planted-{name}.yaml").write_text(study_file(name), encoding="utf-8")
    return runs


def snakemake(work: Path, study: Path, *config: str) -> None:
    cmd = ["nice", str(Path(sys.executable).parent / "snakemake"), "-s", str(REPO / "Snakefile"),
           "--directory", str(work), "--cores", "1", "--config", f"studies=[{study}]", *config]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONHASHSEED="0")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")


def pin(root: Path, name: str, runs: Path) -> None:
    """The lock folder, written by the project's own repin commands (a fresh folder each time)."""
    lock = root / "studies" / f"planted-{name}" / "lockfiles"
    shutil.rmtree(lock, ignore_errors=True)
    lock.mkdir(parents=True)
    shutil.copyfile(TEST_FIXTURE_SRC, lock / "TEST_FIXTURE")
    study, data = root / "studies" / f"planted-{name}.yaml", root / "planted" / name
    with tempfile.TemporaryDirectory() as work:
        snakemake(Path(work), study, "repin=data", f"data_dir={data}")
        snakemake(Path(work), study, "repin=splits")
        snakemake(Path(work), study, "repin=candidates", f"trec_run={runs / 'first_stage.trec'}")
        snakemake(Path(work), study, "repin=reranker_run", f"run_file={runs / 'reranker_dev.trec'}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(HERE), help="root folder (default: tests/data of this checkout)")
    ap.add_argument("--pin", action="store_true", help="also write the lock folders (runs snakemake)")
    args = ap.parse_args(argv)
    root = Path(args.out)
    for name in FAMILY:
        runs = write(root, name)
        if args.pin:
            pin(root, name, runs)
        shutil.rmtree(runs)
        print(f"planted-{name}: {len(dev_patterns(name))} development queries")


if __name__ == "__main__":
    main()
