"""The query browser of report.html: the data it embeds, built from the run's own files (pure functions).

One record per analysed query (per_query.tsv's order): its text cut to ``CUT["query"]`` characters, its
evidence group and the group's size (groups.tsv), each method's value of the summary's metric and first
relevant rank (per_query.tsv), the primary Δ and its W/T/L sign, the candidate-coverage slice, the outcome
(``outcome``), Kendall's tau between the CE and blend orders of the candidates (``kendall_tau``), the
candidates in RRF order with their CE rank, blend rank, reranker score, blend score and judgement
(rankings.tsv, the run's qrels), and the query's judged relevant documents that are not among the candidates.
Each listed document's title and text, cut to ``CUT["title"]`` and ``CUT["text"]`` characters, once per
document. The audit recomputes every value with its own code (check ``report_browser``); docs/outputs.md
gives the format.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from ..core.names import BLEND, CE, FIRST_REL_RANK, METHODS, RRF, column
from ..stats.evalstats import SLICE_RULES

FORMAT = 1
CUT = {"query": 200, "title": 100, "text": 120}  # characters kept of a query, a title, a document text
ELLIPSIS = "…"
OUTCOMES = ("repaired", "weakened", "tie", "other")  # the first that applies


def cut(text: str, n: int) -> str:
    """``text`` whole when it has at most ``n`` characters, else its first ``n`` and an ellipsis."""
    return text if len(text) <= n else text[:n] + ELLIPSIS


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b of two paired sequences ((concordant - discordant) / sqrt((n0 - n1)(n0 - n2)),
    pairs tied in both count in neither); None with fewer than two items or a constant sequence."""
    if len(x) != len(y):
        raise ValueError(f"Kendall tau of sequences of lengths {len(x)} and {len(y)}")
    n0 = len(x) * (len(x) - 1) // 2
    concordant = discordant = ties_x = ties_y = 0
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            s = (x[i] > x[j]) - (x[i] < x[j])
            t = (y[i] > y[j]) - (y[i] < y[j])
            ties_x += s == 0
            ties_y += t == 0
            concordant += s * t > 0
            discordant += s * t < 0
    if n0 == 0 or ties_x == n0 or ties_y == n0:
        return None
    return (concordant - discordant) / ((n0 - ties_x) * (n0 - ties_y)) ** 0.5


def wtl(delta: float) -> str:
    return "W" if delta > 0 else ("L" if delta < 0 else "T")


def outcome(values: Mapping[str, float], delta: float) -> str:
    """repaired: the CE loses to RRF and the blend beats the CE; weakened: the CE beats RRF and the blend
    loses to the CE (summary.json's repair definitions); tie: primary Δ = 0; else other."""
    if values[CE] < values[RRF] and values[BLEND] > values[CE]:
        return "repaired"
    if values[CE] > values[RRF] and values[BLEND] < values[CE]:
        return "weakened"
    return "tie" if delta == 0 else "other"


def coverage_slice(n_relevant: int, n_in_candidates: int) -> str:
    rules = SLICE_RULES["candidate_coverage"]
    return next(name for name, rule in rules.items() if rule(n_relevant, n_in_candidates))


def ranked(rows: Sequence[Mapping[str, str]], qrels_q: Mapping[str, int]) -> list[list]:
    """One query's rankings.tsv rows, in RRF order: [doc id, CE rank, blend rank, score, blend score,
    judgement (None: not judged)]."""
    ordered = sorted(rows, key=lambda r: int(r["r0"]))
    if [int(r["r0"]) for r in ordered] != list(range(1, len(ordered) + 1)):
        raise ValueError(f"rankings.tsv: query {ordered[0]['qid']}'s r0 is not 1..{len(ordered)}")
    return [[r["doc_id"], int(r["r1"]), int(r["blend_rank"]), float(r["logit"]), float(r["blend_score"]),
             qrels_q.get(r["doc_id"])] for r in ordered]


