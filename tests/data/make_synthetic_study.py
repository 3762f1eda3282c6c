"""Build the SYNTHETIC second-study fixture: a small BEIR-layout dataset, a user's TREC run, its pins.

    python tests/data/make_synthetic_study.py [--out ROOT]      (ROOT defaults to tests/data)

Writes, under ROOT:
  synthetic_beir/corpus.jsonl          80 documents {"_id": "d001".., "title", "text"} (BEIR layout)
  synthetic_beir/queries.jsonl         36 queries {"_id": "q01".., "text", "metadata": {}}
  synthetic_beir/qrels/dev.tsv         24 judged queries (BEIR header, LF), grades 1 and 2
  synthetic_beir/qrels/test.tsv        the other 12 judged queries (the sealed confirmation file)
  studies/synthetic/lockfiles/candidates/run.trec   a user's own first-stage run: 20 candidates for all 36
                                       queries (plain BM25 k1=1.2 b=0.75 written here, tag synthetic-bm25), as
                                       frozen by repin=candidates trec_run=... (the byte-for-byte copy)
  studies/synthetic/lockfiles/data_pins.json   pins of the four dataset files (no "zip": local only)
  studies/synthetic/lockfiles/TEST_FIXTURE     copy of tests/data/lockfiles/TEST_FIXTURE

NOT REAL DATA. The text is made of fixed English word lists drawn with numpy
``default_rng(20261130)``; each document has a topic (a cluster of topic words, with five "focus"
words of its own) so a lexical retriever finds the relevant documents of most queries. Structure
put in on purpose:
* several queries share relevant documents (3 pairs and 1 triple sharing one document, 1 chain
  a-b, b-c in dev; 1 pair in test), so evidence groups larger than one query exist;
* 3 queries ("misses") use another topic's words, so none of their relevant documents is in
  their top 20 of the run; every other query has at least one relevant document there;
* the 20 run scores of every query are strictly decreasing once written with ``%.6f``.

Deterministic: the data part uses only the standard library and numpy (PCG64 streams of
``integers``, ``random``, ``permutation`` and ``choice``); running the script twice gives the same
bytes. The pins are computed with the project's own code (``rerank_study.data.beir.read_qrels`` +
``qrels_content_sha256``; ``rerank_study.core.fileio.write_json``), imported from ../../workflow.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import shutil
import sys
from pathlib import Path

import numpy as np

SEED = 20261130
HERE = Path(__file__).resolve().parent          # tests/data
REPO = HERE.parent.parent                         # the checkout
N_DOCS = 80
TOP_K = 20
K1, B = 1.2, 0.75
RUN_TAG = "synthetic-bm25"
DATASET = "synthetic-beir"
TEST_FIXTURE_SRC = HERE / "lockfiles" / "TEST_FIXTURE"
MAX_TRIES = 500

TOPICS = [
    ["star", "galaxy", "orbit", "planet", "telescope", "comet", "nebula", "asteroid", "lunar", "solar",
     "eclipse", "cosmic", "meteor", "satellite"],
    ["recipe", "flour", "oven", "garlic", "simmer", "butter", "dough", "spice", "saucepan", "roast",
     "pastry", "yeast", "onion", "broth"],
    ["sail", "harbor", "anchor", "vessel", "keel", "tide", "mast", "rudder", "voyage", "hull",
     "crew", "navigator", "buoy", "dock"],
    ["gene", "protein", "mutation", "chromosome", "enzyme", "genome", "allele", "receptor", "sequencing",
     "transcription", "ribosome", "plasmid", "mitosis", "helix"],
    ["volcano", "magma", "lava", "eruption", "crater", "basalt", "tectonic", "ash", "fault", "seismic",
     "granite", "mantle", "geyser", "caldera"],
    ["violin", "melody", "chord", "orchestra", "rhythm", "sonata", "tempo", "harmony", "piano", "choir",
     "symphony", "lyric", "cello", "concerto"],
    ["bond", "equity", "dividend", "inflation", "portfolio", "ledger", "credit", "mortgage", "auditor",
     "liquidity", "tariff", "pension", "revenue", "broker"],
    ["cardiac", "artery", "heart", "blood", "pressure", "valve", "vein", "stroke", "cholesterol", "pulse",
     "arrhythmia", "aorta", "clot", "ventricle"],
    ["railway", "locomotive", "carriage", "station", "track", "signal", "freight", "platform", "tunnel",
     "timetable", "conductor", "junction", "diesel", "sleeper"],
    ["forest", "timber", "pine", "canopy", "seedling", "bark", "logging", "oak", "woodland", "fern",
     "moss", "ranger", "fungus", "understory"],
    ["chess", "bishop", "knight", "rook", "pawn", "gambit", "checkmate", "opening", "endgame", "castling",
     "tournament", "grandmaster", "queen", "stalemate"],
    ["beehive", "honey", "pollen", "nectar", "colony", "wax", "drone", "swarm", "apiary", "larva",
     "beekeeper", "comb", "pollinator", "propolis"],
]
FILLER = [
    "the", "of", "and", "a", "in", "to", "is", "was", "for", "with", "on", "by", "as", "from", "that",
    "this", "are", "were", "study", "results", "method", "new", "system", "large", "small", "effect",
    "process", "data", "report", "analysis", "shows", "early", "recent", "common", "several", "many",
    "high", "low", "model", "approach", "increase", "change", "level", "use", "time", "group", "case",
    "based", "general", "often", "between", "during", "under", "known", "local", "various",
]
FILLER_P = np.array([1.0 / (i + 2) for i in range(len(FILLER))])
FILLER_P = FILLER_P / FILLER_P.sum()

# roles of the three queries of each topic; which of them share a relevant document
ROLES = {t: ("dev", "dev", "test") for t in range(12)}
ROLES.update({4: ("dev", "dev", "dev"), 5: ("dev", "dev", "dev"), 6: ("test", "test", "dev"),
              11: ("dev", "test", "test")})
SHARED = {  # topic -> list of query-slot tuples, each sharing ONE relevant document
    0: [(0, 1)], 1: [(0, 1)], 2: [(0, 1)],        # dev pairs
    4: [(0, 1, 2)],                               # dev triple
    5: [(0, 1), (1, 2)],                          # dev chain a-b, b-c
    6: [(0, 1)],                                  # test pair
}
MISSES = {(7, 0), (9, 2), (10, 1)}                # (topic, slot): query words from another topic
FOUR_RELEVANT = (3, 0)                            # (topic, slot) judged with 4 relevant documents


def tokens(text: str) -> list[str]:
    return re.findall(r"[a-z]+", text.lower())


def doc_text(title: str, text: str) -> str:
    """BEIR's convention (rerank_study.data.beir.doc_text): (title + " " + text).strip()."""
    return (title + " " + text).strip()


