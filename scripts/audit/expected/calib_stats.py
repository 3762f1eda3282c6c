"""The calibration's interval methods on one sample of groups, re-implemented with the standard library from
their written definitions (docs/outputs.md "calibration.json", SOURCE_MAP rows 55-62), in the documented
arithmetic order, so that every number of a recorded simulation is recomputed exactly: sums sequential, left
to right, in draw order; the percentile is numpy's linear rule (``definitions.percentile``); Φ and Φ⁻¹ are
``statistics.NormalDist``. The one number this module cannot give exactly is Student's t quantile (the
pipeline takes scipy's ``t.ppf``): ``t_quantile`` inverts the t distribution function by bisection to within
T_QUANTILE_REL, and the check accepts the run's quantile within that tolerance (and then uses it, so the
cluster-t endpoints are compared exactly)."""

from __future__ import annotations

import math
from statistics import NormalDist

from expected.definitions import percentile

ND = NormalDist()
DEGENERATE_SE = 1e-10  # an SE at or below this times the sample's largest |group mean| counts as zero
T_QUANTILE_REL = 1e-9  # stated tolerance of the t quantile: the continued fraction and bisection give ~1e-13


def ratio_and_se(sums, sizes, draw) -> tuple[float, float]:
    """θ = Σ S_g / Σ n_g over the drawn groups (in draw order) and the cluster-robust SE
    √(G/(G−1) · Σ (S_g − n_g θ)² / (Σ n_g)²), both sums sequential."""
    num, den = 0.0, 0
    for g in draw:
        num += sums[g]
        den += sizes[g]
    theta = num / den
    ss = 0.0
    for g in draw:
        r = sums[g] - sizes[g] * theta
        ss += r * r
    G = len(draw)
    return theta, math.sqrt(G / (G - 1) * ss / (den * den))


def ratio(sums, sizes, draw) -> float:
    num, den = 0.0, 0
    for g in draw:
        num += sums[g]
        den += sizes[g]
    return num / den


def acceleration(jack: list[float]):
    """a = (1/6)(Σ U³/n³)/(Σ U²/n²)^{3/2}, U_j = (n−1)(θ̄ − θ_(j)), θ̄ and the sums sequential; None when Σ U²
    = 0."""
    n = float(len(jack))
    total = 0.0
    for x in jack:
        total += x
    mean = total / n
    cubes = squares = 0.0
    for x in jack:
        u = (n - 1) * (mean - x)
        cubes += u * u * u
        squares += u * u
    den = squares / n ** 2
    if den == 0:
        return None
    return 1 / 6 * (cubes / n ** 3) / den ** 1.5


def bca_levels(reps: list[float], theta: float, jack: list[float], lo_p: float):
    """([100 α_1, 100 α_2] or None, z0, a): z0 = Φ⁻¹((#{θ* < θ̂} + #{θ* ≤ θ̂})/2B),
    α_{1,2} = Φ(z0 + (z0 ± z_α)/(1 − a(z0 ± z_α))), α = lo_p/100."""
    below = sum(1 for r in reps if r < theta) + sum(1 for r in reps if r <= theta)
    p = below / (2 * len(reps))
    z0 = ND.inv_cdf(p) if 0 < p < 1 else None
    a = acceleration(jack)
    if z0 is None or a is None:
        return None, z0, a
    z_alpha = ND.inv_cdf(lo_p / 100)
    levels = []
    for z in (z_alpha, -z_alpha):
        num = z0 + z
        if 1 - a * num == 0:
            return None, z0, a
        levels.append(100 * ND.cdf(z0 + num / (1 - a * num)))
    return levels, z0, a


def bootstrap_t(theta, se, reps, se_reps, tol, pcts):
    """[θ̂ − q_hi(t*) se, θ̂ − q_lo(t*) se] over the replicates with se* > tol; (interval or None,
    dropped)."""
    t = [(r - theta) / e for r, e in zip(reps, se_reps, strict=True) if e > tol]
    dropped = len(reps) - len(t)
    if se <= tol or len(t) < 2:
        return None, dropped
    return [theta - percentile(t, pcts[1]) * se, theta - percentile(t, pcts[0]) * se], dropped


def comparison_intervals(sums, sizes, deltas, g_idx, q_idx, pcts, t_q) -> dict:
    """Every method on one sample for one comparison: sums/sizes of the sample's G groups, its queries' Δ in
    the sample's order, the inner grouped (B × G) and query-level (B × N) index matrices, the t quantile."""
    G = len(sums)
    theta, se = ratio_and_se(sums, sizes, range(G))
    reps, se_reps = [], []
    for row in g_idx:
        r, e = ratio_and_se(sums, sizes, row)
        reps.append(r)
        se_reps.append(e)
    jack = [ratio(sums, sizes, [g for g in range(G) if g != j]) for j in range(G)]
    levels, z0, a = bca_levels(reps, theta, jack, pcts[0])
    tol = DEGENERATE_SE * max(abs(s / n) for s, n in zip(sums, sizes, strict=True))
    boot_t, dropped = bootstrap_t(theta, se, reps, se_reps, tol, pcts)
    n_q = len(deltas)
    qreps = []
    for row in q_idx:
        total = 0.0
        for i in row:
            total += deltas[i]
        qreps.append(total / n_q)
    intervals = {
        "percentile": [percentile(reps, pcts[0]), percentile(reps, pcts[1])],
        "bca": None if levels is None else [percentile(reps, levels[0]), percentile(reps, levels[1])],
        "bootstrap_t": boot_t,
        "cluster_t": [theta - t_q * se, theta + t_q * se],
        "query_percentile": [percentile(qreps, pcts[0]), percentile(qreps, pcts[1])],
    }
    return {"theta": theta, "se": se, "z0": z0, "a": a, "bootstrap_t_dropped": dropped,
            "intervals": intervals}


def wilson(successes: int, trials: int, alpha: float) -> list[float]:
    """Wilson score interval, z = Φ⁻¹(1 − α/2): (p̂ + z²/2n ± z √(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n), clipped
    to [0, 1]."""
    z = ND.inv_cdf(1 - alpha / 2)
    p, z2 = successes / trials, z * z
    denom = 1 + z2 / trials
    centre = (p + z2 / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / denom
    return [max(0.0, centre - half), min(1.0, centre + half)]


# ------------------------------------------------------------------------ Student's t quantile --

def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularised incomplete beta function (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        even = m * (b - m) * x / ((qam + m2) * (a + m2))
        odd = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        for aa in (even, odd):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-16:
            break
    return h


def _incomplete_beta(a: float, b: float, x: float) -> float:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_beta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    front = math.exp(log_beta + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: int) -> float:
    """P(T ≤ t) for Student's t with df degrees of freedom."""
    tail = 0.5 * _incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_quantile(p: float, df: int) -> float:
    """The p-quantile (p > ½) of Student's t: df 1 and 2 in closed form, else bisection of ``t_cdf``."""
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
    return (lo + hi) / 2
