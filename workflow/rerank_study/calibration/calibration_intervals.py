"""The calibration's interval methods on ONE sample of groups, and the replicate arithmetic behind them.

A sample is G_s evidence groups (the outer draw of a ``calibration`` simulation) with group sums S_g
(left to right, ``bootstrap.group_sums``) and sizes n_g; the estimator is always the query-weighted
ratio θ = Σ S_g / Σ n_g over the (drawn) groups (``ratio``), never a mean of group means.

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

Arithmetic (so that an independent implementation reproduces every bit): sums are sequential,
left to right, everywhere (θ, se, jackknife, U sums); the replicates are computed in a
(G, B) layout whose axis-0 reduction numpy performs element by element (``column_totals``),
which equals ``bootstrap.ratio_replicates``'s ``cumsum`` bit for bit at a fifth of the cost
(tested); the vectorised code equals the plain-Python loop reference ``naive_sample_intervals``
bit for bit (tested). Percentiles are ``numpy.percentile`` (linear), several in one call.
Scratch buffers (``Workspace``) are reused between samples and always overwritten before use.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

import numpy as np

from ..stats import bootstrap as bs

DEGENERATE_SE = 1e-10  # relative to the sample's largest |group mean|
_ND = NormalDist()


# ------------------------------------------------------- the estimator and the replicates --

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
