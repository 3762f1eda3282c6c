"""The arithmetic of a synthesis across datasets, re-implemented with the standard library from its written
definitions (docs/across-datasets.md): nothing is shared with the pipeline.

Per dataset (its primary Δ by evidence group: ``sums`` in group order, each summed left to right in member
order, and ``sizes``): mean = Σ sums / n (sequential), variance = G/(G-1) · Σ (S_g - n_g·mean)² / n² (exactly
rounded sum, ``math.fsum``). Pooled: ``datasets`` = Σ means / k; ``queries`` = Σ_d Σ sums / Σ n. Bootstrap
replicate b: dataset d's drawn groups (row b of its index matrix) give (Σ drawn sums, Σ drawn sizes);
``datasets`` pools the k ratios (summed left to right) / k, ``queries`` the summed numerators / the summed
sizes.

Meta-analysis of (y_d, v_d): fixed effect and Cochran's Q with weights 1/v; I²; τ² by DerSimonian–Laird
(closed form) and Paule–Mandel by ITS OWN ITERATION (the fixed-point update τ² += (Q(τ²) - (k-1)) / Σ w*²(y -
μ*)², monotone from 0; the pipeline bisects); random effects with the declared τ²; the
Hartung–Knapp–Sidik–Jonkman interval with the t quantile on k-1 df and the prediction interval on k-2 df
(``calib_stats.t_quantile``, the audit's own inversion of the regularised incomplete beta); Q's p-value from
the audit's own regularised upper incomplete gamma (``chi2_sf``)."""

from __future__ import annotations

import math

from expected.calib_stats import t_quantile
from expected.definitions import percentile, seq_sum

PM_TOL = 1e-15  # the Paule–Mandel iteration stops when an update moves τ² by less than this (relative)


# ----------------------------------------------------------------------------------- one dataset --
def group_sums(deltas: dict[str, float], groups: list[list[str]]) -> tuple[list[float], list[int]]:
    return [seq_sum(deltas[q] for q in g) for g in groups], [len(g) for g in groups]


def dataset_mean(sums: list[float], sizes: list[int]) -> float:
    return seq_sum(sums) / sum(sizes)


def dataset_variance(sums: list[float], sizes: list[int]) -> float:
    g, n, m = len(sums), sum(sizes), dataset_mean(sums, sizes)
    return g / (g - 1) * math.fsum((s - k * m) ** 2 for s, k in zip(sums, sizes)) / n ** 2


# ------------------------------------------------------------------------------------ pooled --
def pooled(datasets: list[tuple[list[float], list[int]]], weighting: str) -> float:
    if weighting == "datasets":
        return seq_sum(dataset_mean(s, n) for s, n in datasets) / len(datasets)
    if weighting == "queries":
        return seq_sum(seq_sum(s) for s, _ in datasets) / sum(sum(n) for _, n in datasets)
    raise ValueError(f"weighting {weighting!r} is not defined in the audit")


def pooled_replicate(datasets, rows: list[list[int]], weighting: str) -> float:
    """One stratified replicate: ``rows`` = each dataset's drawn group indices (one row of its matrix)."""
    nums = [seq_sum(sums[j] for j in row) for (sums, _), row in zip(datasets, rows)]
    dens = [sum(sizes[j] for j in row) for (_, sizes), row in zip(datasets, rows)]
    if weighting == "datasets":
        return seq_sum(a / b for a, b in zip(nums, dens)) / len(datasets)
    return seq_sum(nums) / sum(dens)


def pooled_interval(datasets, matrices: list[list[list[int]]], weighting: str, pcts) -> list[float]:
    reps = [pooled_replicate(datasets, list(rows), weighting) for rows in zip(*matrices)]
    return [percentile(reps, p) for p in pcts]


def leave_one_out(names: list[str], datasets, weighting: str) -> dict:
    if len(datasets) < 3:
        return {"estimates": {}, "range": None}
    est = {n: pooled([d for j, d in enumerate(datasets) if j != i], weighting) for i, n in enumerate(names)}
    return {"estimates": est, "range": [min(est.values()), max(est.values())]}


def sign_of(lo: float, hi: float) -> str:
    return "above 0" if lo > 0 else ("below 0" if hi < 0 else "covers 0")


def consistency(intervals) -> dict[str, int]:
    signs = [sign_of(lo, hi) for lo, hi in intervals]
    return {s: signs.count(s) for s in ("above 0", "covers 0", "below 0")}


