"""A stand-in for "any system": a TREC run of a study's frozen candidates, written by a tiny term-overlap
reranker (TEST-ONLY; it shows the input a run-file reranker study takes, and its scores mean little).

    python tests/data/make_reranker_run.py LOCKDIR DATA_DIR SPLIT OUT [--depth N] [--tie QID ...]
        [--ranks-only]

For every query of LOCKDIR/splits/SPLIT.txt (dev or confirm), each of its first N (default 20) candidates in
LOCKDIR/candidates/candidates.tsv gets the score: the number of distinct query words (lower-case letters)
found in the document's title + text, plus 1/(1000 + candidate rank) (so the first-stage order breaks the
reranker's ties). One line per candidate, ``qid Q0 docid rank score overlap``, ranked by score descending,
ties by document id descending, the score printed with ``%.6f``. ``--tie QID``: every candidate of that query
gets the score 1.000000 (a query the reranker cannot tell apart). ``--ranks-only``: the score column holds
n + 1 - rank (what a listwise reranker that gives only an order writes). Standard library only; the same
inputs give the same bytes.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
from pathlib import Path

WORD = re.compile(r"[a-z]+")


def words(text: str) -> set[str]:
    return set(WORD.findall(text.lower()))


def read_jsonl(path: Path) -> dict[str, dict]:
    with open(path, encoding="utf-8") as fh:
        return {rec["_id"]: rec for rec in map(json.loads, fh)}


def frozen_candidates(lockdir: Path, depth: int) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    with open(lockdir / "candidates" / "candidates.tsv", encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            if int(row["rank"]) <= depth:
                out.setdefault(row["qid"], []).append(row["doc_id"])
    return out


def scores(query: str, docs: list[str], corpus: dict[str, dict]) -> dict[str, float]:
    q = words(query)
    return {d: len(q & words(corpus[d]["title"] + " " + corpus[d]["text"])) + 1.0 / (1000 + r)
            for r, d in enumerate(docs, start=1)}


def run_lines(qid: str, scored: dict[str, float], ranks_only: bool) -> list[str]:
    order = sorted(scored, key=lambda d: (round(scored[d], 6), d), reverse=True)
    n = len(order)
    return [f"{qid} Q0 {d} {r} {(n + 1 - r) if ranks_only else f'{scored[d]:.6f}'} overlap\n"
            for r, d in enumerate(order, start=1)]


def make(lockdir, data_dir, split: str, out, depth: int = 20, tie=(), ranks_only: bool = False) -> Path:
    lockdir, data_dir, out = Path(lockdir), Path(data_dir), Path(out)
    qids = (lockdir / "splits" / f"{split}.txt").read_text(encoding="utf-8").split()
    corpus, queries = read_jsonl(data_dir / "corpus.jsonl"), read_jsonl(data_dir / "queries.jsonl")
    cands = frozen_candidates(lockdir, depth)
    lines = []
    for q in qids:
        scored = {d: 1.0 for d in cands[q]} if q in tie else scores(queries[q]["text"], cands[q], corpus)
        lines += run_lines(q, scored, ranks_only)
    out.write_text("".join(lines), encoding="utf-8")
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("lockdir")
    ap.add_argument("data_dir")
    ap.add_argument("split", choices=["dev", "confirm"])
    ap.add_argument("out")
    ap.add_argument("--depth", type=int, default=20)
    ap.add_argument("--tie", nargs="*", default=[])
    ap.add_argument("--ranks-only", action="store_true")
    args = ap.parse_args(argv)
    print(make(args.lockdir, args.data_dir, args.split, args.out, args.depth, set(args.tie), args.ranks_only))


if __name__ == "__main__":
    main()
