"""Check 'report_browser': the data report.html's query browser embeds (the JSON of its element ``qb-data``)
equal, value by value, what the audit recomputes from the run's files with its own code - the orders, CE
ranks and blend scores it derives from the candidates and the reranker's scores (``Expected``), its own
per-query metrics, groups and judgements, the pinned queries' and corpus's texts cut as documented
(docs/outputs.md, "The query browser"). Numbers, ranks, ids and texts are compared; the markup and the script
are not. Signature: see checks.provenance."""

from __future__ import annotations

import json
import re

from expected.definitions import group_label, slice_of
from read import layout
from read.readers import sha256_of, text_of

CHECK = "report_browser"
CUT = {"query": 200, "title": 100, "text": 120}  # documented: characters kept, then an ellipsis
ELLIPSIS = "…"
METHODS = ("rrf", "ce", "blend")
DATA = re.compile(r'<script type="application/json" id="qb-data">(.*?)</script>', re.S)
TAU_TOLERANCE = 1e-12  # Kendall's tau: the same ratio, its square root possibly taken another way


def embedded(run) -> dict:
    """The browser's data as report.html embeds them (exactly one ``qb-data`` element)."""
    found = DATA.findall(text_of(run.path("report_html")))
    if len(found) != 1:
        raise ValueError(f"report.html holds {len(found)} query-browser data elements, not 1")
    return json.loads(found[0])


def cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n] + ELLIPSIS


def tau(x: list[int], y: list[int]) -> float | None:
    """Kendall's tau-b (ties in either sequence leave a pair out of that side's count)."""
    pairs = [(i, j) for i in range(len(x)) for j in range(i + 1, len(x))]
    s = [(x[i] > x[j]) - (x[i] < x[j]) for i, j in pairs]
    t = [(y[i] > y[j]) - (y[i] < y[j]) for i, j in pairs]
    nx, ny = sum(1 for v in s if v), sum(1 for v in t if v)
    if not nx or not ny:
        return None
    return sum(a * b for a, b in zip(s, t)) / (nx * ny) ** 0.5


def outcome(v: dict, delta: float) -> str:
    if v["ce"] < v["rrf"] and v["blend"] > v["ce"]:
        return "repaired"
    if v["ce"] > v["rrf"] and v["blend"] < v["ce"]:
        return "weakened"
    return "tie" if delta == 0 else "other"


def texts(run, au) -> tuple[dict, dict]:
    """{qid: text} and {doc id: (title, text)} of the run's inputs, each hashed against the manifest."""
    for key in ("queries", "corpus"):
        path, listed = run.path(key), run.art[key]["sha256"]
        if not au.check(CHECK, sha256_of(path) == listed, str(path), f"{key} sha256 (the texts shown)",
                        listed, sha256_of(path)):
            raise ValueError(f"{path} is not the {key} file the manifest lists")
    queries, docs = {}, {}
    for key, out in (("queries", queries), ("corpus", docs)):
        for line in text_of(run.path(key)).split("\n"):
            if line.strip():
                rec = json.loads(line)
                out[rec["_id"]] = (rec["text"] if key == "queries"
                                   else (rec.get("title", ""), rec.get("text", "")))
    return queries, docs


def group_of(want) -> dict[str, tuple[str, int]]:
    """{qid: (group id, size)}: the audit's own components, labelled in their order."""
    return {q: (group_label(i, len(want.groups)), len(g)) for i, g in enumerate(want.groups) for q in g}


def query_record(q: str, want, run, text: str, group: tuple[str, int]) -> dict:
    rc, metric = want.recomputed[q], want.metric
    a, b = want.comparisons[want.settings["comparisons"]["primary"]]
    values = {m: rc[f"{m}_{metric}"] for m in METHODS}
    delta = values[a] - values[b]
    rels = run.qrels.get(q, {})
    cands = want.orders["rrf"][q]
    r1 = [want.r1[(q, d)] for d in cands]
    br = [want.blend_rank[(q, d)] for d in cands]
    relevant = sorted(([d, g] for d, g in rels.items() if g > 0 and d not in set(cands)),
                      key=lambda x: (-x[1], x[0]))
    return {"qid": q, "text": cut(text, CUT["query"]), "group": group[0], "group_size": group[1],
            "metric": [values[m] for m in METHODS], "delta": delta,
            "wtl": "W" if delta > 0 else ("L" if delta < 0 else "T"), "outcome": outcome(values, delta),
            "first_rel": [rc[f"{m}_first_rel_rank"] for m in METHODS],
            "coverage": slice_of("candidate_coverage", rc["n_relevant"], rc["n_relevant_in_candidates"]),
            "tau": tau(r1, br),
            "ranked": [[d, r1[i], br[i], run.logits[q][d], want.blend_score[(q, d)], rels.get(d)]
                       for i, d in enumerate(cands)],
            "missing": relevant}


