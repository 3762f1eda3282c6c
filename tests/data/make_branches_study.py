"""Build the BRANCHES fixture: a tiny hand-made BEIR-layout dataset whose judgements and user run reach every
branch of the metric and grouping definitions through the whole pipeline and audit.

    python tests/data/make_branches_study.py [--out ROOT]      (ROOT defaults to tests/data/branches)
    python tests/data/make_branches_study.py --freeze MODEL_DIR [--out ROOT]   (also the pipeline's freezing)

Writes, under ROOT:
  beir/corpus.jsonl, beir/queries.jsonl       40 documents d01..d40, 10 queries b01..b10 (BEIR layout)
  beir/qrels/dev.tsv                          8 development queries b01..b08 (grades 2, 1, 0 and -1)
  beir/qrels/test.tsv                         the sealed part: its own 2 queries b09, b10
  lockfiles/candidates/run.trec               a user's TREC run: 20 candidates for every query, scores
                                              strictly decreasing (the file repin=candidates froze byte
                                              for byte)
  lockfiles/data_pins.json                    pins of the four dataset files (local only: no "zip")
  lockfiles/model_pins.json, TEST_FIXTURE     copies of the synthetic study's (the seeded tiny reranker) and
                                              of tests/data/lockfiles/TEST_FIXTURE
The rest of the lock folder (splits/, candidates/candidates.tsv, derived_pins.json) is written by the pipeline
itself: ``--freeze MODEL_DIR`` (the tiny reranker's folder, from tests/data/make_tiny_reranker.py) runs
``repin=splits`` then ``repin=candidates trec_run=<the run above>`` with branches.yaml in a temporary folder
and copies those files into ROOT/lockfiles (the committed ones were made so; every run verifies them against
the pins).

NOT REAL DATA; the texts are filler. What each development query is for (K = metrics.ndcg_k = 5):
* b01: relevant d01 (grade 2, rank 2) and d02 (grade 1, in NO candidate list); d03 judged 0 is ranked FIRST
  (the first relevant rank is 2, not 1), d05 judged -1 at rank 3 (not relevant); candidate coverage "partly"
* b02: relevant d02 (shared with b01 OUTSIDE the candidates) and d06 (shared with b03); d04 judged 0 ranked
  first
* b03: relevant d06 (grade 2) and d07: b01 - b02 - b03 is a CHAIN linked only through relevant documents (b01
  and b03 share nothing)
* b04: d03 relevant here but judged 0 by b01, d08 judged 0 here and by b08: b04 is NOT linked to b01 nor b08
* b05: 7 relevant documents (> K: the ideal DCG is cut at K, Recall@5 divides by 7, capped Recall@5 by 5), two
  of them (d15, d16) outside the candidates, grades 2 and 1, d17 judged 0 at rank 2
* b06: its one relevant document is not a candidate: every method scores 0, so every Δ is an exact 0 (a tie)
* b07: one relevant document (rank 5 = K); b08: grades 2 and 1, all in the candidates, d23 judged -1 ranked
  first
Evidence groups: {b01, b02, b03}, {b04}, {b05}, {b06}, {b07}, {b08}. Slices: relevant_count one (b06, b07) /
several; candidate_coverage all (b03, b04, b07, b08) / partly (b01, b02, b05) / none (b06).

Standard library only (+ the project's own qrels hash, imported from ../../workflow); deterministic.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent            # tests/data
REPO = HERE.parent.parent
OUT = HERE / "branches"
DATASET = "branches-beir"
RUN_TAG = "branches-hand"
DEPTH = 20
N_DOCS = 40

DEV_QRELS = {
    "b01": {"d01": 2, "d02": 1, "d03": 0, "d05": -1},
    "b02": {"d02": 1, "d06": 1, "d04": 0},
    "b03": {"d06": 2, "d07": 1},
    "b04": {"d03": 1, "d09": 1, "d08": 0},
    "b05": {"d10": 2, "d11": 2, "d12": 1, "d13": 1, "d14": 1, "d15": 1, "d16": 1, "d17": 0},
    "b06": {"d18": 1, "d19": 0},
    "b07": {"d20": 1},
    "b08": {"d21": 2, "d22": 1, "d23": -1, "d08": 0},
}
TEST_QRELS = {"b09": {"d24": 1, "d25": 2}, "b10": {"d27": 1, "d28": 0}}
PLACED = {  # query -> {rank: document} in the user's run; every other rank holds a filler document
    "b01": {1: "d03", 2: "d01", 3: "d05"},
    "b02": {1: "d04", 4: "d06"},
    "b03": {1: "d07", 2: "d06"},
    "b04": {1: "d03", 2: "d08", 6: "d09"},
    "b05": {1: "d10", 2: "d17", 3: "d12", 7: "d11", 12: "d13", 18: "d14"},
    "b06": {1: "d19"},
    "b07": {5: "d20"},
    "b08": {1: "d23", 2: "d22", 3: "d08", 9: "d21"},
    "b09": {2: "d24", 6: "d25"},
    "b10": {1: "d28", 3: "d27"},
}
OUTSIDE = {"d02", "d15", "d16", "d18"}             # relevant documents no candidate list holds
FILLERS = [f"d{i:02d}" for i in range(29, N_DOCS + 1)]  # 12 unjudged documents
WORDS = ["river", "stone", "lamp", "garden", "signal", "copper", "harbor", "window", "meadow", "engine",
         "paper", "winter", "market", "bridge", "forest", "candle", "violin", "orbit", "ladder", "salt"]
QUERY_TEXT = {q: f"Which {WORDS[i]} and {WORDS[(3 * i + 5) % 20]} notes describe case {q}?"
              for i, q in enumerate(sorted(DEV_QRELS | TEST_QRELS))}


def doc(i: int) -> dict:
    words = [WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(12)]
    return {"_id": f"d{i:02d}", "title": f"{words[0].capitalize()} {words[1]}",
            "text": f"{' '.join(words[2:7]).capitalize()}. {' '.join(words[7:]).capitalize()} of "
                    f"document {i}."}


def candidates(q: str) -> list[str]:
    placed = PLACED[q]
    start = sorted(PLACED).index(q)
    fill = [FILLERS[(start + j) % len(FILLERS)] for j in range(len(FILLERS))]
    # first documents 01..28 that are neither judged for q, placed, nor outside every list, then the fillers
    spare = [f"d{i:02d}" for i in range(1, 29)]
    judged = set((DEV_QRELS | TEST_QRELS)[q])
    pool = fill + [d for d in spare if d not in judged and d not in OUTSIDE and d not in placed.values()]
    out, it = [], iter(d for d in pool if d not in placed.values())
    for rank in range(1, DEPTH + 1):
        out.append(placed[rank] if rank in placed else next(it))
    assert len(set(out)) == DEPTH and not OUTSIDE & set(out), q
    return out


def qrels_tsv(qrels: dict) -> bytes:
    rows = sorted((q, d, g) for q, docs in qrels.items() for d, g in docs.items())
    return ("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in rows)).encode("utf-8")


def jsonl(records) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")


def generate() -> dict[str, bytes]:
    run = "".join(f"{q} Q0 {d} {r} {(100 - 3 * r) / 10:.6f} {RUN_TAG}\n"
                  for q in sorted(PLACED) for r, d in enumerate(candidates(q), start=1))
    return {
        "beir/corpus.jsonl": jsonl(doc(i) for i in range(1, N_DOCS + 1)),
        "beir/queries.jsonl": jsonl({"_id": q, "text": t, "metadata": {}}
                                    for q, t in sorted(QUERY_TEXT.items())),
        "beir/qrels/dev.tsv": qrels_tsv(DEV_QRELS),
        "beir/qrels/test.tsv": qrels_tsv(TEST_QRELS),
        "lockfiles/candidates/run.trec": run.encode("ascii"),
    }


def data_pins(beir: Path) -> dict:
    sys.path.insert(0, str(REPO / "workflow"))
    from rerank_study.data.beir import qrels_content_sha256, read_qrels

    roles = {"corpus.jsonl": "corpus", "queries.jsonl": "queries", "qrels/dev.tsv": "qrels_dev",
             "qrels/test.tsv": "qrels_confirm"}
    files = {}
    for name, role in roles.items():
        data = (beir / name).read_bytes()
        entry = {"bytes": len(data), "lines": data.count(b"\n"), "role": role,
                 "sha256": hashlib.sha256(data).hexdigest()}
        if role.startswith("qrels"):
            entry["content_sha256"] = qrels_content_sha256(read_qrels(beir / name))
        if role == "qrels_confirm":
            entry["sealed"] = True
        files[name] = entry
    return {"_comment": "HAND-MADE TEST-ONLY dataset (no meaning): made by tests/data/make_branches_study.py "
                        "so the data reach every branch of the metric and grouping definitions; local only, "
                        "so no zip entry.",
            "dataset": DATASET, "files": files}


def build(root=OUT) -> dict[str, str]:
    """Write every file the builder owns under ``root``; return {relative path: sha256}."""
    root = Path(root)
    written = {}
    for rel, data in generate().items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        written[rel] = path
    sys.path.insert(0, str(REPO / "workflow"))
    from rerank_study.core.fileio import write_json

    write_json(root / "lockfiles" / "data_pins.json", data_pins(root / "beir"))
    written["lockfiles/data_pins.json"] = root / "lockfiles" / "data_pins.json"
    for rel, src in (("lockfiles/TEST_FIXTURE", HERE / "lockfiles" / "TEST_FIXTURE"),
                     ("lockfiles/model_pins.json",
                      HERE / "studies" / "synthetic" / "lockfiles" / "model_pins.json")):
        shutil.copyfile(src, root / rel)
        written[rel] = root / rel
    return {rel: hashlib.sha256(p.read_bytes()).hexdigest() for rel, p in sorted(written.items())}


FROZEN_BY_PIPELINE = ("splits/dev.txt", "splits/confirm.txt", "candidates/candidates.tsv",
                      "derived_pins.json")


def freeze(root, model_dir) -> dict[str, str]:
    """The pipeline's own freezing of the splits and the user's run (repin=splits, then repin=candidates) on a
    temporary copy of ROOT; the frozen files are copied into ROOT/lockfiles. Returns {relative path:
    sha256}."""
    import os
    import subprocess
    import tempfile

    root = Path(root).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        lock = tmp / "lockfiles"
        shutil.copytree(root / "lockfiles", lock)
        for rel in FROZEN_BY_PIPELINE:
            (lock / rel).unlink(missing_ok=True)
        shutil.move(lock / "candidates" / "run.trec", tmp / "run.trec")
        study = tmp / "branches-tiny.yaml"
        study.write_text((root / "branches.yaml").read_text(encoding="utf-8")
                         + f"model_dir: {json.dumps(str(Path(model_dir).resolve()))}\n", encoding="utf-8")
        shutil.copytree(root / "beir", tmp / "beir")
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONHASHSEED="0")
        for extra in (["repin=splits"], ["repin=candidates", f"trec_run={tmp / 'run.trec'}"]):
            subprocess.run([str(Path(sys.executable).parent / "snakemake"), "-s", str(REPO / "Snakefile"),
                            "--directory", str(tmp), "--cores", "2", "--config", f"studies=[{study}]",
                            f"resources={tmp / 'resources'}", f"results={tmp / 'results'}", *extra],
                           check=True, env=env, capture_output=True)
        for rel in FROZEN_BY_PIPELINE:
            (root / "lockfiles" / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(lock / rel, root / "lockfiles" / rel)
    return {f"lockfiles/{rel}": hashlib.sha256((root / "lockfiles" / rel).read_bytes()).hexdigest()
            for rel in FROZEN_BY_PIPELINE}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(OUT), help="root folder (default: tests/data/branches of "
                                                    "this checkout)")
    ap.add_argument("--freeze", metavar="MODEL_DIR", default=None,
                    help="then freeze the splits and the run with the pipeline (the tiny reranker's folder)")
    args = ap.parse_args(argv)
    written = build(args.out)
    if args.freeze:
        written |= freeze(args.out, args.freeze)
    for rel, sha in sorted(written.items()):
        print(f"{sha}  {rel}")


if __name__ == "__main__":
    main()
