"""Reproducibility measures (rerank_study.repro.repro_measures) against hand calculation, SciPy and
independent implementations (exact fractions; tests/independent_repro.py), never against the module itself.

Reference run = original (o), new run = reproduction (r)."""

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from independent_repro import (  # written independently of the module under test
    exact_band,
    scipy_ktu,
    webber_rbo_ext,
)
from scipy import stats

from rerank_study.repro import repro_measures as rm

# --------------------------------------------------------------------- the tiny example --
# Three queries, two methods (a = ce, b = rrf), 3-4 documents.
TINY_O_RANK = {"q1": ["d1", "d2", "d3", "d4"], "q2": ["d2", "d1", "d3", "d4"], "q3": ["d1", "d2", "d3"]}
TINY_R_RANK = {"q1": ["d1", "d2", "d3", "d4"], "q2": ["d1", "d2", "d4", "d3"], "q3": ["d2", "d1", "d3"]}
O_CE = {"q1": 0.5, "q2": 0.25, "q3": 1.0}
R_CE = {"q1": 0.5, "q2": 0.5, "q3": 0.5}
O_RRF = {"q1": 0.25, "q2": 0.25, "q3": 0.5}
R_RRF = {"q1": 0.25, "q2": 0.25, "q3": 0.5}


def test_tiny_ktu_by_hand():
    # q1: identical lists -> 1.
    # q2: union (sorted) d1 d2 d3 d4 -> codes o = [1, 0, 2, 3], r = [0, 1, 3, 2]. Position pairs:
    #     (1,2): o down, r up -> D; (1,3) C; (1,4) C; (2,3) C; (2,4) C; (3,4): o up, r down -> D.
    #     C = 4, D = 2, N = 6 -> tau = (4 - 2)/6 = 1/3.
    # q3: codes o = [0, 1, 2], r = [1, 0, 2]: (1,2) D, (1,3) C, (2,3) C -> tau = 1/3.
    # mean = (1 + 1/3 + 1/3) / 3 = 5/9.
    per_q = rm.ktu_by_query(TINY_O_RANK, TINY_R_RANK)
    assert per_q == {"q1": 1.0, "q2": pytest.approx(1 / 3, abs=1e-14), "q3": pytest.approx(1 / 3, abs=1e-14)}
    assert rm.query_mean(per_q) == pytest.approx(5 / 9, abs=1e-14)


def test_tiny_rbo_by_hand():
    # p = 4/5, (1-p)/p = 1/4; equal lengths: RBO_ext = 1/4 * sum_d A_d p^d + A_l p^l, A_d = X_d/d.
    # q1 identical -> 1.
    # q2: X = 0, 2, 2, 4 -> A = 0, 1, 2/3, 1.  sum = 16/25 + (2/3)(64/125) + 256/625 = 2608/1875;
    #     1/4 of it = 652/1875; + A_4 p^4 = 256/625 = 768/1875 -> 1420/1875 = 284/375.
    # q3: X = 0, 2, 3 -> A = 0, 1, 1.  1/4 (16/25 + 64/125) = 36/125; + p^3 = 64/125 -> 100/125 = 4/5.
    # mean = (1 + 284/375 + 4/5)/3 = 959/1125.
    per_q = rm.rbo_by_query(TINY_O_RANK, TINY_R_RANK, p=0.8)
    assert per_q["q1"] == 1.0
    assert per_q["q2"] == pytest.approx(284 / 375, abs=1e-15)
    assert per_q["q3"] == pytest.approx(4 / 5, abs=1e-15)
    assert rm.query_mean(per_q) == pytest.approx(959 / 1125, abs=1e-15)


