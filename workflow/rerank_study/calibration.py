"""Calibration of the grouped bootstrap interval on the run's own data (DESIGN.md section 10).

How far can the preregistered 95 % grouped percentile interval be trusted on THESE data? The
data of one run: per-query paired differences Δ_q of K comparisons (same queries) and a
partition of the queries into G evidence groups. Group g has the sum S_g = Σ_{q∈g} Δ_q (left to
right, ``bootstrap.group_sums``) and the size n_g. The estimator is always the query-weighted
ratio θ = Σ S_g / Σ n_g over the (drawn) groups, never a mean of group means.

Interval methods, computed on a sample of G_s groups (sums S, sizes n) with an inner grouped index
matrix idx of shape (B, G_s) (θ* = ``bootstrap.ratio_replicates(S, n, idx)``):

* ``percentile`` (the preregistered one): numpy's linear percentiles (p_lo, p_hi) = (2.5, 97.5) of θ*.
* ``bca``: Efron's BCa with scipy's formula (scipy.stats._resampling ``_bca_interval``):
  z0 = Φ⁻¹((#{θ* < θ̂} + #{θ* ≤ θ̂}) / 2B); jackknife θ_(j) = θ of the sample without its j-th
  drawn group (a duplicate is left out once per copy); U_j = (G_s − 1)(θ̄_(.) − θ_(j));
  a = (1/6) (Σ U³ / G_s³) / (Σ U² / G_s²)^{3/2}; α_1 = Φ(z0 + (z0 + z_α)/(1 − a(z0 + z_α))),
  α_2 = the same with z_{1−α} = −z_α, α = p_lo/100; interval = numpy percentiles 100·α_1, 100·α_2
  of θ*. Φ and Φ⁻¹ are ``statistics.NormalDist()`` (pure Python, deterministic, the same in a
  standard-library re-implementation), not scipy's ndtr/ndtri. Undefined (None, counted) when
  the proportion is 0 or 1 (z0 infinite), Σ U² = 0 (a is 0/0), or 1 − a(z0 ± z_α) = 0.
* ``bootstrap_t``: t*_b = (θ*_b − θ̂)/se*_b with the cluster-robust SE on the drawn groups,
  se² = G_s/(G_s − 1) Σ_{g∈draw} (S_g − n_g θ)² / (Σ n_g)² (``evalstats.grouped_variance_of_mean``);
  interval [θ̂ − q_hi(t*) se, θ̂ − q_lo(t*) se], q = numpy linear percentiles of the kept t*.
  A replicate with se*_b ≤ 1e-10 · max_g |S_g/n_g| (the sample's largest |group mean|; exactly 0
  counts) has no spread in float arithmetic (one distinct group, or equal group means): it is
  DROPPED and counted. The interval is undefined (None, counted) when fewer than 2 replicates
  remain or the sample's own se is degenerate by the same rule.
* ``cluster_t``: θ̂ ± t_{G_s−1, p_hi/100} · se (``scipy.stats.t.ppf``; the quantile is recorded).
* ``query_percentile``: every query its own unit: the sample's queries (its groups in draw order,
  each group's members in group order) are redrawn by their own inner index matrix of shape
  (B, N_s), N_s = Σ n_g of the sample; θ* = ``bootstrap.query_replicates``; linear percentiles.

Simulations, all seeded, all draws ``rng.integers(0, high, size=..., dtype=np.int64)`` in exactly
this order, with one generator per outer simulation, so an auditor can recompute ANY outer
simulation alone. List entropy: numpy's SeedSequence concatenates the uint32 words of the
elements (seed < 2**32: one word each) and hashes the missing words of its 4-word pool as 0, so
trailing zeros do not count ([seed, 0, 0] is default_rng(seed)); the stream numbers are therefore
1..4, never 0, and no two streams (nor the project's ``default_rng(seed)``) share a generator:

* coverage, outer sample s = 0..S−1: ``rng = default_rng([seed, 1, s])``;
  draw = integers(0, G, G); idx = integers(0, G, (B, G)); qidx = integers(0, N_s, (B, N_s)).
  Truth = θ̂ of the full data; covered when lower ≤ truth ≤ upper.
* paired null, simulation s: ``rng = default_rng([seed, 2, s])``; e = integers(0, 2, G),
  ε_g = 2 e_g − 1, S'_g = ε_g S_g (a group's queries flip together; the sample is all G groups in
  group order); idx = integers(0, G, (B, G)); qidx = integers(0, N, (B, N)).
  A type I error is an interval that excludes 0 (lower > 0 or upper < 0).
* power, grid size n, simulation s: ``rng = default_rng([seed, 3, n, s])``; m = max(2,
  floor(n·G/N + 1/2)) groups (integer arithmetic); draw = integers(0, G, m); idx = integers(0, m,
  (B, m)). Reported: P(θ̂* ≥ threshold), P(percentile lower bound > 0), the mean query count.
  This is the power IF the true effect equals the development estimate (optimistic: the
  development estimate is the one that was selected).
* sign-flip randomization test: ``rng = default_rng([seed, 4])``; e = integers(0, 2, (R, G));
  T*_r = Σ_g ε_rg S_g / N (left to right); p = (1 + #{|T*| ≥ |θ̂| − γ}) / (1 + R) (Phipson & Smyth
  2010), ties counted as extreme with scipy's tolerance γ = 100 · eps · |θ̂|.

The K comparisons share every draw (outer indices, inner indices, signs). An interval that is
undefined neither covers the truth nor excludes 0; coverage and type I error are shares of ALL
simulations and the undefined count is reported beside them. Monte-Carlo error: the Wilson score
interval of a binomial proportion, z = Φ⁻¹(1 − α/2) from NormalDist, α = 1 − nominal (0.05).

Arithmetic (so that an independent implementation reproduces every bit): sums are sequential,
left to right, everywhere (θ, se, jackknife, U sums, T*); the replicates are computed in a
(G, B) layout whose axis-0 reduction numpy performs element by element (``column_totals``),
which equals ``bootstrap.ratio_replicates``'s ``cumsum`` bit for bit at a fifth of the cost
(tested); the vectorised code equals the plain-Python loop reference ``naive_sample_intervals``
bit for bit (tested). Percentiles are ``numpy.percentile`` (linear), several in one call.

Output of ``calibrate`` (JSON-able; undefined values are None, never NaN): the settings; per
comparison θ̂ and se, per method coverage (+ Wilson, covered, undefined, mean width over the
defined intervals) and type I error (+ Wilson, rejections, undefined), the dropped bootstrap-t
replicates, the sign-flip test, the power curve; and ``audit``: θ̂, se, z0, a, t quantile and
every interval endpoint of the first ``n_audit`` simulations of the coverage and null streams, and
θ̂*, lower bound and query count of the first ``n_audit`` power simulations of each grid size.

Cost: one outer sample at a time (scratch buffers reused: a few (G, B) arrays, < 50 MB at
B = 2000, n = 600); ``workers`` threads may share the simulations (the result does not depend on it).
"""

