"""Across datasets: one declared answer from the studies of one invocation (pure functions, no I/O).

Per dataset d: the primary Δ's query-weighted mean y_d = ΣΔ/n_d, its grouped bootstrap interval, and its
standard error, the linearised grouped variance the power section uses
(``evalstats.grouped_variance_of_mean``: v_d = G/(G-1) Σ_g (S_g - n_g y_d)² / n_d²).

The pooled answer under a declared weighting (the weights are part of the question):

* ``datasets``: every dataset counts once (BEIR's convention), pooled = Σ_d y_d / k;
* ``queries``: every query counts once, pooled = Σ_d ΣΔ_d / Σ_d n_d.

Its interval: a stratified grouped bootstrap. One generator ``numpy.random.default_rng(seed)`` draws, dataset
by dataset in the declared order, the index matrix ``integers(0, G_d, size=(B, G_d))``; replicate b of dataset
d is the study's own estimator (``bootstrap.ratio_replicates``: Σ drawn group sums / Σ drawn group sizes), and
the pooled replicate is the weighting applied to the datasets' drawn sums (``datasets``: the mean of the k
dataset replicates, summed left to right; ``queries``: Σ_d drawn sums / Σ_d drawn sizes).

Beside it, a random-effects meta-analysis of (y_d, v_d) - the expected values of the tests come from
``statsmodels.stats.meta_analysis.combine_effects`` and by hand:

* fixed effect: w_d = 1/v_d, μ_FE = Σ w y / Σ w, Var = 1/Σ w; Cochran's Q = Σ w (y - μ_FE)², df = k - 1,
  I² = max(0, (Q - df)/Q);
* τ²: DerSimonian–Laird max(0, (Q - df) / (Σw - Σw²/Σw)); Paule–Mandel: the τ² ≥ 0 at which
  Σ (y - μ(τ²))² / (v + τ²) = k - 1 (0 when even τ² = 0 gives less), solved by bisection;
* random effects with the declared τ²: w* = 1/(v + τ²), μ_RE = Σ w* y / Σ w*;
* Hartung–Knapp–Sidik–Jonkman interval: μ_RE ± t_{k-1} √(Σ w*(y - μ_RE)² / ((k-1) Σ w*));
* prediction interval for a new dataset (Higgins, Thompson & Spiegelhalter 2009):
  μ_RE ± t_{k-2} √(τ² + 1/Σ w*) (k ≥ 3).

Consistency: in how many datasets the grouped interval lies above 0, covers 0, lies below 0; and the
leave-one-dataset-out range of the pooled estimate (an influence diagnostic, not an interval).

The declared family of tests (config ``synthesis.family``, comparison names, written before any result):
every (dataset × comparison) of the comparisons all studies share gets one p-value, the two-sided grouped
sign-flip randomization test of mean Δ = 0: the statistic T = Σ_g S_g (n·Δ̄); replicate b flips the sign of
whole groups, T_b = Σ_g s_bg S_g with s_bg = 2·integers(0, 2) - 1 (summed by numpy along the row);
p = (1 + #{b: |T_b| ≥ |T| - 1e-10 Σ_g |S_g|}) / (B + 1). One generator
``numpy.random.default_rng([seed, 1])`` draws the B×G_d sign matrices row by row in the order of the rows
(the family's comparisons in their declared order, then the others in the studies' order; datasets in the
invocation's order within each). Over the m rows of the declared family only: Holm's step-down adjustment
p_(i)^Holm = min(1, max_{j≤i} (m - j + 1) p_(j)) and Benjamini-Hochberg's step-up
p_(i)^BH = min(1, min_{j≥i} m p_(j) / j) (p_(1) ≤ ... ≤ p_(m)); a row outside the family is ``exploratory``
and has no adjusted p-value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ..stats.bootstrap import percentile_linear, ratio_replicates, seq_sum
from ..stats.evalstats import grouped_variance

WEIGHTINGS = ("datasets", "queries")
TAU2_METHODS = ("paule-mandel", "dersimonian-laird")


@dataclass(frozen=True)
class Dataset:
    """One study's primary Δ by evidence group: ``sums`` (each group's summed Δ, in group order) and ``sizes``
    (its number of queries)."""

    name: str
    sums: tuple[float, ...]
    sizes: tuple[int, ...]

    @property
    def n(self) -> int:
        return sum(self.sizes)

    @property
    def mean(self) -> float:
        return seq_sum(self.sums) / self.n

    @property
    def variance(self) -> float:
        """The linearised grouped variance of the mean (``evalstats.grouped_variance``; needs two groups)."""
        try:
            return grouped_variance(self.sums, self.sizes, self.mean, self.n)
        except ValueError as exc:
            raise ValueError(f"dataset {self.name}: {exc}") from None


FAMILY_KEY = "synthesis.family"
UNDECLARED = ("the synthesis weighting is not declared (config synthesis.weighting is {!r}). Declare it "
              "BEFORE looking at any result: `datasets` (each dataset counts once) or `queries` (each query "
              "counts once), in a config file given with --configfile (docs/across-datasets.md)")


def check_declared(block: Mapping) -> None:
    """The synthesis block of the config declares a weighting (raises ValueError with the fix)."""
    if block["weighting"] not in WEIGHTINGS:
        raise ValueError(UNDECLARED.format(block["weighting"]))


def shared_comparisons(declared: Sequence[Sequence[str]]) -> list[str]:
    """The comparison names every study declares, in the first study's order."""
    return [c for c in declared[0] if all(c in other for other in declared[1:])]


