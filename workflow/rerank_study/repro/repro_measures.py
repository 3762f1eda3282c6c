"""Reproducibility measures of system-oriented IR experiments, as pure functions (no I/O).

The measures of Breuer et al., "How to Measure the Reproducibility of System-oriented IR
Experiments" (SIGIR 2020), as their code irgroup/repro_eval defines them (``repro_eval/measure/``),
and the OK / OKish / FAIL bands of Pyserini's reproduction matrix. Everywhere: the REFERENCE run is
the *original* (o), the new run the *reproduction* (r); a per-query mapping is ``{qid: value}``, a
ranking is a sequence of document ids, best first, ties already broken (``ranking.order_by_score``).

* effectiveness: ``rmse``, ``nrmse`` (per-topic scores of one metric);
* document order: ``ktu`` (Kendall's tau "union", repro_eval's construction), ``rbo`` (RBO_ext,
  Webber et al. 2010 eq. 32); the per-query forms ``ktu_by_query``, ``rbo_by_query`` and
  ``query_mean``; two companions that are NOT repro_eval's reported numbers: ``tau_b_on_union_ranks``
  (a label-invariant tau on the union) and ``rbo_truncated`` (repro_eval >= 0.4's default RBO);
* overall effects: ``effect_ratio`` (ER), ``relative_improvement`` / ``delta_relative_improvement``
  (RI, ΔRI);
* Pyserini's band of two means: ``pyserini_band``.

The aggregate of all of them over a run's methods and comparisons (``measure_reproduction``) is in
``repro_aggregate``.

Undefined values (a zero denominator of ER or RI) are ``None``, never inf or NaN. Means over queries
that repro_eval takes (KTU, RBO, ER, RI) are ``numpy.mean`` over the values in the ORIGINAL's query
order (repro_eval uses ``numpy.mean`` too, so the numbers are its bits).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from decimal import ROUND_HALF_EVEN, Decimal

import numpy as np

from ..rankings.ranking import ranks_from_order

OK, OKISH, FAIL = "OK", "OKish", "FAIL"
BAND_DECIMALS = 4          # Pyserini compares scores rounded to 4 decimals (trec_eval's "%.4f")
OKISH_UNITS = 5            # OKish: at most 5 units of the 4th decimal apart, i.e. |Δ| <= 5e-4
KTU_DECIMALS = 14          # repro_eval rounds every per-topic tau to 14 decimals
RBO_EXT_P = 0.8            # repro_eval's RBO persistence when it reported RBO_ext (PHI = 0.8)
RBO_TRUNCATED_P = 0.95     # repro_eval >= 0.5's RBO_P
RBO_TRUNCATED_DEPTH = 1000  # repro_eval >= 0.5's RBO_DEPTH (= its RUN_LENGTH)


# ------------------------------------------------------------------------------ checks --

def same_topics(orig: Mapping, rep: Mapping, what: str) -> list:
    """The original's query ids in its order; refuses an empty or a differing topic set."""
    only_o = [q for q in orig if q not in rep]
    only_r = [q for q in rep if q not in orig]
    if only_o or only_r:
        raise ValueError(f"{what}: the original and the reproduction must cover the same queries; "
                         f"missing from the reproduction: {sorted(only_o)}; missing from the original: "
                         f"{sorted(only_r)}")
    if not orig:
        raise ValueError(f"{what}: no queries")
    return list(orig)


def _finite(value, what: str) -> float:
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{what}: non-finite value {value!r}")
    return x


def _ranking(ranking: Sequence[str], what: str) -> list[str]:
    """The ranking as a list; refuses duplicate document ids (``ranking.ranks_from_order``)."""
    docs = list(ranking)
    try:
        ranks_from_order(docs)
    except ValueError as e:
        raise ValueError(f"{what}: {e}") from None
    return docs


def _np_mean(values: Sequence[float]) -> float:
    return float(np.mean(np.asarray(values, dtype=np.float64)))


# ------------------------------------------------------------------------ effectiveness --