def test_rbo_uneven_lengths_by_hand():
    # S = [a, b] (s = 2), L = [b, c, a] (l = 3), p = 4/5.  X_1 = 0, X_2 = |{a,b} ∩ {b,c}| = 1,
    # X_3 = |{a,b} ∩ {b,c,a}| = 2; X_s = 1, X_l = 2.
    # sum_d X_d/d p^d = (1/2)(16/25) + (2/3)(64/125) = 248/375; extrapolated d = 3: X_s (3-2)/(2*3) p^3 =
    # 32/375. 1/4 * 280/375 = 14/75; tail ((X_l - X_s)/l + X_s/s) p^l = (1/3 + 1/2)(64/125) = 32/75 -> 46/75.
    assert rm.rbo(["a", "b"], ["b", "c", "a"], p=0.8) == pytest.approx(46 / 75, abs=1e-15)
    assert rm.rbo(["b", "c", "a"], ["a", "b"], p=0.8) == pytest.approx(46 / 75, abs=1e-15)  # symmetric
    # the extrapolation at work: a prefix of the longer list agrees "perfectly" (repro_eval's vendored
    # dlukes/rbo gives 0.96587 for this pair -- its uneven-length modification, not followed here)
    assert rm.rbo(["a", "b"], ["a", "b", "c", "d"], p=0.8) == 1.0


def test_tiny_rmse_nrmse_by_hand():
    # o - r = 0, -0.25, 0.5 -> squares 0, 1/16, 1/4 -> mean 5/48 -> RMSE = sqrt(5/48).
    # worst case per topic max(o, 1-o) = 0.5, 0.75, 1 -> squares 1/4, 9/16, 1 -> mean 29/48.
    # nRMSE = sqrt(5/48) / sqrt(29/48) = sqrt(5/29).
    assert rm.rmse(O_CE, R_CE) == pytest.approx(math.sqrt(5 / 48), rel=1e-15)
    assert rm.max_rmse(O_CE) == pytest.approx(math.sqrt(29 / 48), rel=1e-15)
    assert rm.nrmse(O_CE, R_CE) == pytest.approx(math.sqrt(5 / 29), rel=1e-15)
    assert rm.rmse(O_CE, O_CE) == 0.0 and rm.nrmse(O_CE, O_CE) == 0.0


def test_tiny_er_and_delta_ri_by_hand():
    # Δ = ce - rrf.  original: 0.25, 0, 0.5 -> mean 1/4;  reproduction: 0.25, 0.25, 0 -> mean 1/6.
    # ER = (1/6) / (1/4) = 2/3.
    od = {q: O_CE[q] - O_RRF[q] for q in O_CE}
    rd = {q: R_CE[q] - R_RRF[q] for q in R_CE}
    assert rm.effect_ratio(od, rd) == pytest.approx(2 / 3, rel=1e-15)
    # RI = (mean ce - mean rrf) / mean rrf.  original: (7/12 - 1/3)/(1/3) = 3/4; reproduction:
    # (1/2 - 1/3)/(1/3) = 1/2.  ΔRI = 3/4 - 1/2 = 1/4.
    assert rm.relative_improvement(O_CE, O_RRF) == pytest.approx(3 / 4, rel=1e-15)
    assert rm.relative_improvement(R_CE, R_RRF) == pytest.approx(1 / 2, rel=1e-15)
    assert rm.delta_relative_improvement(O_CE, O_RRF, R_CE, R_RRF) == pytest.approx(1 / 4, rel=1e-14)


# -------------------------------------------------------------------------------- KTU --

def test_ktu_matches_scipy_on_the_union_bit_for_bit():
    rng = np.random.default_rng(11)
    pool = [f"doc{i}" for i in range(200)]
    for _ in range(300):
        n = int(rng.integers(2, 60))
        o = list(rng.choice(pool, n, replace=False))
        keep = int(rng.integers(0, n + 1))  # some of o's documents, shuffled, plus new ones
        r = list(rng.permutation(o[:keep])) + [d for d in rng.permutation(pool) if d not in o][: n - keep]
        r = list(rng.permutation(r)) if rng.random() < 0.5 else r
        assert rm.ktu(o, r) == scipy_ktu(o, r)


