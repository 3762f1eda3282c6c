"""The inputs of a calibration (``calibration``): its settings and the run's validated data.

``CalibrationSettings`` holds the seed, the simulation sizes and the levels (checked when made);
``prepare`` validates the per-query paired differences Δ_q of K comparisons (the same N queries,
finite) and the partition of the queries into G ≥ 2 evidence groups (``check_partition``), and
returns them as ``RunData``: group sums S_g = Σ_{q∈g} Δ_q (left to right, ``bootstrap.group_sums``),
group sizes n_g, the Δ matrix and each group's members.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..stats import bootstrap as bs


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
            raise ValueError("calibration setting seed must be < 2**32 (one SeedSequence word), "
                             f"got {self.seed}")
        for name, low in (("seed", 0), ("S", 1), ("B_inner", 2), ("R", 1), ("S_power", 1), ("n_audit", 0)):
            whole(name, getattr(self, name), low)
        object.__setattr__(self, "power_n", tuple(self.power_n))
        for n in self.power_n:
            whole("power_n entry", n, 1)
        lo, hi = (float(x) for x in self.percentiles)
        if not (0 < lo < 50 < hi < 100 and lo + hi == 100):
            raise ValueError("percentiles must be symmetric (lo, 100 - lo) with 0 < lo < 50, got "
                             f"{self.percentiles!r}")
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