def check_tests(block: Mapping, allowed: Sequence[str]) -> None:
    """Every name of the declared family of tests is a comparison of the studies (raises ValueError)."""
    for name in block["family"]:
        if name not in allowed:
            raise ValueError(f"config {FAMILY_KEY} names {name!r}, which is not a comparison of every study; "
                             f"allowed: {list(allowed)}")


def check_family(datasets: Sequence[Dataset], weighting: str) -> None:
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting {weighting!r} is not one of {WEIGHTINGS}")
    if len(datasets) < 2:
        raise ValueError(f"a synthesis needs two or more datasets (got {len(datasets)})")
    names = [d.name for d in datasets]
    if len(set(names)) != len(names):
        raise ValueError(f"a dataset entered twice: {sorted({n for n in names if names.count(n) > 1})}")


def pooled_mean(datasets: Sequence[Dataset], weighting: str) -> float:
    check_family(datasets, weighting)
    if weighting == "datasets":
        return seq_sum(d.mean for d in datasets) / len(datasets)
    return seq_sum(seq_sum(d.sums) for d in datasets) / sum(d.n for d in datasets)


def draw_stratified(seed: int, datasets: Sequence[Dataset], B: int) -> list[np.ndarray]:
    """One B×G_d index matrix per dataset, in order, from one seeded generator."""
    if B < 1:
        raise ValueError(f"B must be >= 1 (got {B})")
    rng = np.random.default_rng(seed)
    return [rng.integers(0, len(d.sums), size=(B, len(d.sums)), dtype=np.int64) for d in datasets]


def stratified_replicates(datasets: Sequence[Dataset], idx: Sequence[np.ndarray],
                          weighting: str) -> tuple[np.ndarray, list[np.ndarray]]:
    """(pooled replicates, each dataset's replicates) of the stratified grouped bootstrap."""
    check_family(datasets, weighting)
    per, nums, dens = [], [], []
    for d, i in zip(datasets, idx):
        sums, sizes = np.asarray(d.sums, dtype=np.float64), np.asarray(d.sizes, dtype=np.int64)
        per.append(ratio_replicates(sums, sizes, i))
        nums.append(np.cumsum(sums[i], axis=1)[:, -1])
        dens.append(sizes[i].sum(axis=1))
    if weighting == "datasets":
        pooled = np.cumsum(np.stack(per, axis=1), axis=1)[:, -1] / len(datasets)
    else:
        pooled = np.cumsum(np.stack(nums, axis=1), axis=1)[:, -1] / np.stack(dens, axis=1).sum(axis=1)
    return pooled, per