def test_ktu_is_repro_eval_s_construction_not_a_rank_correlation():
    # a full reversal: -1 only when the original happens to be in document-id order
    assert rm.ktu(["a", "b", "c", "d"], ["d", "c", "b", "a"]) == -1.0
    # b a c reversed = c a b: codes [1, 0, 2] vs [2, 0, 1] -> (1,2) C, (1,3) D, (2,3) C -> 1/3
    assert rm.ktu(["b", "a", "c"], ["c", "a", "b"]) == pytest.approx(1 / 3, abs=1e-14)
    # renaming the documents (same structure) changes the value
    assert rm.ktu(["x", "y", "z"], ["z", "y", "x"]) == -1.0
    assert rm.ktu(["y", "x", "z"], ["z", "x", "y"]) == pytest.approx(1 / 3, abs=1e-14)
    # disjoint lists: no document in common, yet 1 when both lists are in id order
    assert rm.ktu(["a", "b", "c"], ["d", "e", "f"]) == 1.0
    assert rm.ktu(["a", "b", "c"], ["f", "e", "d"]) == -1.0
    # ONE adjacent swap: o = a e b c d, r = e a b c d -> codes x = [0,4,1,2,3], y = [4,0,1,2,3]:
    # every pair involving position 1 or 2 is discordant (7), only (3,4) (3,5) (4,5) concordant (3)
    # -> KTU = (3 - 7)/10 = -0.4, where a rank correlation of the two lists is 1 - 2/10 = 0.8
    assert rm.ktu(list("aebcd"), list("eabcd")) == pytest.approx(-0.4, abs=1e-14)
    assert rm.tau_b_on_union_ranks(list("aebcd"), list("eabcd")) == pytest.approx(0.8, abs=1e-15)
    # the label-invariant companion: the reversal is -1 whatever the ids; disjoint lists are discordant
    assert rm.tau_b_on_union_ranks(["b", "a", "c"], ["c", "a", "b"]) == -1.0
    # disjoint: cross pairs 9 discordant; 12 pairs untied in each list -> -9/12
    assert rm.tau_b_on_union_ranks(["a", "b", "c"], ["d", "e", "f"]) == pytest.approx(-0.75, abs=1e-15)


def test_tau_b_on_union_ranks_matches_scipy():
    rng = np.random.default_rng(12)
    pool = [f"d{i}" for i in range(80)]
    for _ in range(200):
        o = list(rng.choice(pool, int(rng.integers(2, 30)), replace=False))
        r = list(rng.choice(pool, int(rng.integers(2, 30)), replace=False))
        union = sorted(set(o) | set(r))
        ro = [o.index(d) + 1 if d in o else len(o) + 1 for d in union]
        rr = [r.index(d) + 1 if d in r else len(r) + 1 for d in union]
        assert rm.tau_b_on_union_ranks(o, r) == float(stats.kendalltau(ro, rr).statistic)


@pytest.mark.parametrize("o,r,msg", [(["a", "b"], ["a", "b", "c"], "equal length"),
                                     (["a"], ["a"], "at least 2"), (["a", "a"], ["a", "b"], "duplicate")])
def test_ktu_refusals(o, r, msg):
    with pytest.raises(ValueError, match=msg):
        rm.ktu(o, r)


# -------------------------------------------------------------------------------- RBO --

def test_rbo_matches_webber_eq32_on_random_uneven_lists():
    rng = np.random.default_rng(13)
    pool = [f"doc{i}" for i in range(60)]
    worst = 0.0
    for _ in range(300):
        a = list(rng.choice(pool, int(rng.integers(1, 40)), replace=False))
        b = list(rng.choice(pool, int(rng.integers(1, 40)), replace=False))
        p = float(rng.choice([0.5, 0.8, 0.9, 0.95]))
        got, want = rm.rbo(a, b, p), webber_rbo_ext(a, b, p)
        assert 0.0 <= got <= 1.0
        worst = max(worst, abs(Fraction(got) - want))
    assert worst <= Fraction(1, 10 ** 15)