def _sentences(words: list[str], rng) -> str:
    out, i = [], 0
    while i < len(words):
        n = int(rng.integers(6, 13))
        chunk = words[i:i + n]
        out.append(" ".join([chunk[0].capitalize()] + chunk[1:]) + ".")
        i += n
    return " ".join(out)


def make_corpus(rng) -> tuple[list[dict], list[int]]:
    topic_of = [int(t) for t in rng.permutation(np.arange(N_DOCS) % len(TOPICS))]
    docs = []
    for i, t in enumerate(topic_of):
        words_t = TOPICS[t]
        sec = int(rng.integers(len(TOPICS) - 1))
        sec = sec + 1 if sec >= t else sec
        focus = [words_t[int(j)] for j in rng.choice(len(words_t), size=5, replace=False)]
        length = int(rng.integers(20, 61))
        words = []
        for _ in range(length):
            u = float(rng.random())
            if u < 0.30:
                words.append(focus[int(rng.integers(len(focus)))])
            elif u < 0.42:
                words.append(words_t[int(rng.integers(len(words_t)))])
            elif u < 0.50:
                words.append(TOPICS[sec][int(rng.integers(len(TOPICS[sec])))])
            else:
                words.append(FILLER[int(rng.choice(len(FILLER), p=FILLER_P))])
        n_title = int(rng.integers(2, 5))
        title = " ".join(w.capitalize() for w in focus[:n_title])
        docs.append({"_id": f"d{i + 1:03d}", "title": title, "text": _sentences(words, rng)})
    return docs, topic_of


