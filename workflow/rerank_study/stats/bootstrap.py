"""Paired bootstrap of per-query differences, grouped by evidence groups, and its diagnostics.

Estimator (query-weighted ratio; the denominator varies with the draw):

    replicate_b = sum_{g in S_b} sum_{q in g} Δ_q  /  sum_{g in S_b} |g|

where S_b is the list of G groups drawn with replacement in replicate b (a group drawn twice
counts twice). It is NOT the mean of group means. The query-level bootstrap is the same
estimator with every query its own group.

Floating-point order (so an independent implementation can reproduce every bit): the group
sum S_g adds the members' Δ_q left to right in group order; a replicate adds S_{g} left to
right in draw order (``numpy.cumsum`` is strictly sequential); the denominator is an integer;
one division. Means are sequential sums divided by the count. Percentiles are numpy's default
'linear' rule (``numpy.percentile``).

Draws: ``rng = numpy.random.default_rng(seed)``; the grouped index matrix is
``rng.integers(0, G, size=(B, G))`` and then, from the same generator, the query-level matrix
``rng.integers(0, n, size=(B, n))``. One grouped matrix is shared by every comparison.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def seq_sum(values) -> float:
    total = 0.0
    for v in values:
        total += v
    return total


def seq_mean(values) -> float:
    values = list(values)
    if not values:
        raise ValueError("mean of an empty list")
    return seq_sum(values) / len(values)


def group_positions(qids: Sequence[str], groups: Sequence[Sequence[str]]) -> list[list[int]]:
    pos = {q: i for i, q in enumerate(qids)}
    flat = [q for g in groups for q in g]
    # duplicate analysed ids and group members outside them are refused before sorting by position
    # (a member without a position cannot be sorted; a duplicate id would share one position)
    if (len(pos) != len(qids) or any(q not in pos for q in flat)
            or sorted(flat, key=pos.get) != list(qids) or len(flat) != len(qids)):
        raise ValueError("groups must partition the analysed queries exactly")
    return [[pos[q] for q in g] for g in groups]


def draw_indices(seed: int, n_groups: int, n_queries: int, B: int) -> tuple[np.ndarray, np.ndarray]:
    """(grouped B×G, query-level B×n) index matrices from one seeded generator."""
    if B < 1 or n_groups < 1 or n_queries < 1:
        raise ValueError(f"need B, G, n >= 1 (got {B}, {n_groups}, {n_queries})")
    rng = np.random.default_rng(seed)
    grouped = rng.integers(0, n_groups, size=(B, n_groups), dtype=np.int64)
    query = rng.integers(0, n_queries, size=(B, n_queries), dtype=np.int64)
    return grouped, query


def group_sums(deltas: Sequence[float], positions: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    sums = np.array([seq_sum(deltas[i] for i in g) for g in positions], dtype=np.float64)
    sizes = np.array([len(g) for g in positions], dtype=np.int64)
    return sums, sizes


def ratio_replicates(unit_sums: np.ndarray, unit_sizes: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Vectorised replicates: sequential sum of drawn unit sums / total drawn size."""
    num = np.cumsum(unit_sums[idx], axis=1)[:, -1]
    den = unit_sizes[idx].sum(axis=1)
    return num / den


def grouped_replicates(deltas: Sequence[float], positions, idx: np.ndarray) -> np.ndarray:
    sums, sizes = group_sums(deltas, positions)
    return ratio_replicates(sums, sizes, idx)


def query_replicates(deltas: Sequence[float], idx: np.ndarray) -> np.ndarray:
    d = np.asarray(deltas, dtype=np.float64)
    return ratio_replicates(d, np.ones(len(d), dtype=np.int64), idx)


def replicate_slow(deltas: Sequence[float], positions, draw: Sequence[int]) -> float:
    """One replicate by plain loops (the reference for the vectorised version)."""
    num, den = 0.0, 0
    for g in draw:
        s = 0.0
        for i in positions[g]:
            s += deltas[i]
        num += s
        den += len(positions[g])
    return num / den


def mean_of_group_means(deltas: Sequence[float], positions, draw: Sequence[int]) -> float:
    """The WRONG estimator (kept only to prove in tests that the product does not use it)."""
    means = [seq_sum(deltas[i] for i in positions[g]) / len(positions[g]) for g in draw]
    return seq_sum(means) / len(means)


def percentile_linear(values, p: float) -> float:
    """``numpy.percentile(values, p)`` with its default 'linear' method (Hyndman & Fan type 7), the
    field's reference; the audit re-implements numpy's arithmetic and must agree to the last bit."""
    xs = np.asarray(list(values), dtype=np.float64)
    if xs.size == 0:
        raise ValueError("percentile of an empty list")
    if not 0 <= p <= 100:
        raise ValueError(f"percentile {p} outside [0, 100]")
    return float(np.percentile(xs, p))


def wins_ties_losses(deltas: Sequence[float]) -> tuple[int, int, int]:
    return (sum(1 for d in deltas if d > 0), sum(1 for d in deltas if d == 0),
            sum(1 for d in deltas if d < 0))


def leave_one_group_out(deltas: Sequence[float], positions) -> list[float]:
    """Mean Δ with each group removed in turn (sequential sum over remaining queries, query order).
    An influence diagnostic, NOT an interval."""
    n = len(deltas)
    out = []
    for g in positions:
        drop = set(g)
        if len(drop) == n:
            raise ValueError("leave-one-group-out needs at least two groups")
        out.append(seq_sum(deltas[i] for i in range(n) if i not in drop) / (n - len(drop)))
    return out


@dataclass(frozen=True)
class Interval:
    lower: float
    upper: float

    def covers(self, x: float) -> bool:
        return self.lower <= x <= self.upper


def interval(replicates, percentiles=(2.5, 97.5)) -> Interval:
    return Interval(percentile_linear(replicates, percentiles[0]),
                    percentile_linear(replicates, percentiles[1]))