def test_rbo_extremes_are_exact():
    for n in (1, 2, 7, 50, 1000):
        docs = [f"d{i}" for i in range(n)]
        assert rm.rbo(docs, docs, 0.8) == 1.0 and rm.rbo(docs, docs, 0.95) == 1.0
        assert rm.rbo(docs, [f"e{i}" for i in range(n + 3)], 0.9) == 0.0  # disjoint, uneven


@pytest.mark.parametrize("a,b,p,msg", [([], ["a"], 0.8, "non-empty"), (["a"], ["a"], 1.0, r"\(0, 1\)"),
                                       (["a"], ["a"], 0.0, r"\(0, 1\)"),
                                       (["a", "a"], ["a"], 0.8, "duplicate")])
def test_rbo_refusals(a, b, p, msg):
    with pytest.raises(ValueError, match=msg):
        rm.rbo(a, b, p)


def test_rbo_truncated_repro_eval_default():
    # depth 3, p = 1/2, o = [a, b, c], r = [b, a, d]: X = 0, 2, 2.
    # (1 * 0/1 + 1/2 * 2/2 + 1/4 * 2/3) / (1 + 1/2 + 1/4) = (1/2 + 1/6) / (7/4) = (2/3)(4/7) = 8/21.
    assert rm.rbo_truncated(["a", "b", "c"], ["b", "a", "d"], p=0.5, depth=3) == pytest.approx(8 / 21,
                                                                                               rel=1e-15)
    # identical lists shorter than the depth score below 1 (repro_eval's defaults p=0.95, depth=1000)
    docs = [f"d{i}" for i in range(50)]
    # (sum_{d<=50} p^(d-1) + sum_{50<d<=1000} p^(d-1) 50/d) / sum_{d<=1000} p^(d-1), p = 0.95
    want = (sum(Fraction(19, 20) ** (d - 1) * Fraction(min(d, 50), d) for d in range(1, 1001))
            / sum(Fraction(19, 20) ** (d - 1) for d in range(1, 1001)))
    assert rm.rbo_truncated(docs, docs) == pytest.approx(float(want), rel=1e-13)
    assert rm.rbo_truncated(docs, docs) < 0.99
    assert rm.rbo_truncated(docs, docs, depth=50) == pytest.approx(1.0, abs=1e-15)


# ------------------------------------------------------------------- effects and errors --

def test_identical_runs_are_ideal():
    ranks = {"q1": ["a", "b", "c"], "q2": ["c", "a", "b"]}
    vals, base = {"q1": 0.7, "q2": 0.1}, {"q1": 0.3, "q2": 0.2}
    d = {q: vals[q] - base[q] for q in vals}
    assert rm.rmse(vals, vals) == 0.0 and rm.nrmse(vals, vals) == 0.0
    assert rm.query_mean(rm.ktu_by_query(ranks, ranks)) == 1.0
    assert rm.query_mean(rm.rbo_by_query(ranks, ranks)) == 1.0
    assert rm.effect_ratio(d, dict(d)) == 1.0
    assert rm.delta_relative_improvement(vals, base, dict(vals), dict(base)) == 0.0
    assert rm.pyserini_band(0.123456, 0.123456) == "OK"


def test_zero_denominators_are_none():
    zero = {"q1": 0.25, "q2": -0.25}       # mean Δ exactly 0: ER undefined
    assert rm.effect_ratio(zero, {"q1": 0.1, "q2": 0.3}) is None
    assert rm.effect_ratio(zero, zero) is None
    assert rm.effect_ratio({"q1": 0.5, "q2": 0.5}, zero) == 0.0   # a vanished effect is defined: 0
    b0 = {"q1": 0.0, "q2": 0.0}            # mean baseline 0: RI and ΔRI undefined
    assert rm.relative_improvement({"q1": 0.5, "q2": 0.1}, b0) is None
    assert rm.delta_relative_improvement({"q1": 0.5, "q2": 0.1}, b0, {"q1": 0.5, "q2": 0.1},
                                         {"q1": 0.1, "q2": 0.1}) is None