def interval(replicates: np.ndarray, percentiles: Sequence[float]) -> list[float]:
    return [percentile_linear(replicates, p) for p in percentiles]


def sign_of(lo: float, hi: float) -> str:
    """Where an interval lies: 'above 0', 'covers 0' or 'below 0'."""
    return "above 0" if lo > 0 else ("below 0" if hi < 0 else "covers 0")


def consistency(intervals: Sequence[Sequence[float]]) -> dict[str, int]:
    out = {"above 0": 0, "covers 0": 0, "below 0": 0}
    for lo, hi in intervals:
        out[sign_of(lo, hi)] += 1
    return out


def leave_one_out(datasets: Sequence[Dataset], weighting: str) -> dict:
    """The pooled estimate without each dataset in turn (k ≥ 3: two must remain), and its range."""
    if len(datasets) < 3:
        return {"estimates": {}, "range": None}
    est = {d.name: pooled_mean([o for o in datasets if o is not d], weighting) for d in datasets}
    return {"estimates": est, "range": [min(est.values()), max(est.values())]}


# ------------------------------------------------------------------------------ the meta-analysis --
def fixed_effect(y: Sequence[float], v: Sequence[float]) -> tuple[float, float]:
    """(μ_FE, its variance 1/Σw)."""
    w = [1 / vi for vi in v]
    return math.fsum(wi * yi for wi, yi in zip(w, y)) / math.fsum(w), 1 / math.fsum(w)


def cochran_q(y: Sequence[float], v: Sequence[float]) -> float:
    mu, _ = fixed_effect(y, v)
    return math.fsum((yi - mu) ** 2 / vi for yi, vi in zip(y, v))


def i_squared(q: float, k: int) -> float:
    return max(0.0, (q - (k - 1)) / q) if q > 0 else 0.0


def tau2_dersimonian_laird(y: Sequence[float], v: Sequence[float]) -> float:
    w = [1 / vi for vi in v]
    c = math.fsum(w) - math.fsum(wi * wi for wi in w) / math.fsum(w)
    return max(0.0, (cochran_q(y, v) - (len(y) - 1)) / c)


def _generalised_q(y: Sequence[float], v: Sequence[float], tau2: float) -> float:
    mu, _ = random_effects(y, v, tau2)
    return math.fsum((yi - mu) ** 2 / (vi + tau2) for yi, vi in zip(y, v))


def tau2_paule_mandel(y: Sequence[float], v: Sequence[float], rel_tol: float = 1e-12) -> float:
    """The root of Q(τ²) = k - 1 (Q decreases in τ²), by bisection; 0 when Q(0) ≤ k - 1."""
    df = len(y) - 1
    if _generalised_q(y, v, 0.0) <= df:
        return 0.0
    lo, hi = 0.0, max(1e-12, float(np.var(y)) * 10 + max(v))
    while _generalised_q(y, v, hi) > df:
        hi *= 2
    while hi - lo > rel_tol * hi:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _generalised_q(y, v, mid) > df else (lo, mid)
    return (lo + hi) / 2


def random_effects(y: Sequence[float], v: Sequence[float], tau2: float) -> tuple[float, float]:
    """(μ_RE, its variance 1/Σw*) with w* = 1/(v + τ²)."""
    return fixed_effect(y, [vi + tau2 for vi in v])


def hksj_interval(y: Sequence[float], v: Sequence[float], tau2: float, level: float) -> list[float]:
    k = len(y)
    mu, var = random_effects(y, v, tau2)
    scaled = math.fsum((yi - mu) ** 2 / (vi + tau2) for yi, vi in zip(y, v)) / (k - 1) * var
    half = stats.t.ppf(0.5 + level / 2, k - 1) * math.sqrt(scaled)
    return [mu - half, mu + half]