def missing_relevant(candidates: Sequence[str], qrels_q: Mapping[str, int]) -> list[list]:
    """The judged relevant documents (grade > 0) not among the candidates: [doc id, grade], grade
    descending, then document id."""
    listed = set(candidates)
    return sorted(([d, g] for d, g in qrels_q.items() if g > 0 and d not in listed),
                  key=lambda x: (-x[1], x[0]))


def primary_of(summary: Mapping) -> tuple[str, str]:
    c = summary["comparisons"][summary["primary"]]
    return c["a"], c["b"]


def query_record(qid: str, row: Mapping[str, str], text: str, group: tuple[str, int],
                 rows: Sequence[Mapping[str, str]], qrels_q: Mapping[str, int], summary: Mapping) -> dict:
    """The browser's record of one query (``row``: its per_query.tsv row; ``rows``: its rankings.tsv
    rows)."""
    metric = summary["metric"]
    values = {m: float(row[column(m, metric)]) for m in METHODS}
    a, b = primary_of(summary)
    delta = values[a] - values[b]
    cands = ranked(rows, qrels_q)
    first = [int(row[column(m, str(FIRST_REL_RANK))]) if row[column(m, str(FIRST_REL_RANK))] else None
             for m in METHODS]
    return {"qid": qid, "text": cut(text, CUT["query"]), "group": group[0], "group_size": group[1],
            "metric": [values[m] for m in METHODS], "delta": delta, "wtl": wtl(delta),
            "outcome": outcome(values, delta), "first_rel": first,
            "coverage": coverage_slice(int(row["n_relevant"]), int(row["n_relevant_in_candidates"])),
            "tau": kendall_tau([c[1] for c in cands], [c[2] for c in cands]),
            "ranked": cands, "missing": missing_relevant([c[0] for c in cands], qrels_q)}


def group_of(group_ids: Sequence[str], members: Sequence[Sequence[str]]) -> dict[str, tuple[str, int]]:
    """{qid: (group id, group size)} from run_tables.read_groups."""
    return {q: (g, len(m)) for g, m in zip(group_ids, members) for q in m}


def documents(queries: Sequence[Mapping], corpus: Mapping) -> dict[str, list[str]]:
    """{doc id: [title, text]} of every document the records list, cut, in document-id order (``corpus``:
    beir.read_corpus's Docs)."""
    ids = sorted({c[0] for q in queries for c in q["ranked"]} | {m[0] for q in queries for m in q["missing"]})
    return {d: [cut(corpus[d].title, CUT["title"]), cut(corpus[d].text, CUT["text"])] for d in ids}


def browser_data(summary: Mapping, per_query_rows: Sequence[Mapping[str, str]],
                 ranking_rows: Sequence[Mapping[str, str]], qrels: Mapping[str, Mapping[str, int]],
                 groups: Mapping[str, tuple[str, int]], query_texts: Mapping[str, str], corpus: Mapping,
                 score_label: str) -> dict:
    """Everything the browser shows, for the queries of per_query.tsv in its order."""
    by_query: dict[str, list] = {}
    for r in ranking_rows:
        by_query.setdefault(r["qid"], []).append(r)
    records = [query_record(r["qid"], r, query_texts[r["qid"]], groups[r["qid"]], by_query[r["qid"]],
                            qrels.get(r["qid"], {}), summary) for r in per_query_rows]
    a, b = primary_of(summary)
    return {"format": FORMAT, "methods": list(METHODS), "metric": summary["metric"],
            "primary": [summary["primary"], a, b], "score_label": score_label, "cut": dict(CUT),
            "named": {"worst": [w["qid"] for w in summary["worst_primary"]],
                      "repaired": [q["qid"] for q in records if q["outcome"] == "repaired"],
                      "weakened": [q["qid"] for q in records if q["outcome"] == "weakened"]},
            "queries": records, "docs": documents(records, corpus)}


def embedded_json(data: Mapping) -> str:
    """The data as the page embeds them: compact JSON, keys in the order built, non-ASCII kept, every ``<``
    escaped (no ``</script>`` can end the element early)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c")