class BM25:
    """Plain Okapi BM25 (k1=1.2, b=0.75, idf = ln(1 + (N - n + 0.5) / (n + 0.5))) over ``tokens``."""

    def __init__(self, docs: list[dict]):
        self.ids = [d["_id"] for d in docs]
        self.tf = []
        for d in docs:
            counts: dict[str, int] = {}
            for w in tokens(doc_text(d["title"], d["text"])):
                counts[w] = counts.get(w, 0) + 1
            self.tf.append(counts)
        self.dl = [sum(c.values()) for c in self.tf]
        self.avgdl = sum(self.dl) / len(self.dl)
        n = len(docs)
        df: dict[str, int] = {}
        for c in self.tf:
            for w in c:
                df[w] = df.get(w, 0) + 1
        self.idf = {w: math.log(1.0 + (n - m + 0.5) / (m + 0.5)) for w, m in df.items()}

    def scores(self, query: str) -> list[float]:
        terms = sorted(set(tokens(query)))
        out = []
        for counts, dl in zip(self.tf, self.dl):
            s = 0.0
            for w in terms:
                f = counts.get(w, 0)
                if f:
                    s += self.idf[w] * f * (K1 + 1) / (f + K1 * (1 - B + B * dl / self.avgdl))
            out.append(s)
        return out

    def top(self, query: str, k: int) -> list[tuple[str, float]]:
        ranked = sorted(zip(self.ids, self.scores(query)), key=lambda x: (-x[1], x[0]))
        return ranked[:k]


def strictly_decreasing_text(ranked: list[tuple[str, float]]) -> bool:
    vals = [float(f"{s:.6f}") for _, s in ranked]
    return all(a > b for a, b in zip(vals, vals[1:])) and vals[-1] > 0


def allocate_relevance(rng, topic_of: list[int]) -> dict[tuple[int, int], dict[str, int]]:
    """(topic, slot) -> {doc_id: grade}: 1-4 relevant documents of the query's own topic."""
    rel: dict[tuple[int, int], dict[str, int]] = {}
    for t in range(len(TOPICS)):
        pool = [f"d{i + 1:03d}" for i in rng.permutation(N_DOCS) if topic_of[int(i)] == t]
        docs_of = {s: [] for s in range(3)}
        for group in SHARED.get(t, []):
            d = pool.pop(0)
            for s in group:
                docs_of[s].append(d)
        for s in range(3):
            n_rel = int(rng.choice([1, 2, 3, 4], p=[0.3, 0.35, 0.2, 0.15]))
            n_rel = 4 if (t, s) == FOUR_RELEVANT else n_rel
            later_needing = sum(1 for s2 in range(s + 1, 3) if not docs_of[s2])
            want = max(n_rel - len(docs_of[s]), 0 if docs_of[s] else 1)
            cap = len(pool) - 1 - later_needing        # keep >= 1 unjudged document in the topic
            for _ in range(max(0, min(want, cap))):
                docs_of[s].append(pool.pop(0))
            if not docs_of[s]:
                raise RuntimeError(f"topic {t} slot {s}: no relevant document left")
        for s in range(3):
            rel[(t, s)] = {d: (2 if float(rng.random()) < 0.25 else 1) for d in docs_of[s]}
    return rel


def make_query(rng, bm25: BM25, docs_by_id: dict, t: int, slot: int, rel: dict[str, int]) -> tuple[str, list]:
    rel_tokens = [w for d in sorted(rel) for w in tokens(doc_text(docs_by_id[d]["title"],
                                                                  docs_by_id[d]["text"]))]
    miss = (t, slot) in MISSES
    if miss:
        other = (t + 6) % len(TOPICS)
        pool = [w for w in TOPICS[other] if w not in set(rel_tokens)]
    else:
        pool = [w for w in rel_tokens if w in TOPICS[t]]
    for _ in range(MAX_TRIES):
        n_content = int(rng.integers(1, 4)) if not miss else int(rng.integers(2, 5))
        content: list[str] = []
        for j in rng.permutation(len(pool)):
            if pool[int(j)] not in content:
                content.append(pool[int(j)])
            if len(content) == n_content:
                break
        if not miss:  # 1-2 more words of the topic, not necessarily in a relevant document
            for _ in range(int(rng.integers(1, 3))):
                extra = TOPICS[t][int(rng.integers(len(TOPICS[t])))]
                if extra not in content:
                    content.append(extra)
        fill = [FILLER[int(j)] for j in rng.choice(len(FILLER), size=int(rng.integers(2, 5)),
                                                   replace=False, p=FILLER_P)]
        words = [(content + fill)[int(j)] for j in rng.permutation(len(content) + len(fill))]
        text = " ".join([words[0].capitalize()] + words[1:]) + "?"
        ranked = bm25.top(text, TOP_K + 1)
        hit = any(d in rel for d, _ in ranked[:TOP_K])
        if strictly_decreasing_text(ranked) and hit != miss:
            return text, ranked[:TOP_K]
    raise RuntimeError(f"topic {t} slot {slot}: no acceptable query text in {MAX_TRIES} draws")