def expected_data(run, want, au) -> dict:
    queries, corpus = texts(run, au)
    groups = group_of(want)
    qids = [r["qid"] for r in run.per_query_rows]
    records = [query_record(q, want, run, queries[q], groups[q]) for q in qids]
    name = want.settings["comparisons"]["primary"]
    a, b = want.comparisons[name]
    position = {q: i for i, q in enumerate(qids)}
    worst = sorted(records, key=lambda r: (r["delta"], position[r["qid"]]))[:3]
    ids = sorted({c[0] for r in records for c in r["ranked"]} | {m[0] for r in records for m in r["missing"]})
    return {"format": 1, "methods": list(METHODS), "metric": want.metric, "primary": [name, a, b],
            "score_label": "CE logit" if run.reranker_kind == layout.CROSS_ENCODER else "reranker score",
            "cut": dict(CUT),
            "named": {"worst": [r["qid"] for r in worst],
                      **{o: [r["qid"] for r in records if r["outcome"] == o]
                         for o in ("repaired", "weakened")}},
            "queries": records,
            "docs": {d: [cut(corpus[d][0], CUT["title"]), cut(corpus[d][1], CUT["text"])] for d in ids}}


def same(key: str, want, found) -> bool:
    """Values compared as values (8.0 is 8; a flag is never a number); Kendall's tau within
    ``TAU_TOLERANCE``."""
    if isinstance(want, bool) or isinstance(found, bool):
        return want is found
    if isinstance(want, (int, float)) and isinstance(found, (int, float)):
        return abs(want - found) <= TAU_TOLERANCE if key == "tau" else want == found
    return want == found


def compare_query(au, file: str, want: dict, found) -> None:
    keys = sorted(found) if isinstance(found, dict) else found
    if not au.check(CHECK, isinstance(found, dict) and set(found) == set(want), file,
                    f"query {want['qid']}: keys", sorted(want), keys):
        return
    for key, value in want.items():
        if key in ("ranked", "missing"):
            rows = found[key] if isinstance(found[key], list) else []
            if au.check(CHECK, len(rows) == len(value), file, f"query {want['qid']}: {key} rows", len(value),
                        len(rows)):
                for i, (w, f) in enumerate(zip(value, rows), start=1):
                    ok = isinstance(f, list) and len(f) == len(w) and all(map(same, [key] * len(w), w, f))
                    au.check(CHECK, ok, file, f"query {want['qid']}: {key} row {i}", w, f)
            continue
        if key in ("metric", "first_rel"):
            ok = isinstance(found[key], list) and len(found[key]) == len(value) and all(
                same(key, a, b) for a, b in zip(value, found[key]))
        else:
            ok = same(key, value, found[key])
        au.check(CHECK, ok, file, f"query {want['qid']}: {key}", value, found[key])


def check_report_browser(run, want, au) -> None:
    """Every value the browser embeds equals the audit's recomputation (numbers exactly, tau within
    ``TAU_TOLERANCE``); the queries are per_query.tsv's, in its order; the documents exactly those listed."""
    file = str(run.path("report_html"))
    found, expect = embedded(run), expected_data(run, want, au)
    au.check(CHECK, isinstance(found, dict) and set(found) == set(expect), file, "keys", sorted(expect),
             sorted(found) if isinstance(found, dict) else found)
    for key in ("format", "methods", "metric", "primary", "score_label", "cut", "named", "docs"):
        au.check(CHECK, found.get(key) == expect[key], file, key, expect[key] if key != "docs" else
                 f"{len(expect[key])} documents", found.get(key) if key != "docs" else
                 sorted(set(found.get(key) or {}) ^ set(expect[key]))[:5] or "texts differ")
    queries = found.get("queries") or []
    au.check(CHECK, [q.get("qid") if isinstance(q, dict) else q for q in queries] ==
             [q["qid"] for q in expect["queries"]], file, "queries (per_query.tsv's, in its order)",
             len(expect["queries"]), len(queries))
    for w, f in zip(expect["queries"], queries):
        compare_query(au, file, w, f)