# ------------------------------------------------------------------------------ meta-analysis --
def weighted_mean(y: list[float], v: list[float], tau2: float = 0.0) -> tuple[float, float]:
    """(Σ w y / Σ w, 1 / Σ w) with w = 1/(v + τ²)."""
    w = [1 / (vi + tau2) for vi in v]
    return math.fsum(wi * yi for wi, yi in zip(w, y)) / math.fsum(w), 1 / math.fsum(w)


def q_statistic(y, v, tau2: float = 0.0) -> float:
    mu, _ = weighted_mean(y, v, tau2)
    return math.fsum((yi - mu) ** 2 / (vi + tau2) for yi, vi in zip(y, v))


def tau2_dl(y, v) -> float:
    w = [1 / vi for vi in v]
    c = math.fsum(w) - math.fsum(wi * wi for wi in w) / math.fsum(w)
    return max(0.0, (q_statistic(y, v) - (len(y) - 1)) / c)


def tau2_pm(y, v, max_iter: int = 10_000) -> float:
    """Paule–Mandel by the fixed-point iteration from τ² = 0 (0 when Q(0) ≤ k - 1)."""
    df, tau2 = len(y) - 1, 0.0
    for _ in range(max_iter):
        excess = q_statistic(y, v, tau2) - df
        if excess <= 0:
            return tau2
        mu, _ = weighted_mean(y, v, tau2)
        step = excess / math.fsum((yi - mu) ** 2 / (vi + tau2) ** 2 for yi, vi in zip(y, v))
        tau2 += step
        if step <= PM_TOL * tau2:
            return tau2
    raise ArithmeticError("the Paule–Mandel iteration did not converge")


def _gamma_series(a: float, x: float) -> float:
    term = total = 1.0 / a
    for n in range(1, 10_000):
        term *= x / (a + n)
        total += term
        if abs(term) < abs(total) * 1e-17:
            break
    return total * math.exp(-x + a * math.log(x) - math.lgamma(a))


def _gamma_fraction(a: float, x: float) -> float:
    tiny = 1e-300
    b, c, d = x + 1 - a, 1 / tiny, 1 / (x + 1 - a)
    h = d
    for i in range(1, 10_000):
        an, b = -i * (i - a), b + 2
        d = an * d + b
        d = 1 / (d if abs(d) > tiny else tiny)
        c = b + an / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        if abs(d * c - 1) < 1e-16:
            break
    return math.exp(-x + a * math.log(x) - math.lgamma(a)) * h


def chi2_sf(q: float, df: int) -> float:
    """P(χ²_df > q): the regularised upper incomplete gamma Q(df/2, q/2) (series below a+1, else Lentz)."""
    a, x = df / 2, q / 2
    if x <= 0:
        return 1.0
    return 1.0 - _gamma_series(a, x) if x < a + 1 else _gamma_fraction(a, x)


def meta_analysis(y: list[float], v: list[float], tau2_method: str, level: float) -> dict:
    k, q = len(y), q_statistic(y, v)
    tau2 = {"dersimonian-laird": tau2_dl(y, v), "paule-mandel": tau2_pm(y, v)}
    t2 = tau2[tau2_method]
    mu_fe, var_fe = weighted_mean(y, v)
    mu_re, var_re = weighted_mean(y, v, t2)
    half = t_quantile(0.5 + level / 2, k - 1) * math.sqrt(q_statistic(y, v, t2) / (k - 1) * var_re)
    pred = None
    if k >= 3:
        wide = t_quantile(0.5 + level / 2, k - 2) * math.sqrt(t2 + var_re)
        pred = [mu_re - wide, mu_re + wide]
    return {"k": k, "fixed_effect": mu_fe, "fixed_effect_se": math.sqrt(var_fe), "q": q, "q_df": k - 1,
            "q_pvalue": chi2_sf(q, k - 1), "i2": max(0.0, (q - (k - 1)) / q) if q > 0 else 0.0,
            "tau2_dersimonian_laird": tau2["dersimonian-laird"], "tau2_paule_mandel": tau2["paule-mandel"],
            "tau2_method": tau2_method, "random_effect": mu_re, "random_effect_se": math.sqrt(var_re),
            "hksj_interval": [mu_re - half, mu_re + half], "prediction_interval": pred, "level": level}