def prediction_interval(y: Sequence[float], v: Sequence[float], tau2: float,
                        level: float) -> list[float] | None:
    k = len(y)
    if k < 3:
        return None
    mu, var = random_effects(y, v, tau2)
    half = stats.t.ppf(0.5 + level / 2, k - 2) * math.sqrt(tau2 + var)
    return [mu - half, mu + half]


def meta_analysis(y: Sequence[float], v: Sequence[float], tau2_method: str, level: float) -> dict:
    """Every number of the random-effects block, with the declared τ² estimator."""
    if tau2_method not in TAU2_METHODS:
        raise ValueError(f"tau2 method {tau2_method!r} is not one of {TAU2_METHODS}")
    k = len(y)
    q = cochran_q(y, v)
    tau2 = {"dersimonian-laird": tau2_dersimonian_laird(y, v), "paule-mandel": tau2_paule_mandel(y, v)}
    mu_fe, var_fe = fixed_effect(y, v)
    mu_re, var_re = random_effects(y, v, tau2[tau2_method])
    return {"k": k, "fixed_effect": mu_fe, "fixed_effect_se": math.sqrt(var_fe), "q": q, "q_df": k - 1,
            "q_pvalue": float(stats.chi2.sf(q, k - 1)), "i2": i_squared(q, k),
            "tau2_dersimonian_laird": tau2["dersimonian-laird"], "tau2_paule_mandel": tau2["paule-mandel"],
            "tau2_method": tau2_method, "random_effect": mu_re, "random_effect_se": math.sqrt(var_re),
            "hksj_interval": hksj_interval(y, v, tau2[tau2_method], level),
            "prediction_interval": prediction_interval(y, v, tau2[tau2_method], level), "level": level}


# ------------------------------------------------------------------------------ one declared answer --
def study_dataset(name: str, deltas: Mapping[str, float], groups: Sequence[Sequence[str]]) -> Dataset:
    """A study's primary Δ by evidence group: ``deltas`` qid -> Δ in the per-query table's order, ``groups``
    the groups' member qids in group order (each group's Δ summed left to right in its member order)."""
    flat = [q for g in groups for q in g]
    if sorted(flat) != sorted(deltas) or len(set(flat)) != len(flat):
        raise ValueError(f"dataset {name}: the evidence groups do not partition the analysed queries")
    return Dataset(name, tuple(seq_sum(deltas[q] for q in g) for g in groups), tuple(len(g) for g in groups))


def percentiles_of(level: float) -> list[float]:
    return [50 * (1 - level), 50 * (1 + level)]


def synthesize(datasets: Sequence[Dataset], study_intervals: Sequence[Sequence[float]],
               declared: Mapping, tests: Mapping[str, Sequence[Dataset]] | None = None,
               ) -> tuple[dict, list[np.ndarray]]:
    """(every number of the synthesis, the stratified index matrices). ``study_intervals``: each study's own
    grouped interval of the primary Δ (its audited summary); ``declared``: the config's synthesis block;
    ``tests``: comparison -> its datasets (in the invocation's order), for the family of tests."""
    weighting = declared["weighting"]
    check_family(datasets, weighting)
    idx = draw_stratified(declared["seed"], datasets, declared["B"])
    pooled, _per = stratified_replicates(datasets, idx, weighting)
    pct = percentiles_of(declared["level"])
    y, v = [d.mean for d in datasets], [d.variance for d in datasets]
    rows = [{"dataset": d.name, "n_queries": d.n, "n_groups": len(d.sums), "mean": d.mean,
             "se": math.sqrt(d.variance), "grouped_interval": list(iv), "sign": sign_of(*iv)}
            for d, iv in zip(datasets, study_intervals)]
    result = {
        "declared": dict(declared), "se_rule": "linearised grouped variance G/(G-1) Σ (S_g - n_g Δ̄)² / n²",
        "datasets": rows,
        "pooled": {"weighting": weighting, "estimate": pooled_mean(datasets, weighting),
                   "interval": interval(pooled, pct), "percentiles": pct, "B": declared["B"],
                   "seed": declared["seed"]},
        "plain_mean_of_means": seq_sum(y) / len(y),
        "meta_analysis": meta_analysis(y, v, declared["tau2"], declared["level"]),
        "consistency": consistency(study_intervals),
        "leave_one_out": leave_one_out(datasets, weighting),
    }
    if tests is not None:
        result["family"] = family_block(tests, declared)
    return result, idx