def test_differing_topic_sets_are_refused_by_name():
    with pytest.raises(ValueError, match=r"missing from the reproduction: \['q3'\]; missing from the "
                                         r"original: \['q9'\]"):
        rm.rmse({"q1": 0.1, "q2": 0.2, "q3": 0.3}, {"q1": 0.1, "q2": 0.2, "q9": 0.3})
    for f in (rm.nrmse, rm.effect_ratio):
        with pytest.raises(ValueError, match=r"missing from the original: \['q2'\]"):
            f({"q1": 0.1}, {"q1": 0.1, "q2": 0.2})
    with pytest.raises(ValueError, match="no queries"):
        rm.rmse({}, {})
    with pytest.raises(ValueError, match=r"missing from the reproduction: \['q2'\]"):
        rm.ktu_by_query({"q1": ["a", "b"], "q2": ["a", "b"]}, {"q1": ["a", "b"]})


def test_nrmse_needs_unit_interval_scores():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        rm.nrmse({"q1": 1.5}, {"q1": 0.5})
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        rm.nrmse({"q1": 0.5}, {"q1": -0.1})
    with pytest.raises(ValueError, match="non-finite"):
        rm.rmse({"q1": float("nan")}, {"q1": 0.5})


# ------------------------------------------------------------------------------ bands --

@pytest.mark.parametrize("o,r,band", [
    (0.1230, 0.1230, "OK"),
    (0.12344, 0.12336, "OK"),      # both 0.1234 although 8e-5 apart
    (0.12344, 0.12346, "OKish"),   # 2e-5 apart but 0.1234 vs 0.1235
    (0.1230, 0.1235, "OKish"),     # exactly 5 units (Pyserini's float test says FAIL here, see below)
    (0.1235, 0.1230, "OKish"),
    (0.3000, 0.3005, "OKish"),
    (0.1230, 0.1236, "FAIL"),      # 6 units
    (0.12304999, 0.12355001, "FAIL"),  # 0.1230 vs 0.1236
    (-0.0102, -0.0097, "OKish"),   # mean Δ can be negative
    # 4-decimal rounding is half-even on the EXACT binary value (as round(x, 4) and printf "%.4f"):
    (0.5, 0.49995, "OK"),          # 0.49995 is 0.4999500000000000055... -> 0.5000
    (0.1235, 0.12355, "OK"),       # 0.12355 is 0.1235499999999999931... -> 0.1235
    (0.0001, 0.00015, "OK"),       # 0.00015 is 0.0001499999999999999868... -> 0.0001
    (0.1235, 0.12345, "OK"),       # 0.12345 is 0.1234500000000000041... -> 0.1235
])
def test_bands_at_the_edges(o, r, band):
    assert rm.pyserini_band(o, r) == band
    assert rm.pyserini_band(o, r) == exact_band(o, r)


def test_band_boundary_against_pyserini_float_rule():
    # Pyserini: OKish when abs(score - expected) <= 0.0005 in binary floats; exactly 5 units is then
    # OKish for some values and FAIL for others. We count units, so it is always OKish.
    assert abs(0.1235 - 0.1230) > 0.0005 and rm.pyserini_band(0.1230, 0.1235) == "OKish"
    assert abs(0.0005 - 0.0) <= 0.0005 and rm.pyserini_band(0.0, 0.0005) == "OKish"
    assert rm.OKISH_UNITS == 5 and rm.BAND_DECIMALS == 4


def test_four_decimal_rounding_is_python_round_and_printf():
    rng = np.random.default_rng(14)
    values = list(rng.random(3000)) + [k / 10 ** 4 + 5e-5 for k in range(0, 10 ** 4, 37)] + [0.00015, 0.12345,
                                                                                             0.5]
    for x in values:
        x = float(x)
        assert rm.four_decimal_units(x) == int(Decimal(repr(round(x, 4))).scaleb(4)) == \
            int(Decimal(f"{x:.4f}").scaleb(4))
        assert rm.four_decimal_units(x) == round(Fraction(x) * 10 ** 4)