def jsonl(records: list[dict]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")


def qrels_tsv(rows: list[tuple[str, str, int]]) -> bytes:
    return ("query-id\tcorpus-id\tscore\n"
            + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in sorted(rows))).encode("utf-8")


def generate(seed: int = SEED) -> dict[str, bytes]:
    """The dataset and the run as {relative path: bytes} (standard library + numpy only)."""
    rng = np.random.default_rng(seed)
    docs, topic_of = make_corpus(rng)
    rel = allocate_relevance(rng, topic_of)
    bm25 = BM25(docs)
    docs_by_id = {d["_id"]: d for d in docs}
    slots = [(t, s) for t in range(len(TOPICS)) for s in range(3)]
    qid_of = {slot: f"q{int(k) + 1:02d}" for slot, k in zip(slots, rng.permutation(len(slots)))}
    queries, runs, dev_rows, test_rows = [], {}, [], []
    for t, s in slots:
        text, ranked = make_query(rng, bm25, docs_by_id, t, s, rel[(t, s)])
        qid = qid_of[(t, s)]
        queries.append({"_id": qid, "text": text, "metadata": {}})
        runs[qid] = ranked
        rows = dev_rows if ROLES[t][s] == "dev" else test_rows
        rows.extend((qid, d, g) for d, g in rel[(t, s)].items())
    queries.sort(key=lambda q: q["_id"])
    run = "".join(f"{qid} Q0 {d} {rank} {score:.6f} {RUN_TAG}\n"
                  for qid in sorted(runs) for rank, (d, score) in enumerate(runs[qid], start=1))
    return {
        "synthetic_beir/corpus.jsonl": jsonl(docs),
        "synthetic_beir/queries.jsonl": jsonl(queries),
        "synthetic_beir/qrels/dev.tsv": qrels_tsv(dev_rows),
        "synthetic_beir/qrels/test.tsv": qrels_tsv(test_rows),
        "studies/synthetic/lockfiles/candidates/run.trec": run.encode("ascii"),
    }


def data_pins(beir_dir: Path) -> dict:
    sys.path.insert(0, str(REPO / "workflow"))
    from rerank_study.data.beir import qrels_content_sha256, read_qrels

    roles = {"corpus.jsonl": "corpus", "queries.jsonl": "queries", "qrels/dev.tsv": "qrels_dev",
             "qrels/test.tsv": "qrels_confirm"}
    files = {}
    for name, role in roles.items():
        data = (beir_dir / name).read_bytes()
        entry = {"bytes": len(data), "lines": data.count(b"\n"), "role": role,
                 "sha256": hashlib.sha256(data).hexdigest()}
        if role.startswith("qrels"):
            entry["content_sha256"] = qrels_content_sha256(read_qrels(beir_dir / name))
        if role == "qrels_confirm":
            entry["sealed"] = True
        files[name] = entry
    return {
        "_comment": "SYNTHETIC TEST-ONLY dataset (not BEIR data, no meaning): made by "
                    "tests/data/make_synthetic_study.py from fixed word lists with numpy "
                    "default_rng(20261130); files in tests/data/synthetic_beir. Local only, so no zip entry. "
                    "content_sha256 = sha256 of the sorted 'qid\\tdocid\\tscore\\n' rows "
                    "(rerank_study.beir.qrels_content_sha256).",
        "dataset": DATASET,
        "files": files,
    }


def build(root=HERE, seed: int = SEED) -> dict:
    """Write every file under ``root``; return {relative path: sha256}."""
    root = Path(root)
    written = {}
    for rel, data in generate(seed).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        written[rel] = path
    lock = root / "studies" / "synthetic" / "lockfiles"
    lock.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(REPO / "workflow"))
    from rerank_study.core.fileio import write_json

    write_json(lock / "data_pins.json", data_pins(root / "synthetic_beir"))
    written["studies/synthetic/lockfiles/data_pins.json"] = lock / "data_pins.json"
    shutil.copyfile(TEST_FIXTURE_SRC, lock / "TEST_FIXTURE")
    written["studies/synthetic/lockfiles/TEST_FIXTURE"] = lock / "TEST_FIXTURE"
    return {rel: hashlib.sha256(p.read_bytes()).hexdigest() for rel, p in sorted(written.items())}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(HERE), help="root folder (default: tests/data of this checkout)")
    ap.add_argument("--seed", type=int, default=SEED)
    args = ap.parse_args(argv)
    for rel, sha in build(args.out, args.seed).items():
        print(f"{sha}  {rel}")


if __name__ == "__main__":
    main()