# ------------------------------------------------------------------------------ the family of tests --
def _checked(p: Sequence[float]) -> list[float]:
    p = [float(x) for x in p]
    if not all(0.0 <= x <= 1.0 for x in p):
        raise ValueError(f"p-values must lie in [0, 1] (got {p})")
    return p


def holm(p: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the input order: the i-th smallest p times (m - i + 1), the
    running maximum, capped at 1."""
    p, m = _checked(p), len(p)
    out, running = [0.0] * m, 0.0
    for rank, i in enumerate(sorted(range(m), key=p.__getitem__)):
        running = max(running, (m - rank) * p[i])
        out[i] = min(1.0, running)
    return out


def bh(p: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg step-up adjusted p-values, in the input order: the i-th smallest p divided by i/m,
    the running minimum from the largest down, capped at 1."""
    p, m = _checked(p), len(p)
    out, running = [0.0] * m, math.inf
    for rank, i in reversed(list(enumerate(sorted(range(m), key=p.__getitem__)))):
        running = min(running, p[i] / ((rank + 1) / m))
        out[i] = min(1.0, running)
    return out


def sign_flips(rng: np.random.Generator, B: int, G: int) -> np.ndarray:
    return rng.integers(0, 2, size=(B, G), dtype=np.int64) * 2 - 1


def sign_flip_pvalue(d: Dataset, signs: np.ndarray) -> float:
    """Two-sided grouped sign-flip randomization p-value of mean Δ = 0 (whole groups flipped)."""
    sums = np.asarray(d.sums, dtype=np.float64)
    observed = abs(seq_sum(d.sums))
    tol = 1e-10 * float(np.abs(sums).sum())
    extreme = int(np.count_nonzero(np.abs((signs * sums).sum(axis=1)) >= observed - tol))
    return (1 + extreme) / (signs.shape[0] + 1)


def tested_rows(tests: Mapping[str, Sequence[Dataset]], declared: Mapping) -> list[dict]:
    """One row per (comparison, dataset): its mean Δ and randomization p-value, family comparisons first."""
    family = list(declared["family"])
    order = family + [c for c in tests if c not in family]
    rng = np.random.default_rng([declared["seed"], 1])
    return [{"dataset": d.name, "comparison": c, "role": "family" if c in family else "exploratory",
             "n_queries": d.n, "n_groups": len(d.sums), "mean": d.mean,
             "p": sign_flip_pvalue(d, sign_flips(rng, declared["B"], len(d.sums)))}
            for c in order for d in tests[c]]


def family_block(tests: Mapping[str, Sequence[Dataset]], declared: Mapping) -> dict:
    """The rows with Holm and BH adjusted p-values over the declared family (None for exploratory rows)."""
    check_tests(declared, list(tests))
    rows = tested_rows(tests, declared)
    members = [r for r in rows if r["role"] == "family"]
    for r in rows:
        r["p_holm"] = r["p_bh"] = None
    ps = [r["p"] for r in members]
    for r, h, q in zip(members, holm(ps), bh(ps)):
        r["p_holm"], r["p_bh"] = h, q
    return {"declared": list(declared["family"]), "m": len(members), "B": declared["B"],
            "seed": [declared["seed"], 1], "test": TEST_RULE, "adjustment": ADJUSTMENT, "rows": rows}


TEST_RULE = ("two-sided grouped sign-flip randomization test of mean delta = 0, whole evidence groups "
             "flipped: p = (1 + #{b: |sum_g s_bg S_g| >= |sum_g S_g| - 1e-10 sum_g |S_g|}) / (B + 1)")
ADJUSTMENT = ("Holm (family-wise error) and Benjamini-Hochberg (false discovery rate) over the m rows of the "
              "declared family; exploratory rows are not adjusted")
