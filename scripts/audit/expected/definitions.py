"""The metric and statistics definitions, re-implemented from the written definitions (docs/ /
SOURCE_MAP), not from the pipeline's code, so an error there is not repeated here: the tie rule, the
blend, nDCG / Recall / MRR, evidence groups, the linear percentile, sums in the documented order,
exact McNemar / sign test, Holm and Benjamini-Hochberg, chance success and the slice rules."""

from __future__ import annotations

import math
from fractions import Fraction

METHODS = ("rrf", "ce", "blend")
STANDIN = "STAND-IN"


def tie_rule_order(scores: dict[str, float]) -> list[str]:
    """Score descending; ties by document id compared as strings, descending."""
    return [d for d, _ in sorted(scores.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)]


def blend_scores(cands: list[str], r1: dict[str, int], k) -> dict[str, float]:
    """``1/(k + r0) + 1/(k + r1)`` in that order, r0 the candidate rank (1-based, list order)."""
    return {d: 1.0 / (k + (i + 1)) + 1.0 / (k + r1[d]) for i, d in enumerate(cands)}


def relevant(rels: dict[str, int]) -> dict[str, int]:
    """The query's judged relevant documents (relevance > 0) with their gains. A query without one has no
    defined nDCG / Recall / MRR: the pipeline refuses it (metrics._check), so the audit refuses it too with a
    ValueError (the check that needed it fails, saying so), never a silent 0 nor a ZeroDivisionError."""
    gains = {d: g for d, g in rels.items() if g > 0}
    if not gains:
        raise ValueError(f"a query without a judged relevant document (relevance > 0; {len(rels)} "
                         "judgement(s), none positive): its nDCG, Recall and MRR are undefined and the "
                         "pipeline refuses it")
    return gains


def ndcg(order: list[str], rels: dict[str, int], k: int) -> float:
    """trec_eval ndcg_cut: linear gain, log2(i+2) discount, ideal from all judged relevant docs cut at k."""
    gains = relevant(rels)
    dcg = 0.0
    for i, d in enumerate(order[:k]):
        if d in gains:
            dcg += gains[d] / math.log2(i + 2)
    idcg = 0.0
    for i, g in enumerate(sorted(gains.values(), reverse=True)[:k]):
        idcg += g / math.log2(i + 2)
    return dcg / idcg


def recall(order: list[str], rels: dict[str, int], k: int) -> float:
    """|P ∩ R_k| / |P| (P: every judged relevant document, ranked or not)."""
    positives = relevant(rels)
    return len(positives.keys() & set(order[:k])) / len(positives)


def capped_recall(order: list[str], rels: dict[str, int], k: int) -> float:
    """|P ∩ R_k| / min(|P|, k) (a separate name: never reported as Recall)."""
    positives = relevant(rels)
    return len(positives.keys() & set(order[:k])) / min(len(positives), k)


def first_rel(order: list[str], rels: dict[str, int]):
    for i, d in enumerate(order, start=1):
        if rels.get(d, 0) > 0:
            return i
    return None


def mrr(order: list[str], rels: dict[str, int], k: int) -> float:
    relevant(rels)
    r = first_rel(order[:k], rels)
    return 0.0 if r is None else 1.0 / r


def components(qids: list[str], qrels: dict[str, dict[str, int]]) -> list[list[str]]:
    """Connected components by breadth-first search over 'shares a relevant document'."""
    by_doc: dict[str, list[str]] = {}
    for q in qids:
        for d, g in qrels[q].items():
            if g > 0:
                by_doc.setdefault(d, []).append(q)
    seen, comps = set(), []
    for q in qids:
        if q in seen:
            continue
        comp, frontier = {q}, [q]
        seen.add(q)
        while frontier:
            cur = frontier.pop()
            for d, g in qrels[cur].items():
                if g <= 0:
                    continue
                for other in by_doc[d]:
                    if other not in seen:
                        seen.add(other)
                        comp.add(other)
                        frontier.append(other)
        comps.append([x for x in qids if x in comp])
    return comps


def group_label(index: int, n_groups: int) -> str:
    """G001, G002, ... (at least three digits, more when there are more groups)."""
    width = max(3, len(str(n_groups)))
    return f"G{index + 1:0{width}d}"


def percentile(values: list[float], p: float) -> float:
    """Linear interpolation between order statistics (Hyndman-Fan type 7), evaluated as
    numpy does: h = (n-1)*(p/100); a + (b-a)*t, or b - (b-a)*(1-t) when t >= 0.5."""
    xs = sorted(values)
    h = (len(xs) - 1) * (p / 100)
    lo = math.floor(h)
    hi = min(lo + 1, len(xs) - 1)
    t = h - lo
    a, b = xs[lo], xs[hi]
    return b - (b - a) * (1 - t) if t >= 0.5 else a + (b - a) * t


def seq_sum(values) -> float:
    total = 0.0
    for v in values:
        total += v
    return total


def mean(values) -> float:
    values = list(values)
    return seq_sum(values) / len(values)


def exact_mcnemar(gained: int, lost: int) -> float:
    n = gained + lost
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(gained, lost) + 1))
    return min(1.0, 2 * tail / 2 ** n)


def sign_counts(d):
    return sum(x > 0 for x in d), sum(x < 0 for x in d)


def holm(ps):
    m, order = len(ps), sorted(range(len(ps)), key=lambda i: (ps[i], i))
    out, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        out[i] = running
    return out


def benjamini_hochberg(ps):
    m, order = len(ps), sorted(range(len(ps)), key=lambda i: (ps[i], i))
    out, running = [0.0] * m, 1.0
    for rank in range(m - 1, -1, -1):
        i = order[rank]
        running = min(running, ps[i] * m / (rank + 1))
        out[i] = min(1.0, running)
    return out


def chance_hit(n_cand: int, m: int, k: int) -> float:
    if m == 0:
        return 0.0
    k = min(k, n_cand)
    return float(1 - Fraction(math.comb(n_cand - m, k), math.comb(n_cand, k)))


def slice_of(family: str, n_rel: int, in_c: int) -> str:
    if family == "relevant_count":
        return "one" if n_rel == 1 else "several"
    if family == "candidate_coverage":
        return "all" if in_c == n_rel else ("none" if in_c == 0 else "partly")
    raise ValueError(f"slice family {family!r} is not defined in the audit")