from __future__ import annotations

import math
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from functools import lru_cache, partial
from statistics import NormalDist
from typing import Mapping, Sequence

import numpy as np

from . import bootstrap as bs

METHODS = ("percentile", "bca", "bootstrap_t", "cluster_t", "query_percentile")
STREAMS = {"coverage": 1, "null": 2, "power": 3, "randomization": 4}  # never 0: see the docstring
DEGENERATE_SE = 1e-10  # relative to the sample's largest |group mean|
_ND = NormalDist()


# ------------------------------------------------------------------------- settings --

@dataclass(frozen=True)
class CalibrationSettings:
    """Seed, simulation sizes and levels. ``percentiles`` are the preregistered (2.5, 97.5);
    nominal coverage = (p_hi − p_lo)/100 and the test level is 1 − nominal."""

    seed: int
    S: int = 2000
    B_inner: int = 2000
    R: int = 10_000
    S_power: int = 400
    power_n: tuple[int, ...] = (100, 200, 300, 400, 500, 600)
    threshold: float = 0.01
    percentiles: tuple[float, float] = (2.5, 97.5)
    n_audit: int = 20

    def __post_init__(self):
        def whole(name, v, low):
            if type(v) is not int or v < low:  # noqa: E721 - a bool is no count
                raise ValueError(f"calibration setting {name} must be an integer >= {low}, got {v!r}")
        if type(self.seed) is int and self.seed >= 2 ** 32:  # noqa: E721
            raise ValueError(f"calibration setting seed must be < 2**32 (one SeedSequence word), got {self.seed}")
        for name, low in (("seed", 0), ("S", 1), ("B_inner", 2), ("R", 1), ("S_power", 1), ("n_audit", 0)):
            whole(name, getattr(self, name), low)
        object.__setattr__(self, "power_n", tuple(self.power_n))
        for n in self.power_n:
            whole("power_n entry", n, 1)
        lo, hi = (float(x) for x in self.percentiles)
        if not (0 < lo < 50 < hi < 100 and lo + hi == 100):
            raise ValueError(f"percentiles must be symmetric (lo, 100 - lo) with 0 < lo < 50, got {self.percentiles!r}")
        object.__setattr__(self, "percentiles", (lo, hi))
        if not math.isfinite(self.threshold):
            raise ValueError(f"threshold must be finite, got {self.threshold!r}")

    @property
    def nominal(self) -> float:
        return (self.percentiles[1] - self.percentiles[0]) / 100

    @property
    def alpha(self) -> float:
        return 2 * self.percentiles[0] / 100


@dataclass(frozen=True)
class RunData:
    """The validated data: names (K), group sums (K, G), sizes (G,), per-query Δ (K, N), members."""

    names: tuple[str, ...]
    sums: np.ndarray
    sizes: np.ndarray
    deltas: np.ndarray
    members: tuple[np.ndarray, ...]

    @property
    def G(self) -> int:
        return len(self.sizes)

    @property
    def N(self) -> int:
        return self.deltas.shape[1]


