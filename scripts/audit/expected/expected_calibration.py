"""What calibration.json must hold, recomputed from the run's per-query differences
(``expected.Expected.deltas``: the audit's own metrics), its evidence groups and the ANCHOR's calibration
settings, with the audit's own generator (``rng.DefaultRng`` with list seeds). Each outer simulation has its
own generator and its draws in the documented order (docs/outputs.md, "calibration.json"), so any one of them
is recomputed alone:

* coverage, sample s: ``DefaultRng([seed, 1, s])``; groups = integers(0, G, G); grouped index matrix
  integers(0, G, (B, G)); query index matrix integers(0, N_s, (B, N_s)), N_s the sample's queries (its groups
  in draw order, each group's members in order);
* paired null, simulation s: ``DefaultRng([seed, 2, s])``; e = integers(0, 2, G), sign 2e − 1 per group (all G
  groups in order); then integers(0, G, (B, G)) and integers(0, N, (B, N));
* power, size n, simulation s: ``DefaultRng([seed, 3, n, s])``; m = max(2, ⌊(2nG + N)/(2N)⌋) groups =
  integers(0, G, m); integers(0, m, (B, m));
* randomization: ``DefaultRng([seed, 4])``; integers(0, 2, (R, G)).

Streams are numbered from 1 (a trailing 0 of a list seed does not count). ``sample`` / ``null`` / ``power``
give one simulation's record; ``randomization`` the sign-flip test (all R flips, or the first ``limit`` //
G)."""

from __future__ import annotations

from expected.calib_stats import comparison_intervals, ratio
from expected.definitions import percentile
from expected.rng import DefaultRng

STREAMS = {"coverage": 1, "null": 2, "power": 3, "randomization": 4}
EPS = 2.0 ** -52  # float64 machine epsilon (the sign-flip test's tie tolerance is 100 eps |θ̂|)


class CalibrationData:
    """Group sums S_g (members in order, sequential), sizes n_g, per-query Δ and members, per comparison."""

    def __init__(self, names: list[str], deltas: dict[str, list[float]], members: list[list[int]]):
        self.names, self.members = list(names), members
        self.deltas = [deltas[n] for n in self.names]
        self.sums = []
        for d in self.deltas:
            row = []
            for m in members:
                total = 0.0
                for i in m:
                    total += d[i]
                row.append(total)
            self.sums.append(row)
        self.sizes = [len(m) for m in members]
        self.G, self.N = len(members), sum(self.sizes)

    def theta(self, k: int) -> float:
        return ratio(self.sums[k], self.sizes, range(self.G))


def _record(s: int, comps: list[dict], t_q: float) -> dict:
    return {"s": s, "t_quantile": t_q, "comparisons": comps}


def coverage_sample(data: CalibrationData, st: dict, s: int, t_q: float) -> dict:
    """Outer sample s of the coverage stream, every method of every comparison."""
    rng = DefaultRng([st["seed"], STREAMS["coverage"], s])
    B, G = st["B_inner"], data.G
    groups = rng.integers_flat(G, G)
    g_idx = rng.integers_matrix(G, B, G)
    queries = [i for g in groups for i in data.members[g]]
    q_idx = rng.integers_matrix(len(queries), B, len(queries))
    sizes = [data.sizes[g] for g in groups]
    comps = [comparison_intervals([data.sums[k][g] for g in groups], sizes,
                                  [data.deltas[k][i] for i in queries], g_idx, q_idx, st["percentiles"], t_q)
             for k in range(len(data.names))]
    return _record(s, comps, t_q)


def null_sample(data: CalibrationData, st: dict, s: int, t_q: float) -> dict:
    """Simulation s of the grouped paired null: each group's Δ multiplied by its sign."""
    rng = DefaultRng([st["seed"], STREAMS["null"], s])
    B, G, N = st["B_inner"], data.G, data.N
    signs = [2 * e - 1 for e in rng.integers_flat(2, G)]
    g_idx = rng.integers_matrix(G, B, G)
    q_idx = rng.integers_matrix(N, B, N)
    comps = []
    for k in range(len(data.names)):
        sums = [x * e for x, e in zip(data.sums[k], signs, strict=True)]
        flipped = [data.deltas[k][i] * e for m, e in zip(data.members, signs, strict=True) for i in m]
        comps.append(comparison_intervals(sums, data.sizes, flipped, g_idx, q_idx, st["percentiles"], t_q))
    return _record(s, comps, t_q)


def power_groups(n: int, G: int, N: int) -> int:
    return max(2, (2 * n * G + N) // (2 * N))


def power_sample(data: CalibrationData, st: dict, n: int, s: int) -> dict:
    """Simulation s at size n: θ̂* of m drawn groups, the percentile lower bound of its bootstrap, its
    queries."""
    rng = DefaultRng([st["seed"], STREAMS["power"], n, s])
    B, m = st["B_inner"], power_groups(n, data.G, data.N)
    groups = rng.integers_flat(data.G, m)
    idx = rng.integers_matrix(m, B, m)
    sizes = [data.sizes[g] for g in groups]
    thetas, lowers = [], []
    for k in range(len(data.names)):
        sums = [data.sums[k][g] for g in groups]
        thetas.append(ratio(sums, sizes, range(m)))
        reps = []
        for row in idx:
            num, den = 0.0, 0
            for j in row:
                num += sums[j]
                den += sizes[j]
            reps.append(num / den)
        lowers.append(percentile(reps, st["percentiles"][0]))
    return {"s": s, "queries": sum(sizes), "theta": thetas, "lower": lowers}


def randomization(data: CalibrationData, st: dict, limit: int) -> list[dict]:
    """The sign-flip test per comparison: T*_r = Σ_g ε_rg S_g / N (sequential); extreme = #{|T*| ≥ |θ̂| − γ},
    γ = 100 eps |θ̂|. All R flips when R·G ≤ limit, else the first limit // G (``flips`` says how many)."""
    R, G = st["R"], data.G
    flips = R if R * G <= limit else max(1, limit // G)
    e = DefaultRng([st["seed"], STREAMS["randomization"]]).integers_flat(2, flips * G)
    out = []
    for sums in data.sums:
        total = 0.0
        for x in sums:
            total += x
        observed = total / data.N
        bar = abs(observed) - 100 * EPS * abs(observed)
        extreme = 0
        for r in range(flips):
            t = 0.0
            for g in range(G):
                t += (2 * e[r * G + g] - 1) * sums[g]
            extreme += abs(t / data.N) >= bar
        out.append({"statistic": observed, "extreme": extreme, "R": R, "flips": flips,
                    "p": (1 + extreme) / (1 + R)})
    return out
