"""Calibration of the grouped bootstrap interval on the run's own data (DESIGN.md section 10).

How far can the preregistered 95 % grouped percentile interval be trusted on THESE data? The
data of one run: per-query paired differences Δ_q of K comparisons (same queries) and a
partition of the queries into G evidence groups. Group g has the sum S_g = Σ_{q∈g} Δ_q (left to
right, ``bootstrap.group_sums``) and the size n_g. The estimator is always the query-weighted
ratio θ = Σ S_g / Σ n_g over the (drawn) groups, never a mean of group means.

The interval methods computed on every sample (``percentile``, the preregistered one; ``bca``;
``bootstrap_t``; ``cluster_t``; ``query_percentile``), their formulas and their arithmetic are in
``calibration_intervals``; the settings and the validated data in ``calibration_inputs``. This module
draws the samples, tallies the intervals and reports.

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

Arithmetic: sums are sequential, left to right, everywhere (as in ``calibration_intervals``;
here T*, with ``column_totals``); one outer sample at a time.

Output of ``calibrate`` (JSON-able; undefined values are None, never NaN): the settings; per
comparison θ̂ and se, per method coverage (+ Wilson, covered, undefined, mean width over the
defined intervals) and type I error (+ Wilson, rejections, undefined), the dropped bootstrap-t
replicates, the sign-flip test, the power curve; and ``simulations``: EVERY simulation's outcome,
column-wise (per stream, comparison and method the lower and upper endpoints of all S samples and
the dropped bootstrap-t replicates; per power size the query count and per comparison θ̂* and
the lower bound of all S_power simulations) and the t quantile, so that every tally is a recount
of these columns and any one simulation can be recomputed alone and compared (the audit
recomputes a sample of ``n_audit`` per stream, drawn at audit time; the library does not use
n_audit).

Cost: one outer sample at a time (scratch buffers reused: a few (G, B) arrays, < 50 MB at
B = 2000, n = 600); ``workers`` threads may share the simulations (the result does not depend on it).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from functools import partial
from statistics import NormalDist

import numpy as np

from .calibration_inputs import CalibrationSettings, RunData, prepare
from .calibration_intervals import Workspace, column_totals, drawn_totals, ratio, sample_intervals, sample_se

METHODS = ("percentile", "bca", "bootstrap_t", "cluster_t", "query_percentile")
STREAMS = {"coverage": 1, "null": 2, "power": 3, "randomization": 4}  # never 0: see the docstring
_ND = NormalDist()
AUDIT_NOTE = ("every simulation's outcome, column-wise (index = simulation s); draw order and seeding in "
              "rerank_study.calibration's module docstring")


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


class Columns:
    """Every simulation's outcome of one stream, column-wise: per comparison the endpoints of each
    method (None when undefined) and the dropped bootstrap-t replicates, in simulation order."""

    def __init__(self, names: Sequence[str]):
        self.names, self.t_quantile = list(names), None
        self.cols = {n: {"intervals": {m: {"lower": [], "upper": []} for m in METHODS},
                         "bootstrap_t_dropped": []} for n in self.names}

    def add(self, result: dict) -> None:
        if self.t_quantile is None:
            self.t_quantile = result["t_quantile"]
        for name, comp in zip(self.names, result["comparisons"]):
            col = self.cols[name]
            col["bootstrap_t_dropped"].append(comp["bootstrap_t_dropped"])
            for m, iv in comp["intervals"].items():
                col["intervals"][m]["lower"].append(None if iv is None else iv[0])
                col["intervals"][m]["upper"].append(None if iv is None else iv[1])


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


def simulate(data: RunData, settings: CalibrationSettings, stream: str,
             workers: int = 1) -> tuple[Tally, Columns]:
    """Run the coverage or null stream: S simulations, tallied, and every outcome recorded."""
    one = {"coverage": coverage_sample, "null": null_sample}[stream]
    targets = [ratio(data.sums[k], data.sizes) for k in range(len(data.names))] if stream == "coverage" \
        else [0.0] * len(data.names)
    tally, columns = Tally(len(data.names)), Columns(data.names)
    for result in ordered_map(partial(one, data, settings), range(settings.S), workers):
        tally.add(result, targets)
        columns.add(result)
    return tally, columns


def coverage_summary(tally: Tally, k: int, alpha: float) -> dict:
    """Coverage share of all simulations, its Wilson interval, mean width of the defined intervals."""
    out = {}
    for m, c in tally.counts[k].items():
        defined = tally.n - c["undefined"]
        out[m] = {"coverage": c["contains"] / tally.n,
                  "wilson": list(wilson_interval(c["contains"], tally.n, alpha)), "covered": c["contains"],
                  "undefined": c["undefined"], "mean_width": c["width"] / defined if defined else None}
    return out


def type_i_summary(tally: Tally, k: int, alpha: float) -> dict:
    """Share of all null simulations whose interval excludes 0, and its Wilson interval."""
    return {m: {"rate": c["excludes_0"] / tally.n,
                "wilson": list(wilson_interval(c["excludes_0"], tally.n, alpha)),
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
    """Power curve per grid size n (per comparison) and every simulation's outcome per n, column-wise."""
    K, curve, records = len(data.names), [], {}
    for n in settings.power_n:
        reach, positive, queries = [0] * K, [0] * K, 0
        col = {"queries": [], "comparisons": {name: {"theta": [], "lower": []} for name in data.names}}
        one = partial(power_sample, data, settings, n)
        for r in ordered_map(one, range(settings.S_power), workers):
            queries += r["queries"]
            col["queries"].append(r["queries"])
            for k, name in enumerate(data.names):
                reach[k] += r["theta"][k] >= settings.threshold
                positive[k] += r["lower"][k] > 0
                col["comparisons"][name]["theta"].append(r["theta"][k])
                col["comparisons"][name]["lower"].append(r["lower"][k])
        curve.append({"n": n, "m_groups": power_groups(n, data.G, data.N),
                      "mean_queries": queries / settings.S_power, "reach": reach, "positive": positive})
        records[str(n)] = col
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

def settings_record(settings: CalibrationSettings) -> dict:
    """The settings as the output records them (JSON-able)."""
    return {**asdict(settings), "power_n": list(settings.power_n), "percentiles": list(settings.percentiles),
            "nominal_coverage": settings.nominal, "test_level": settings.alpha}


def calibrate(deltas: Mapping[str, Sequence[float]], positions: Sequence[Sequence[int]], *,
              settings: CalibrationSettings, workers: int = 1) -> dict:
    """Coverage, type I error, sign-flip p-value and power of the run's data (a JSON-able dict).
    ``workers`` threads share the simulations; the result does not depend on it."""
    if not isinstance(settings, CalibrationSettings):
        raise ValueError("settings must be a CalibrationSettings")
    data = prepare(deltas, positions)
    cov, cov_columns = simulate(data, settings, "coverage", workers)
    null, null_columns = simulate(data, settings, "null", workers)
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
    return {"settings": settings_record(settings),
            "data": {"n_queries": data.N, "n_groups": data.G, "comparisons": list(data.names)},
            "methods": list(METHODS), "comparisons": comparisons,
            "simulations": {"coverage": cov_columns.cols, "null": null_columns.cols, "power": power_records,
                            "t_quantile": cov_columns.t_quantile, "note": AUDIT_NOTE}}