def rmse(orig: Mapping[str, float], rep: Mapping[str, float]) -> float:
    """Root mean square error of the per-topic scores of one metric:

        RMSE = sqrt( (1/n) * sum_q (o_q - r_q)^2 )          (repro_eval ``measure/effectiveness.py : RMSE``)

    over the same n topics (a differing topic set is refused, naming the missing ids). Arithmetic as
    repro_eval's: squares added left to right in the original's topic order, one division, sqrt.
    Ideal 0."""
    qids = same_topics(orig, rep, "RMSE")
    total = 0.0
    for q in qids:
        d = _finite(orig[q], f"original {q}") - _finite(rep[q], f"reproduction {q}")
        total += d * d
    return math.sqrt(total / len(qids))


def max_rmse(orig: Mapping[str, float]) -> float:
    """The largest RMSE any reproduction can have, given the original scores in [0, 1]:

        maxRMSE = sqrt( (1/n) * sum_q max(o_q, 1 - o_q)^2 )   (repro_eval ``_maxRMSE``)

    (the worst reproduction of topic q scores 0 or 1, whichever is farther). Each term is >= 1/2,
    so maxRMSE >= 1/2 > 0 for any non-empty topic set. Scores outside [0, 1] are refused."""
    if not orig:
        raise ValueError("maxRMSE: no queries")
    total = 0.0
    for q, v in orig.items():
        x = _finite(v, f"original {q}")
        if not 0.0 <= x <= 1.0:
            raise ValueError(f"nRMSE needs scores in [0, 1]; original {q} = {x!r}")
        m = max(x, 1.0 - x)
        total += m * m
    return math.sqrt(total / len(orig))


def nrmse(orig: Mapping[str, float], rep: Mapping[str, float]) -> float:
    """Normalised RMSE = RMSE(o, r) / maxRMSE(o) (repro_eval ``measure/effectiveness.py : nRMSE``).

    In [0, 1] for scores in [0, 1]; the denominator is never 0 (see ``max_rmse``). Ideal 0."""
    value = rmse(orig, rep)
    for q, v in rep.items():
        if not 0.0 <= float(v) <= 1.0:
            raise ValueError(f"nRMSE needs scores in [0, 1]; reproduction {q} = {v!r}")
    return value / max_rmse(orig)


# ----------------------------------------------------------------------- document order --

def union_codes(orig_ranking: Sequence[str], rep_ranking: Sequence[str]) -> tuple[list[int], list[int]]:
    """repro_eval's KTU vectors: U = sorted(set(o) | set(r)) (Python string order); each list is
    rewritten position by position as the index of its document in U:

        x_i = U.index(o_i),  y_i = U.index(r_i)     (repro_eval ``measure/document_order.py : _KTU``)
    """
    union = sorted(set(orig_ranking) | set(rep_ranking))
    code = {d: i for i, d in enumerate(union)}
    return [code[d] for d in orig_ranking], [code[d] for d in rep_ranking]