def prepare(deltas: Mapping[str, Sequence[float]], positions: Sequence[Sequence[int]]) -> RunData:
    """Validate Δ (K comparisons, same N queries, finite) and the partition (every query in exactly
    one non-empty group, G ≥ 2); group sums by ``bootstrap.group_sums``."""
    if not deltas:
        raise ValueError("no comparisons: deltas is empty")
    rows = {name: [float(x) for x in d] for name, d in deltas.items()}
    N = len(next(iter(rows.values())))
    if N == 0:
        raise ValueError("no queries: the deltas are empty")
    for name, d in rows.items():
        if len(d) != N:
            raise ValueError(f"comparison {name!r} has {len(d)} deltas, expected {N} (same queries)")
        if not all(math.isfinite(x) for x in d):
            raise ValueError(f"comparison {name!r} has a non-finite delta")
    groups = [list(g) for g in positions]
    if any(type(i) is bool or not isinstance(i, (int, np.integer)) for g in groups for i in g):
        raise ValueError("group members must be integer query positions")
    groups = [[int(i) for i in g] for g in groups]
    check_partition(groups, N)
    sums = np.array([bs.group_sums(d, groups)[0] for d in rows.values()])
    sizes = bs.group_sums(rows[next(iter(rows))], groups)[1]
    members = tuple(np.array(g, dtype=np.int64) for g in groups)
    return RunData(tuple(rows), sums, sizes, np.array(list(rows.values())), members)


def check_partition(groups: Sequence[Sequence[int]], N: int) -> None:
    """G ≥ 2 non-empty groups holding every position 0..N−1 exactly once."""
    if len(groups) < 2:
        raise ValueError(f"calibration needs at least 2 groups, got {len(groups)}")
    if any(len(g) == 0 for g in groups):
        raise ValueError("a group is empty")
    flat = [i for g in groups for i in g]
    missing = sorted(set(range(N)) - set(flat))
    outside = sorted({i for i in flat if not 0 <= i < N})
    if missing or outside or len(flat) != N:
        dup = len(flat) - len(set(flat))
        raise ValueError(f"the groups must partition the {N} queries exactly: {len(missing)} not covered "
                         f"(first {missing[:5]}), {len(outside)} outside 0..{N - 1} (first {outside[:5]}), "
                         f"{dup} duplicate member(s)")


# -------------------------------------------------------------------- small formulas --

