"""Build the small real SciFact fixture in tests/data/scifact_fixture from the full BEIR files.

    python tests/data/make_fixture.py ../shared/data/scifact

Deterministic. Lines are copied byte for byte from the original files (corpus/queries JSON
lines unchanged; qrels rows unchanged, CRLF, BEIR header). Selection:
* 12 training claims: the 2 lowest-id pairs/chains of claims that share a cited document
  (so evidence groups larger than one exist), the 3 lowest-id claims with several cited
  documents, filled up with the lowest remaining ids;
* 6 "confirmation" claims, the fixture's own sealed set (its qrels/test.tsv): the 6 lowest-id
  BEIR-train claims outside those 12 and outside the project's development split
  (lockfiles/splits/dev.txt) whose cited documents all lie in the corpus below. They are NOT
  BEIR-test claims: no judgement of the real sealed set is in the fixture, so a test opening
  never looks at the real confirmation data (the seal registry refuses a fixture that would);
* corpus: every document cited by the 12 training claims and by the 6 lowest-id BEIR-test claims
  (documents only: their judgements are not copied), + 150 other documents chosen with
  random.Random(20261130) (including long abstracts, so truncation at 512 tokens happens).
SciFact: CC BY-NC 2.0, Wadden et al. 2020 (see tests/data/scifact_fixture/PROVENANCE.md).
"""

import hashlib
import json
import random
import sys
from pathlib import Path

src = Path(sys.argv[1])
out = Path(__file__).resolve().parent / "scifact_fixture"


def qrels_rows(path):
    raw = path.read_bytes().split(b"\r\n")
    header, rows = raw[0], [r for r in raw[1:] if r]
    return header, rows


def qid_of(row):
    return row.split(b"\t")[0].decode()


def did_of(row):
    return row.split(b"\t")[1].decode()


hdr_tr, tr = qrels_rows(src / "qrels/train.tsv")
hdr_te, te = qrels_rows(src / "qrels/test.tsv")
by_doc = {}
for r in tr:
    by_doc.setdefault(did_of(r), set()).add(qid_of(r))
shared = sorted((sorted(qs, key=int) for qs in by_doc.values() if len(qs) > 1), key=lambda g: int(g[0]))
train_q = []
for g in shared[:2]:
    for q in g:
        if q not in train_q:
            train_q.append(q)
n_rel = {}
for r in tr:
    n_rel[qid_of(r)] = n_rel.get(qid_of(r), 0) + 1
for q in sorted((q for q, n in n_rel.items() if n > 1), key=int)[:3]:
    if q not in train_q:
        train_q.append(q)
for q in sorted({qid_of(r) for r in tr}, key=int):
    if len(train_q) >= 12:
        break
    if q not in train_q:
        train_q.append(q)
train_q = sorted(train_q[:12], key=int)
beir_test_q = sorted({qid_of(r) for r in te}, key=int)[:6]  # their cited documents only
tr_keep = [r for r in tr if qid_of(r) in set(train_q)]
rel_docs = {did_of(r) for r in tr_keep} | {did_of(r) for r in te if qid_of(r) in set(beir_test_q)}

corpus_lines = (src / "corpus.jsonl").read_bytes().splitlines(keepends=True)
ids = [json.loads(l)["_id"] for l in corpus_lines]
others = sorted(set(ids) - rel_docs, key=int)
extra = set(random.Random(20261130).sample(others, 150))
keep_docs = rel_docs | extra

project_dev = set((Path(__file__).resolve().parents[2] / "lockfiles/splits/dev.txt").read_text().split())
cited = {}
for r in tr:
    cited.setdefault(qid_of(r), set()).add(did_of(r))
test_q = [q for q in sorted(cited, key=int)
          if q not in set(train_q) and q not in project_dev and cited[q] <= keep_docs][:6]
te_keep = [r for r in tr if qid_of(r) in set(test_q)]
keep_q = set(train_q) | set(test_q)
(out / "qrels").mkdir(parents=True, exist_ok=True)
(out / "corpus.jsonl").write_bytes(b"".join(l for l, i in zip(corpus_lines, ids) if i in keep_docs))
q_lines = (src / "queries.jsonl").read_bytes().splitlines(keepends=True)
(out / "queries.jsonl").write_bytes(b"".join(l for l in q_lines if json.loads(l)["_id"] in keep_q))
(out / "qrels/train.tsv").write_bytes(b"\r\n".join([hdr_tr] + tr_keep) + b"\r\n")
(out / "qrels/test.tsv").write_bytes(b"\r\n".join([hdr_tr] + te_keep) + b"\r\n")
sums = "".join(f"{hashlib.sha256((out / n).read_bytes()).hexdigest()}  {n}\n"
               for n in ("corpus.jsonl", "queries.jsonl", "qrels/train.tsv", "qrels/test.tsv"))
(out / "SHA256SUMS").write_text(sums)
print(f"train {train_q}\ntest {test_q}\ndocs {len(keep_docs)} (relevant {len(rel_docs)})")