def _sort_count(seq: list[int]) -> tuple[list[int], int]:
    """(sorted seq, number of pairs i < j with seq[i] > seq[j]) by merge sort, exact integers."""
    if len(seq) < 2:
        return list(seq), 0
    left, n_left = _sort_count(seq[: len(seq) // 2])
    right, n_right = _sort_count(seq[len(seq) // 2:])
    merged, count, i, j = [], n_left + n_right, 0, 0
    while i < len(left) and j < len(right):
        if right[j] < left[i]:
            merged.append(right[j])
            count += len(left) - i  # right[j] is smaller than every left element not yet merged
            j += 1
        else:
            merged.append(left[i])
            i += 1
    return merged + left[i:] + right[j:], count


def ktu(orig_ranking: Sequence[str], rep_ranking: Sequence[str]) -> float:
    """Kendall's tau "union" of one query, exactly as repro_eval computes it (``_KTU``):

    the two lists become the code vectors x, y of ``union_codes`` and

        KTU = round( tau_b(x, y), 14 )

    where tau_b is SciPy's ``kendalltau`` (variant b; x and y have no ties, so tau_b = tau_a =
    (C - D) / N, N = n(n-1)/2, C / D the concordant / discordant POSITION pairs). Computed here from
    the exact discordant count D with SciPy's arithmetic ``(N - 2D) / sqrt(N) / sqrt(N)``, clipped
    to [-1, 1], then numpy's ``round(., 14)`` (repro_eval rounds a numpy float) -- the same bits.

    Beware what this is: pairs of RANK POSITIONS are compared by the sorted-id codes of the documents
    standing there; a document missing from one list is not placed anywhere. The value depends on
    the document ids (renaming documents changes it), a full reversal need not give -1 and one
    adjacent swap can make it negative (see the tests). Both lists must have the same length n >= 2
    (SciPy refuses unequal lengths; n < 2 is undefined) and no duplicates. Identical lists give 1.
    Ideal 1."""
    o = _ranking(orig_ranking, "KTU original")
    r = _ranking(rep_ranking, "KTU reproduction")
    if len(o) != len(r):
        raise ValueError(f"KTU compares lists of equal length (repro_eval's kendalltau refuses others): "
                         f"{len(o)} vs {len(r)}")
    if len(o) < 2:
        raise ValueError(f"KTU needs at least 2 documents per list, got {len(o)}")
    x, y = union_codes(o, r)
    by_x = [yy for _, yy in sorted(zip(x, y))]
    n_pairs = len(o) * (len(o) - 1) // 2
    tau = (n_pairs - 2 * _sort_count(by_x)[1]) / math.sqrt(n_pairs) / math.sqrt(n_pairs)
    return float(np.round(min(1.0, max(-1.0, tau)), KTU_DECIMALS))


def tau_b_on_union_ranks(orig_ranking: Sequence[str], rep_ranking: Sequence[str]) -> float:
    """A label-invariant companion of KTU (a project diagnostic, NOT repro_eval's number): Kendall's
    tau_b over the DOCUMENTS of the union U, each document ranked by its 1-based position in each list
    and a document absent from a list of length n placed at n + 1 there (tied with the other absent):

        tau_b = (C - D) / sqrt(n_o * n_r)

    C / D concordant / discordant document pairs, n_o / n_r the pairs not tied in o / r; computed from
    exact integer counts with SciPy's arithmetic ``(C - D) / sqrt(n_o) / sqrt(n_r)``. Undefined
    (ValueError) when every pair is tied in one list."""
    o = _ranking(orig_ranking, "tau_b original")
    r = _ranking(rep_ranking, "tau_b reproduction")
    union = sorted(set(o) | set(r))
    ro = np.array([{d: i for i, d in enumerate(o, 1)}.get(d, len(o) + 1) for d in union], dtype=np.int64)
    rr = np.array([{d: i for i, d in enumerate(r, 1)}.get(d, len(r) + 1) for d in union], dtype=np.int64)
    so = np.sign(ro[:, None] - ro[None, :])
    sr = np.sign(rr[:, None] - rr[None, :])
    s = int((so * sr).sum()) // 2          # every pair counted twice in the full matrix
    n_o, n_r = int(np.count_nonzero(so)) // 2, int(np.count_nonzero(sr)) // 2
    if n_o == 0 or n_r == 0:
        raise ValueError("tau_b is undefined: every pair is tied in one of the lists")
    return float(min(1.0, max(-1.0, s / math.sqrt(n_o) / math.sqrt(n_r))))


def _overlaps(short: list[str], long: list[str]) -> list[int]:
    """X_d = |short[:d] ∩ long[:d]| for d = 1 .. len(long) (short[:d] = all of short when d > len)."""
    seen_s, seen_l, x, out = set(), set(), 0, []
    for d in range(len(long)):
        if d < len(short):
            x += short[d] in seen_l
            seen_s.add(short[d])
        x += long[d] in seen_s
        seen_l.add(long[d])
        out.append(x)
    return out


def rbo(orig_ranking: Sequence[str], rep_ranking: Sequence[str], p: float = RBO_EXT_P) -> float:
    """Rank-biased overlap, extrapolated (RBO_ext, Webber, Moffat & Zobel 2010, eq. 32), for lists
    S (the shorter, length s) and L (length l >= s), X_d = |S[:d] ∩ L[:d]| (S[:d] = S for d > s):

        RBO_ext = (1-p)/p * [ sum_{d=1..l} X_d/d * p^d + sum_{d=s+1..l} X_s (d-s)/(s d) * p^d ]
                  + [ (X_l - X_s)/l + X_s/s ] * p^l

    Evaluated over the whole lists (repro_eval first cuts both at 1000; cut them before calling if
    you want that). Computed as sum_d w_d B_d + w_{l+1} T with w_d = (1-p) p^(d-1), w_{l+1} = p^l
    (weights summing to 1), B_d = X_d/d (+ X_s (d-s)/(s d) for d > s) and T the bracket, each B_d
    and T ONE division of exact integers, and the total divided by fsum(w): identical lists (or S
    a prefix of L) give exactly 1.0, disjoint lists exactly 0.0. For lists of equal length this is
    repro_eval's RBO_ext (``rbo(...).ext`` of its vendored dlukes/rbo) up to rounding (measured
    <= 6e-16; dlukes sums in another order); for unequal lengths dlukes'
    code replaces X_d/d by 2 X_d/(s + d) for d > s and X_l by s * 2 X_l/(s + l) -- we follow the
    paper (with dlukes, S a prefix of L scores < 1). Both lists non-empty, no duplicates, 0 < p < 1."""
    a, b = _ranking(orig_ranking, "RBO original"), _ranking(rep_ranking, "RBO reproduction")
    if not a or not b:
        raise ValueError("RBO_ext needs two non-empty rankings")
    if not 0.0 < p < 1.0:
        raise ValueError(f"RBO persistence p must be in (0, 1), got {p!r}")
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    s, l = len(short), len(long)
    X = _overlaps(short, long)
    xs, xl = X[s - 1], X[l - 1]
    weights, terms = [], []
    for d in range(1, l + 1):
        w = (1.0 - p) * p ** (d - 1)
        b_d = X[d - 1] / d if d <= s else (X[d - 1] * s + xs * (d - s)) / (s * d)
        weights.append(w)
        terms.append(w * b_d)
    tail = p ** l
    weights.append(tail)
    terms.append(tail * (((xl - xs) * s + xs * l) / (l * s)))
    return math.fsum(terms) / math.fsum(weights)


def rbo_truncated(orig_ranking: Sequence[str], rep_ranking: Sequence[str], p: float = RBO_TRUNCATED_P,
                  depth: int = RBO_TRUNCATED_DEPTH) -> float:
    """The RBO that repro_eval >= 0.4 reports by default (``_rbo``, after Clarke et al.'s
    claclark/Compatibility), NOT RBO_ext: the truncated sum normalised by its weights,

        RBO_trunc = sum_{d=1..k} p^(d-1) X_d/d  /  sum_{d=1..k} p^(d-1),   k = depth,

    X_d = |o[:d] ∩ r[:d]| (a list shorter than d contributes all it has). Arithmetic as repro_eval's
    (weight multiplied by p step by step, ``weight * X_d / d`` added left to right). Note: identical
    lists shorter than ``depth`` score < 1. 0 < p <= 1, depth >= 1."""
    a, b = _ranking(orig_ranking, "RBO original"), _ranking(rep_ranking, "RBO reproduction")
    if not 0.0 < p <= 1.0 or depth < 1:
        raise ValueError(f"need 0 < p <= 1 and depth >= 1, got p={p!r}, depth={depth!r}")
    seen_a, seen_b, x = set(), set(), 0
    score, normalizer, weight = 0.0, 0.0, 1.0
    for i in range(depth):
        if i < len(a):
            x += a[i] in seen_b
            seen_a.add(a[i])
        if i < len(b):
            x += b[i] in seen_a
            seen_b.add(b[i])
        score += weight * x / (i + 1)
        normalizer += weight
        weight *= p
    return score / normalizer


def ktu_by_query(orig: Mapping[str, Sequence[str]], rep: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """{qid: ktu(orig[qid], rep[qid])} over the same queries, in the original's order."""
    return {q: ktu(orig[q], rep[q]) for q in same_topics(orig, rep, "KTU")}


def rbo_by_query(orig: Mapping[str, Sequence[str]], rep: Mapping[str, Sequence[str]],
                 p: float = RBO_EXT_P) -> dict[str, float]:
    """{qid: rbo(orig[qid], rep[qid], p)} over the same queries, in the original's order."""
    return {q: rbo(orig[q], rep[q], p) for q in same_topics(orig, rep, "RBO")}


def query_mean(per_query: Mapping[str, float]) -> float:
    """Mean over queries as repro_eval takes it: ``numpy.mean`` of the values in mapping order."""
    if not per_query:
        raise ValueError("mean over no queries")
    return _np_mean(list(per_query.values()))


# ---------------------------------------------------------------------- overall effects --

def effect_ratio(orig_deltas: Mapping[str, float], rep_deltas: Mapping[str, float]) -> float | None:
    """Effect ratio ER = mean_q Δ'_q / mean_q Δ_q, Δ_q = a_q - b_q of the original, Δ'_q of the
    reproduction (repro_eval ``measure/overall_effects.py : ER``; means ``numpy.mean``, both over the
    original's query order; the same queries required). Ideal 1 (the same mean effect); < 1 a smaller
    effect, < 0 an effect of the other sign. When the original's mean Δ is exactly 0 the ratio is
    undefined and ``None`` is returned (repro_eval divides anyway and gives ±inf or NaN)."""
    qids = same_topics(orig_deltas, rep_deltas, "ER")
    m_o = _np_mean([_finite(orig_deltas[q], f"original Δ {q}") for q in qids])
    m_r = _np_mean([_finite(rep_deltas[q], f"reproduction Δ {q}") for q in qids])
    return None if m_o == 0.0 else m_r / m_o


def relative_improvement(a: Mapping[str, float], b: Mapping[str, float]) -> float | None:
    """RI = (mean_q a_q - mean_q b_q) / mean_q b_q (repro_eval ``rel_improve``; ``numpy.mean`` over
    a's query order, the same queries required); ``None`` when mean b is exactly 0."""
    qids = same_topics(a, b, "RI")
    m_a = _np_mean([_finite(a[q], f"a {q}") for q in qids])
    m_b = _np_mean([_finite(b[q], f"b {q}") for q in qids])
    return None if m_b == 0.0 else (m_a - m_b) / m_b


def delta_relative_improvement(orig_a: Mapping[str, float], orig_b: Mapping[str, float],
                               rep_a: Mapping[str, float], rep_b: Mapping[str, float]) -> float | None:
    """ΔRI = RI - RI', RI of the original (a over baseline b), RI' of the reproduction
    (repro_eval ``measure/overall_effects.py : DRI``). Ideal 0; > 0 the reproduction's relative
    improvement is smaller. ``None`` when either RI is undefined. All four cover the same queries."""
    same_topics(orig_a, rep_a, "ΔRI (a)")
    same_topics(orig_b, rep_b, "ΔRI (b)")
    ri_o, ri_r = relative_improvement(orig_a, orig_b), relative_improvement(rep_a, rep_b)
    return None if ri_o is None or ri_r is None else ri_o - ri_r


# ------------------------------------------------------------------------------ bands --

def four_decimal_units(x: float) -> int:
    """x rounded half-even to 4 decimals on its exact binary value, as an integer count of 1e-4
    (the same as Python's ``round(x, 4)`` and trec_eval's ``printf("%.4f")``)."""
    x = _finite(x, "band")
    return int(Decimal(x).quantize(Decimal(1).scaleb(-BAND_DECIMALS),
                                   rounding=ROUND_HALF_EVEN).scaleb(BAND_DECIMALS))


def pyserini_band(orig_mean: float, rep_mean: float) -> str:
    """Pyserini's reproduction band of a reproduced mean against the original (reference) mean:

        u_o, u_r = the two means rounded to 4 decimals (``four_decimal_units``)
        OK     when u_o == u_r                       (equal at 4 decimals)
        OKish  when 0 < |u_o - u_r| <= 5             (|Δ| <= 5e-4 at 4 decimals)
        FAIL   otherwise

    Pyserini (``pyserini/2cr/*.py : run_conditions``) rounds the new score to 4 decimals and compares
    it in binary floating point with the expected 4-decimal value: ``math.isclose`` -> OK, else
    ``abs(score - expected) <= 0.0005`` -> OKish. We count decimal units instead, so a difference of
    exactly 5e-4 is always OKish (in Pyserini's float test it is OKish or FAIL depending on the
    values, e.g. |0.1235 - 0.1230| = 0.0005000000000000004 fails there). Raw means that differ by
    less than 5e-5 can still be OKish when they straddle a rounding boundary."""
    diff = abs(four_decimal_units(orig_mean) - four_decimal_units(rep_mean))
    return OK if diff == 0 else OKISH if diff <= OKISH_UNITS else FAIL