def wilson_interval(successes: int, trials: int, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion p̂ = x/n, z = Φ⁻¹(1 − α/2) (NormalDist):
    (p̂ + z²/2n ± z √(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n)."""
    if trials < 1 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials, trials >= 1 (got {successes}, {trials})")
    z = _ND.inv_cdf(1 - alpha / 2)
    p, z2 = successes / trials, z * z
    denom = 1 + z2 / trials
    centre = (p + z2 / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def ratio(sums: np.ndarray, sizes: np.ndarray) -> float:
    """θ̂ = Σ S_g / Σ n_g of one sample (``bootstrap.ratio_replicates`` with the identity draw)."""
    return float(bs.ratio_replicates(sums, sizes, np.arange(len(sums))[None, :])[0])


class Workspace:
    """Reusable scratch arrays (one per thread). A fresh multi-megabyte temporary per operation
    costs page faults (glibc hands large freed blocks back to the system); a buffer is always
    completely overwritten before it is read, so nothing carries over between samples."""

    def __init__(self):
        self._flat: dict[str, np.ndarray] = {}

    def get(self, name: str, shape: tuple[int, ...], dtype=np.float64) -> np.ndarray:
        size = math.prod(shape)
        buf = self._flat.get(name)
        if buf is None or buf.size < size or buf.dtype != dtype:
            buf = self._flat[name] = np.empty(size, dtype)
        return buf[:size].reshape(shape)  # a C-contiguous view


def column_totals(a: np.ndarray) -> np.ndarray:
    """Σ over axis 0 of a C-contiguous (G, B) array, strictly left to right for every column: numpy
    reduces a non-contiguous axis element by element in order (pairwise summation applies only
    along the contiguous axis, which is why B = 1, a 1-D reduction, takes ``np.cumsum``)."""
    if a.shape[1] == 1:
        return np.cumsum(a[:, 0])[-1:]
    return a.sum(axis=0)


def gather(values: np.ndarray, idx_t: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """values[idx_t] as a C-contiguous array (into ``out`` when given; the indices are in range by
    construction, so ``mode="clip"`` never clips)."""
    if out is None:
        return np.ascontiguousarray(values[idx_t])
    return np.take(values, idx_t, out=out, mode="clip")


def drawn_totals(values: np.ndarray, idx_t: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Σ over the drawn units of each replicate, left to right, with idx_t = idx.T (G, B)
    C-contiguous (``column_totals``): equal to ``np.cumsum(values[idx], axis=1)[:, -1]`` of
    ``bootstrap.ratio_replicates`` bit for bit (tested), at a fifth of the cost."""
    if not idx_t.flags.c_contiguous:  # a transposed VIEW would give an F-ordered gather (pairwise sum)
        raise ValueError("drawn_totals needs a C-contiguous (G, B) index matrix")
    return column_totals(gather(values, idx_t, out))


def cluster_se(drawn_sums: np.ndarray, drawn_sizes: np.ndarray, theta, den=None, out=None) -> np.ndarray:
    """Cluster-robust SE per column b of C-contiguous (G, B) drawn sums / sizes:
    se_b = √( G/(G−1) · Σ_g (S_g − n_g θ_b)² / (Σ_g n_g)² ), i.e. √ of
    ``evalstats.grouped_variance_of_mean`` on the drawn groups; the sums over g are sequential
    (``column_totals``). ``den`` = Σ_g n_g when known; ``out`` a (G, B) scratch buffer."""
    G = drawn_sums.shape[0]
    if G < 2:
        raise ValueError("the cluster-robust SE needs at least two groups")
    resid = np.multiply(drawn_sizes, theta, out=out)  # then in place: (S_g − n_g θ)²
    np.subtract(drawn_sums, resid, out=resid)
    np.multiply(resid, resid, out=resid)
    ss = column_totals(resid)
    den = column_totals(drawn_sizes) if den is None else den
    return np.sqrt(G / (G - 1) * ss / (den * den))


def sample_se(sums: np.ndarray, sizes: np.ndarray, theta: float) -> float:
    """The sample's own cluster-robust SE (``cluster_se`` with the identity draw)."""
    return float(cluster_se(sums[:, None], sizes[:, None], np.array([theta]))[0])


def degenerate_below(sums: np.ndarray, sizes: np.ndarray) -> float:
    """An SE at or below this is treated as zero: DEGENERATE_SE · max_g |S_g / n_g|."""
    return DEGENERATE_SE * float(np.max(np.abs(sums / sizes)))


# -------------------------------------------------------------------------- intervals --

def percentile_interval(reps: np.ndarray, percentiles) -> tuple[float, float]:
    """The preregistered rule: numpy's default linear percentiles (= ``bootstrap.percentile_linear``;
    several percentiles in one call give the same numbers as one call each)."""
    lo, hi = np.percentile(reps, list(percentiles))
    return float(lo), float(hi)


def percentile_of_score(reps: np.ndarray, score: float) -> float:
    """scipy ``_percentile_of_score`` ('mean' kind): (#{θ* < θ̂} + #{θ* ≤ θ̂}) / (2B)."""
    return (int(np.count_nonzero(reps < score)) + int(np.count_nonzero(reps <= score))) / (2 * len(reps))


@lru_cache(maxsize=16)
def leave_one_out_index(G: int) -> np.ndarray:
    """(G, G−1) index matrix: row j lists 0..G−1 without j, in order (scipy ``_jackknife_resample``);
    read-only (cached)."""
    full = np.broadcast_to(np.arange(G), (G, G))
    out = full[~np.eye(G, dtype=bool)].reshape(G, G - 1)
    out.flags.writeable = False
    return out


def jackknife(sums: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Leave-one-group-out θ_(j) = ratio of the sample without its j-th drawn group."""
    return bs.ratio_replicates(sums, sizes, leave_one_out_index(len(sums)))


def acceleration(theta_jack: np.ndarray) -> float | None:
    """scipy's a = (1/6) (Σ U³/n³) / (Σ U²/n²)^{3/2}, U_j = (n−1)(θ̄_(.) − θ_(j)); θ̄ = sequential
    mean. None when Σ U² = 0 (0/0)."""
    n = float(len(theta_jack))
    mean = float(np.cumsum(theta_jack)[-1]) / n
    u = (n - 1) * (mean - theta_jack)
    num = float(np.cumsum(u * u * u)[-1]) / n ** 3
    den = float(np.cumsum(u * u)[-1]) / n ** 2
    if den == 0:
        return None
    return 1 / 6 * num / den ** 1.5


def bca_levels(z0: float, a: float, alpha: float) -> tuple[float, float] | None:
    """α_1 = Φ(z0 + (z0 + z_α)/(1 − a(z0 + z_α))), α_2 with z_{1−α} = −z_α (NormalDist)."""
    z_alpha = _ND.inv_cdf(alpha)
    out = []
    for z in (z_alpha, -z_alpha):
        num = z0 + z
        if 1 - a * num == 0:
            return None
        out.append(_ND.cdf(z0 + num / (1 - a * num)))
    return out[0], out[1]


def bca_percentiles(reps, theta_hat, theta_jack, percentiles) -> tuple[list[float] | None, dict]:
    """The BCa interval's percentiles [100 α_1, 100 α_2] of θ* (None where undefined) and z0, a."""
    p = percentile_of_score(reps, theta_hat)
    z0 = _ND.inv_cdf(p) if 0 < p < 1 else None
    a = acceleration(theta_jack)
    levels = None if z0 is None or a is None else bca_levels(z0, a, percentiles[0] / 100)
    return (None if levels is None else [100 * levels[0], 100 * levels[1]]), {"z0": z0, "a": a}


def bca_interval(reps, theta_hat, theta_jack, percentiles) -> tuple[tuple[float, float] | None, dict]:
    """BCa interval (see the module docstring) and its z0, a (None where undefined)."""
    levels, diag = bca_percentiles(reps, theta_hat, theta_jack, percentiles)
    return (None if levels is None else percentile_interval(reps, levels)), diag


def bootstrap_t_interval(theta_hat, se_hat, reps, se_reps, tol, percentiles):
    """[θ̂ − q_hi(t*) se, θ̂ − q_lo(t*) se], t* over the replicates with se* > tol. Returns
    (interval or None, number of dropped replicates)."""
    keep = se_reps > tol
    dropped = int(len(reps) - np.count_nonzero(keep))
    if se_hat <= tol or len(reps) - dropped < 2:
        return None, dropped
    t = (reps[keep] - theta_hat) / se_reps[keep]
    q_lo, q_hi = np.percentile(t, list(percentiles))
    return (theta_hat - float(q_hi) * se_hat, theta_hat - float(q_lo) * se_hat), dropped


@lru_cache(maxsize=64)
def t_quantile(G: int, percentiles: tuple[float, float]) -> float:
    """t_{G−1, p_hi/100} (``scipy.stats.t.ppf``)."""
    from scipy.stats import t

    return float(t.ppf(percentiles[1] / 100, G - 1))


def cluster_t_interval(theta_hat: float, se_hat: float, q: float) -> tuple[float, float]:
    """θ̂ ± q · se."""
    return theta_hat - q * se_hat, theta_hat + q * se_hat


# ---------------------------------------------------------------- one outer sample --

def sample_intervals(sums, sizes, query_deltas, g_idx, q_idx, percentiles, workspace=None) -> dict:
    """Every method on one sample: sums (K, G_s), sizes (G_s,), query_deltas (K, N_s) in the
    sample's query order, g_idx (B, G_s), q_idx (B, N_s). Returns, per comparison k, θ̂, se,
    the intervals (None = undefined), BCa z0 / a and the dropped bootstrap-t replicates.
    Replicates θ* = ``drawn_totals(S, idx.T) / drawn_totals(n, idx.T)``: bit-equal to
    ``bootstrap.ratio_replicates(S, n, idx)`` (and to ``bootstrap.query_replicates`` for queries)."""
    ws = workspace if workspace is not None else Workspace()
    (G, B), n_q = g_idx.shape[::-1], query_deltas.shape[1]
    idx_t, q_t = ws.get("idx_t", (G, B), np.int64), ws.get("q_t", (n_q, B), np.int64)
    np.copyto(idx_t, g_idx.T)
    np.copyto(q_t, q_idx.T)
    drawn_sizes = gather(sizes.astype(np.float64), idx_t, ws.get("drawn_sizes", (G, B)))
    shared = {"idx_t": idx_t, "q_t": q_t, "drawn_sizes": drawn_sizes, "den": column_totals(drawn_sizes),
              "drawn": ws.get("drawn", (G, B)), "resid": ws.get("resid", (G, B)),
              "query_drawn": ws.get("query_drawn", (n_q, B)),
              "t_quantile": t_quantile(G, tuple(percentiles)), "percentiles": tuple(percentiles)}
    out = [_comparison_intervals(sums[k], sizes, query_deltas[k], shared) for k in range(sums.shape[0])]
    return {"t_quantile": shared["t_quantile"], "comparisons": out}


def _comparison_intervals(s, sizes, d, shared) -> dict:
    percentiles = shared["percentiles"]
    theta = ratio(s, sizes)
    se = sample_se(s, sizes, theta)
    drawn = gather(s, shared["idx_t"], shared["drawn"])
    reps = column_totals(drawn) / shared["den"]
    se_reps = cluster_se(drawn, shared["drawn_sizes"], reps, shared["den"], shared["resid"])
    bca_levels_, bca_diag = bca_percentiles(reps, theta, jackknife(s, sizes), percentiles)
    ends = np.percentile(reps, list(percentiles) + (bca_levels_ or [])).tolist()  # one partition
    boot_t, dropped = bootstrap_t_interval(theta, se, reps, se_reps, degenerate_below(s, sizes), percentiles)
    query_reps = drawn_totals(d, shared["q_t"], shared["query_drawn"]) / len(d)
    intervals = {
        "percentile": (ends[0], ends[1]),
        "bca": None if bca_levels_ is None else (ends[2], ends[3]),
        "bootstrap_t": boot_t,
        "cluster_t": cluster_t_interval(theta, se, shared["t_quantile"]),
        "query_percentile": percentile_interval(query_reps, percentiles),
    }
    return {"theta": theta, "se": se, "intervals": intervals, **bca_diag, "bootstrap_t_dropped": dropped}


def naive_sample_intervals(sums, sizes, query_deltas, g_idx, q_idx, percentiles) -> dict:
    """Plain-Python loop reference of ``sample_intervals`` (one comparison at a time, one replicate
    at a time, sequential sums); used in the tests to prove the vectorised code equal."""
    out = []
    q = t_quantile(len(sizes), tuple(percentiles))
    for s, d in zip(sums.tolist(), query_deltas.tolist()):
        out.append(_naive_comparison(s, sizes.tolist(), d, g_idx.tolist(), q_idx.tolist(), q, percentiles))
    return {"t_quantile": q, "comparisons": out}


def _naive_ratio_se(s, n, draw):
    num, den = 0.0, 0
    for g in draw:
        num += s[g]
        den += n[g]
    theta = num / den
    ss = 0.0
    for g in draw:
        r = s[g] - n[g] * theta
        ss += r * r
    G = len(draw)
    return theta, math.sqrt(G / (G - 1) * ss / (den * den))


def _naive_comparison(s, n, d, g_idx, q_idx, q, percentiles) -> dict:
    G, (lo, hi) = len(s), percentiles
    theta, se = _naive_ratio_se(s, n, range(G))
    pairs = [_naive_ratio_se(s, n, row) for row in g_idx]
    reps = [p[0] for p in pairs]
    jack = [_naive_ratio_se(s, n, [g for g in range(G) if g != j])[0] for j in range(G)]
    below = sum(1 for r in reps if r < theta) + sum(1 for r in reps if r <= theta)
    pos = below / (2 * len(reps))
    mean = bs.seq_sum(jack) / G
    u = [(G - 1) * (mean - x) for x in jack]
    a = 1 / 6 * (bs.seq_sum(x * x * x for x in u) / G ** 3) / (bs.seq_sum(x * x for x in u) / G ** 2) ** 1.5
    z0 = _ND.inv_cdf(pos)
    za = _ND.inv_cdf(lo / 100)
    levels = [_ND.cdf(z0 + (z0 + z) / (1 - a * (z0 + z))) for z in (za, -za)]
    tol = DEGENERATE_SE * max(abs(x / m) for x, m in zip(s, n))
    ts = [(r - theta) / e for r, e in pairs if e > tol]
    qreps = [bs.seq_sum(d[i] for i in row) / len(row) for row in q_idx]
    intervals = {
        "percentile": (bs.percentile_linear(reps, lo), bs.percentile_linear(reps, hi)),
        "bca": tuple(bs.percentile_linear(reps, 100 * x) for x in levels),
        "bootstrap_t": (theta - bs.percentile_linear(ts, hi) * se, theta - bs.percentile_linear(ts, lo) * se),
        "cluster_t": (theta - q * se, theta + q * se),
        "query_percentile": (bs.percentile_linear(qreps, lo), bs.percentile_linear(qreps, hi)),
    }
    return {"theta": theta, "se": se, "intervals": intervals, "z0": z0, "a": a,
            "bootstrap_t_dropped": len(reps) - len(ts)}


# ------------------------------------------------------------------ outer simulations --

def generator(seed: int, stream: str, *index: int) -> np.random.Generator:
    """``numpy.random.default_rng([seed, STREAMS[stream], *index])``."""
    return np.random.default_rng([seed, STREAMS[stream], *index])


def draw(rng: np.random.Generator, high: int, size) -> np.ndarray:
    """The only draw used: ``rng.integers(0, high, size=size, dtype=np.int64)``."""
    return rng.integers(0, high, size=size, dtype=np.int64)


def sample_queries(data: RunData, groups: np.ndarray) -> np.ndarray:
    """Query positions of a sample: its groups in draw order, each group's members in order."""
    return np.concatenate([data.members[g] for g in groups.tolist()])


def coverage_sample(data: RunData, settings: CalibrationSettings, s: int, workspace=None) -> dict:
    """Outer sample s of the coverage stream (draw order in the module docstring)."""
    rng = generator(settings.seed, "coverage", s)
    groups = draw(rng, data.G, data.G)
    g_idx = draw(rng, data.G, (settings.B_inner, data.G))
    queries = sample_queries(data, groups)
    q_idx = draw(rng, len(queries), (settings.B_inner, len(queries)))
    return sample_intervals(data.sums[:, groups], data.sizes[groups], data.deltas[:, queries],
                            g_idx, q_idx, settings.percentiles, workspace)


def null_sample(data: RunData, settings: CalibrationSettings, s: int, workspace=None) -> dict:
    """Simulation s of the paired null: whole groups sign-flipped (draw order in the docstring)."""
    rng = generator(settings.seed, "null", s)
    signs = 2 * draw(rng, 2, data.G) - 1
    g_idx = draw(rng, data.G, (settings.B_inner, data.G))
    queries = sample_queries(data, np.arange(data.G))
    q_idx = draw(rng, data.N, (settings.B_inner, data.N))
    flip = np.concatenate([np.full(len(m), e) for m, e in zip(data.members, signs.tolist())])
    return sample_intervals(data.sums * signs, data.sizes, data.deltas[:, queries] * flip,
                            g_idx, q_idx, settings.percentiles, workspace)


class Tally:
    """Per comparison and method: intervals containing a target, excluding 0, undefined, widths."""

    def __init__(self, K: int):
        self.K, self.n = K, 0
        self.counts = [{m: {"contains": 0, "excludes_0": 0, "undefined": 0, "width": 0.0} for m in METHODS}
                       for _ in range(K)]
        self.dropped = [0] * K

    def add(self, result: dict, targets: Sequence[float]) -> None:
        self.n += 1
        for k, comp in enumerate(result["comparisons"]):
            self.dropped[k] += comp["bootstrap_t_dropped"]
            for m, iv in comp["intervals"].items():
                c = self.counts[k][m]
                if iv is None:
                    c["undefined"] += 1
                    continue
                c["contains"] += iv[0] <= targets[k] <= iv[1]
                c["excludes_0"] += iv[0] > 0 or iv[1] < 0
                c["width"] += iv[1] - iv[0]


def audit_record(s: int, result: dict) -> dict:
    """JSON-able record of one outer simulation (for recomputation by an auditor)."""
    comps = [{"theta": c["theta"], "se": c["se"], "z0": c["z0"], "a": c["a"],
              "bootstrap_t_dropped": c["bootstrap_t_dropped"],
              "intervals": {m: (None if iv is None else [iv[0], iv[1]]) for m, iv in c["intervals"].items()}}
             for c in result["comparisons"]]
    return {"s": s, "t_quantile": result["t_quantile"], "comparisons": comps}


def ordered_map(fn, items, workers: int = 1):
    """``fn(item, workspace)`` over items, in order; on a pool of ``workers`` threads when > 1
    (numpy releases the GIL in its array loops), one Workspace per thread. Each simulation has
    its own generator, so the results do not depend on ``workers`` (tested)."""
    if type(workers) is not int or workers < 1:  # noqa: E721
        raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
    if workers == 1:
        ws = Workspace()
        yield from (fn(item, ws) for item in items)
        return
    local = threading.local()

    def run(item):
        if not hasattr(local, "ws"):
            local.ws = Workspace()
        return fn(item, local.ws)

    with ThreadPoolExecutor(workers) as pool:
        yield from pool.map(run, items)


def simulate(data: RunData, settings: CalibrationSettings, stream: str, workers: int = 1) -> tuple[Tally, list]:
    """Run the coverage or null stream: S simulations, tallied; the first n_audit recorded."""
    one = {"coverage": coverage_sample, "null": null_sample}[stream]
    targets = [ratio(data.sums[k], data.sizes) for k in range(len(data.names))] if stream == "coverage" \
        else [0.0] * len(data.names)
    tally, records = Tally(len(data.names)), []
    for s, result in enumerate(ordered_map(partial(one, data, settings), range(settings.S), workers)):
        tally.add(result, targets)
        if s < settings.n_audit:
            records.append(audit_record(s, result))
    return tally, records


def coverage_summary(tally: Tally, k: int, alpha: float) -> dict:
    """Coverage share of all simulations, its Wilson interval, mean width of the defined intervals."""
    out = {}
    for m, c in tally.counts[k].items():
        defined = tally.n - c["undefined"]
        out[m] = {"coverage": c["contains"] / tally.n, "wilson": list(wilson_interval(c["contains"], tally.n, alpha)),
                  "covered": c["contains"], "undefined": c["undefined"],
                  "mean_width": c["width"] / defined if defined else None}
    return out


def type_i_summary(tally: Tally, k: int, alpha: float) -> dict:
    """Share of all null simulations whose interval excludes 0, and its Wilson interval."""
    return {m: {"rate": c["excludes_0"] / tally.n, "wilson": list(wilson_interval(c["excludes_0"], tally.n, alpha)),
                "rejections": c["excludes_0"], "undefined": c["undefined"]}
            for m, c in tally.counts[k].items()}


# ------------------------------------------------------------ randomization test --

def sign_flip_test(sums: np.ndarray, N: int, R: int, rng: np.random.Generator) -> list[dict]:
    """Grouped sign-flip test of θ̂ = Σ S_g / N for every row of sums (K, G), one shared sign
    matrix e = integers(0, 2, (R, G)): T*_r = Σ_g (2e_rg − 1) S_g / N (sequential);
    p = (1 + #{|T*| ≥ |θ̂| − γ}) / (1 + R), γ = 100·eps·|θ̂| (scipy's tie tolerance)."""
    signs = 2 * draw(rng, 2, (R, sums.shape[1])) - 1
    signs_t = np.ascontiguousarray(signs.T)
    out = []
    for s in sums:
        observed = float(np.cumsum(s)[-1]) / N
        null = column_totals(signs_t * s[:, None]) / N
        gamma = 100 * np.finfo(np.float64).eps * abs(observed)
        extreme = int(np.count_nonzero(np.abs(null) >= abs(observed) - gamma))
        out.append({"statistic": observed, "extreme": extreme, "R": R, "p": (1 + extreme) / (1 + R)})
    return out


def randomization(data: RunData, settings: CalibrationSettings) -> list[dict]:
    """The sign-flip test of the run's θ̂, generator ``default_rng([seed, 4])``."""
    return sign_flip_test(data.sums, data.N, settings.R, generator(settings.seed, "randomization"))


# --------------------------------------------------------------------------- power --

def power_groups(n: int, G: int, N: int) -> int:
    """m = max(2, floor(n·G/N + 1/2)) groups for a confirmation of about n queries."""
    return max(2, (2 * n * G + N) // (2 * N))


def power_sample(data: RunData, settings: CalibrationSettings, n: int, s: int, workspace=None) -> dict:
    """Simulation s at grid size n: m groups with replacement, θ̂* and the percentile lower bound
    (replicates as in ``sample_intervals``: bit-equal to ``bootstrap.ratio_replicates``)."""
    ws = workspace if workspace is not None else Workspace()
    m, B = power_groups(n, data.G, data.N), settings.B_inner
    rng = generator(settings.seed, "power", n, s)
    groups = draw(rng, data.G, m)
    idx_t = ws.get("power_idx_t", (m, B), np.int64)
    np.copyto(idx_t, draw(rng, m, (B, m)).T)
    sizes = data.sizes[groups]
    den = drawn_totals(sizes.astype(np.float64), idx_t, ws.get("power_drawn", (m, B)))
    K = len(data.names)
    thetas = [ratio(data.sums[k, groups], sizes) for k in range(K)]
    reps = np.stack([drawn_totals(data.sums[k, groups], idx_t, ws.get("power_drawn", (m, B))) / den
                     for k in range(K)])
    lowers = np.percentile(reps, settings.percentiles[0], axis=1).tolist()  # row by row = 1-D calls
    return {"s": s, "queries": int(sizes.sum()), "theta": thetas, "lower": lowers}


def simulate_power(data: RunData, settings: CalibrationSettings, workers: int = 1) -> tuple[list[dict], dict]:
    """Power curve per grid size n (per comparison) and the first n_audit simulations per n."""
    K, curve, records = len(data.names), [], {}
    for n in settings.power_n:
        reach, positive, queries, recs = [0] * K, [0] * K, 0, []
        one = partial(power_sample, data, settings, n)
        for s, r in enumerate(ordered_map(one, range(settings.S_power), workers)):
            queries += r["queries"]
            for k in range(K):
                reach[k] += r["theta"][k] >= settings.threshold
                positive[k] += r["lower"][k] > 0
            if s < settings.n_audit:
                recs.append(r)
        curve.append({"n": n, "m_groups": power_groups(n, data.G, data.N),
                      "mean_queries": queries / settings.S_power, "reach": reach, "positive": positive})
        records[str(n)] = recs
    return curve, records


def power_summary(curve: list[dict], k: int, settings: CalibrationSettings) -> list[dict]:
    """Per grid size: P(θ̂* ≥ threshold), P(lower bound > 0), with Wilson intervals."""
    S, a = settings.S_power, settings.alpha
    return [{"n": c["n"], "m_groups": c["m_groups"], "mean_queries": c["mean_queries"],
             "p_mean_reaches_threshold": c["reach"][k] / S,
             "wilson_reaches": list(wilson_interval(c["reach"][k], S, a)),
             "p_lower_above_0": c["positive"][k] / S,
             "wilson_lower_above_0": list(wilson_interval(c["positive"][k], S, a))}
            for c in curve]


# ------------------------------------------------------------------------ top level --

def calibrate(deltas: Mapping[str, Sequence[float]], positions: Sequence[Sequence[int]], *,
              settings: CalibrationSettings, workers: int = 1) -> dict:
    """Coverage, type I error, sign-flip p-value and power of the run's data (a JSON-able dict).
    ``workers`` threads share the simulations; the result does not depend on it."""
    if not isinstance(settings, CalibrationSettings):
        raise ValueError("settings must be a CalibrationSettings")
    data = prepare(deltas, positions)
    cov, cov_records = simulate(data, settings, "coverage", workers)
    null, null_records = simulate(data, settings, "null", workers)
    rand = randomization(data, settings)
    curve, power_records = simulate_power(data, settings, workers)
    comparisons = {}
    for k, name in enumerate(data.names):
        theta = ratio(data.sums[k], data.sizes)
        comparisons[name] = {
            "theta_hat": theta, "se": sample_se(data.sums[k], data.sizes, theta),
            "coverage": coverage_summary(cov, k, settings.alpha),
            "type_i_error": type_i_summary(null, k, settings.alpha),
            "bootstrap_t_dropped_replicates": {"coverage": cov.dropped[k], "null": null.dropped[k]},
            "randomization": rand[k], "power": power_summary(curve, k, settings),
        }
    return {"settings": {**asdict(settings), "power_n": list(settings.power_n),
                         "percentiles": list(settings.percentiles),
                         "nominal_coverage": settings.nominal, "test_level": settings.alpha},
            "data": {"n_queries": data.N, "n_groups": data.G, "comparisons": list(data.names)},
            "methods": list(METHODS), "comparisons": comparisons,
            "audit": {"coverage": cov_records, "null": null_records, "power": power_records,
                      "note": "first n_audit simulations of each stream (power: of each grid size); "
                              "draw order and seeding in rerank_study.calibration's module docstring"}}
