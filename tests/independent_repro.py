"""Reproducibility measures written independently of rerank_study.repro.repro_measures, for the tests that
check
it (tests/unit/repro/test_repro_measures.py) and its use on a run folder
(tests/workflow/test_reproduction_measures.py): SciPy's Kendall tau on repro_eval's union codes, Webber et
al.'s RBO_ext in exact fractions, exact-fraction RMSE / nRMSE / ER / ΔRI and Pyserini's band."""

import math
from fractions import Fraction

from scipy import stats


def repro_eval_codes(o, r):
    """repro_eval's KTU construction, written out: union = sorted(set(o + r)), list.index()."""
    union = list(sorted(set(o + r)))
    return [union.index(d) for d in o], [union.index(d) for d in r]


def scipy_ktu(o, r):
    x, y = repro_eval_codes(list(o), list(r))
    return float(round(stats.kendalltau(x, y).statistic, 14))  # a numpy float: numpy's round, as repro_eval


def webber_rbo_ext(a, b, p):
    """RBO_ext, Webber, Moffat & Zobel (2010) eq. 32, literally, in exact fractions."""
    S, L = (list(a), list(b)) if len(a) <= len(b) else (list(b), list(a))
    s, l, p = len(S), len(L), Fraction(p)

    def X(d):
        return len(set(S[:d]) & set(L[:d]))

    first = sum(Fraction(X(d), d) * p ** d for d in range(1, l + 1))
    second = sum(Fraction(X(s) * (d - s), s * d) * p ** d for d in range(s + 1, l + 1))
    return (1 - p) / p * (first + second) + (Fraction(X(l) - X(s), l) + Fraction(X(s), s)) * p ** l


def exact_mean(values):
    return sum(map(Fraction, values), Fraction(0)) / len(values)


def exact_rmse(o, r):
    return math.sqrt(exact_mean([(Fraction(o[q]) - Fraction(r[q])) ** 2 for q in o]))


def exact_nrmse(o, r):
    worst = exact_mean([max(Fraction(o[q]), 1 - Fraction(o[q])) ** 2 for q in o])
    return math.sqrt(exact_mean([(Fraction(o[q]) - Fraction(r[q])) ** 2 for q in o]) / worst)


def exact_er(od, rd):
    return exact_mean(list(rd.values())) / exact_mean(list(od.values()))


def exact_dri(oa, ob, ra, rb):
    def ri(a, b):
        return (exact_mean(list(a.values())) - exact_mean(list(b.values()))) / exact_mean(list(b.values()))
    return ri(oa, ob) - ri(ra, rb)


def exact_band(mo, mr):
    diff = abs(round(Fraction(mo) * 10 ** 4) - round(Fraction(mr) * 10 ** 4))  # half-even on the exact value
    return "OK" if diff == 0 else "OKish" if diff <= 5 else "FAIL"
