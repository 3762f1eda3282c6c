"""Evaluation statistics of an IR comparison, as pure functions.

* exact McNemar test for paired binary outcomes (two-sided, doubled binomial tail);
* Recall@K with |P| in the denominator and the separately named capped variant (see metrics);
  the chance level of a candidate pool (hypergeometric);
* declared slices and a stratified mean with declared weights;
* multiplicity adjustment for exploratory comparisons (Holm, Benjamini-Hochberg);
* power: the minimum detectable mean difference of a paired query design from a grouped
  (cluster) variance, and the two-proportion sample size of an A/B test.

Command line (``python -m rerank_study.evalstats --help``):
    mcnemar GAINED LOST
    sample-size --p 0.02 --lift 0.05 [--daily-traffic 1000000 --share 0.1] [--exact-z]
    mde --sd-eff 0.17 --n 300 [--alpha 0.05 --power 0.8]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from statistics import NormalDist

# --------------------------------------------------------------------------- McNemar --


def _count(name: str, value) -> int:
    if type(value) is not int or value < 0:  # noqa: E721 - bool is not a count either
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return value


def exact_mcnemar(gained: int, lost: int) -> float:
    """Two-sided exact McNemar p-value: 2 * P(X <= min(gained, lost)), X ~ Bin(gained + lost, 1/2),
    capped at 1. Only the discordant pairs matter; 0 discordant pairs give p = 1.

    Computed by the field's reference, ``scipy.stats.binomtest(min, n, 0.5)`` (two-sided; for p = 1/2
    the binomial is symmetric, so its two-sided p is exactly the doubled tail); the audit computes the
    doubled tail in exact integers and accepts a difference of a few ulp (scipy's floating-point sum)."""
    from scipy.stats import binomtest

    gained, lost = _count("gained", gained), _count("lost", lost)
    n = gained + lost
    if n == 0:
        return 1.0
    return float(binomtest(min(gained, lost), n, 0.5, alternative="two-sided").pvalue)  # scipy caps it at 1


def paired_binary_counts(a: Sequence[bool], b: Sequence[bool]) -> dict[str, int]:
    """Counts of a vs b on the same queries: gained (a yes, b no), lost (a no, b yes), unchanged."""
    if len(a) != len(b):
        raise ValueError("paired outcomes must have the same length")
    gained = sum(1 for x, y in zip(a, b) if x and not y)
    lost = sum(1 for x, y in zip(a, b) if y and not x)
    return {"gained": gained, "lost": lost, "unchanged": len(a) - gained - lost,
            "both_yes": sum(1 for x, y in zip(a, b) if x and y),
            "both_no": sum(1 for x, y in zip(a, b) if not x and not y)}


def sign_test(deltas: Sequence[float]) -> dict:
    """Exact sign test of paired differences (= exact McNemar on wins vs losses; ties dropped)."""
    wins = sum(1 for d in deltas if d > 0)
    losses = sum(1 for d in deltas if d < 0)
    return {"wins": wins, "losses": losses, "ties": len(deltas) - wins - losses,
            "p": exact_mcnemar(wins, losses)}


# ---------------------------------------------------------------------- chance level --

def chance_hit_at_k(n_candidates: int, n_relevant: int, k: int) -> float:
    """P(a uniformly random ordering of the candidates puts >= 1 relevant one in the top k)
    = 1 - C(N - m, k) / C(N, k) (hypergeometric). With m = 1 and N = n + 1 this is
    min(k, n + 1) / (n + 1), the primer's formula."""
    for name, v in (("n_candidates", n_candidates), ("n_relevant", n_relevant), ("k", k)):
        _count(name, v)
    if n_relevant > n_candidates:
        raise ValueError(f"n_relevant {n_relevant} > n_candidates {n_candidates}")
    if n_relevant == 0:
        return 0.0
    k = min(k, n_candidates)
    return float(1 - Fraction(math.comb(n_candidates - n_relevant, k), math.comb(n_candidates, k)))


def chance_recall_at_k(n_candidates: int, n_relevant_in_pool: int, n_relevant_total: int, k: int) -> float:
    """Expected Recall@K (|P| denominator) of a random ordering: min(k, N)/N * m/|P|."""
    if n_relevant_total <= 0:
        raise ValueError("a query needs at least one judged relevant document")
    return min(k, n_candidates) / n_candidates * n_relevant_in_pool / n_relevant_total


# --------------------------------------------------------------------------- slices --
SLICE_RULES = {
    # slice family -> {slice name: predicate on (n_relevant, n_relevant_in_candidates)}
    "relevant_count": {
        "one": lambda n, c: n == 1,
        "several": lambda n, c: n >= 2,
    },
    "candidate_coverage": {
        "all": lambda n, c: c == n,
        "partly": lambda n, c: 0 < c < n,
        "none": lambda n, c: c == 0,
    },
}


def validate_slices(declared: Mapping[str, Mapping[str, float]]) -> None:
    """Declared families and slice names must be known and complete; weights non-negative, sum 1."""
    for family, weights in declared.items():
        if family not in SLICE_RULES:
            raise ValueError(f"undeclared slice family {family!r}; known: {sorted(SLICE_RULES)}")
        unknown = sorted(set(weights) - set(SLICE_RULES[family]))
        if unknown:
            raise ValueError(f"slice family {family!r}: undeclared slice name(s) {unknown}; "
                             f"known: {sorted(SLICE_RULES[family])}")
        missing = sorted(set(SLICE_RULES[family]) - set(weights))
        if missing:
            raise ValueError(f"slice family {family!r}: no weight declared for {missing}")
        for name, w in weights.items():
            if not isinstance(w, (int, float)) or isinstance(w, bool) or w < 0 or not math.isfinite(w):
                raise ValueError(f"slice weight {family}.{name} must be a non-negative number, got {w!r}")
        total = math.fsum(weights.values())
        if abs(total - 1.0) > 1e-9:
            raise ValueError(f"slice weights of {family!r} sum to {total!r}, not 1")


def assign_slice(family: str, n_relevant: int, n_in_candidates: int) -> str:
    hits = [name for name, rule in SLICE_RULES[family].items() if rule(n_relevant, n_in_candidates)]
    if len(hits) != 1:
        raise ValueError(f"slice family {family!r}: ({n_relevant}, {n_in_candidates}) matches {hits}")
    return hits[0]


def stratified_mean(stratum_means: Mapping[str, float | None], weights: Mapping[str, float]) -> float | None:
    """sum_g w_g m_g; None when a stratum with positive weight has no data (undefined, not 0)."""
    if set(stratum_means) != set(weights):
        raise ValueError(f"strata {sorted(stratum_means)} differ from weights {sorted(weights)}")
    total = 0.0
    for g in sorted(weights):
        if weights[g] == 0:
            continue
        if stratum_means[g] is None:
            return None
        total += weights[g] * stratum_means[g]
    return total


# ---------------------------------------------------------------------- multiplicity --

def _multipletests(pvalues: Sequence[float], method: str) -> list[float]:
    """statsmodels' adjusted p-values (the field's reference implementation), in the input order."""
    if not pvalues:
        return []
    from statsmodels.stats.multitest import multipletests

    return [float(x) for x in multipletests(list(pvalues), method=method)[1]]


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values (monotone, capped at 1), in the input order
    (statsmodels ``multipletests(method="holm")``; its default would be Holm-Sidak)."""
    return _multipletests(pvalues, "holm")


def benjamini_hochberg(pvalues: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg step-up adjusted p-values (q-values), in the input order
    (statsmodels ``multipletests(method="fdr_bh")``)."""
    return _multipletests(pvalues, "fdr_bh")


# ----------------------------------------------------------------------------- power --

def z_quantiles(alpha: float, power: float, exact: bool = True,
                two_sided: bool = True) -> tuple[float, float]:
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha and power must lie in (0, 1), got {alpha}, {power}")
    if not exact:
        table = {(0.05, True): 1.96, (0.05, False): 1.645}
        if (alpha, two_sided) not in table or power != 0.8:
            raise ValueError("rounded z values exist only for alpha 0.05 and power 0.8 (1.96 / 0.84)")
        return table[(alpha, two_sided)], 0.84
    nd = NormalDist()
    return nd.inv_cdf(1 - alpha / 2 if two_sided else 1 - alpha), nd.inv_cdf(power)


def grouped_variance(sums: Sequence[float], sizes: Sequence[int], mean: float, n: int) -> float:
    """Cluster-robust (linearised) variance of the query-weighted mean Δ̄ over G groups, from each group's
    summed Δ S_g and size n_g: Var(Δ̄) = G/(G-1) * Σ_g (S_g - n_g Δ̄)^2 / n^2 (the one home of this formula:
    the power section and the synthesis across datasets both call it)."""
    G = len(sums)
    if G < 2:
        raise ValueError("the grouped variance needs at least two groups")
    resid = [s - m * mean for s, m in zip(sums, sizes)]
    return G / (G - 1) * math.fsum(r * r for r in resid) / n ** 2


def grouped_variance_of_mean(deltas: Sequence[float], groups: Sequence[Sequence[int]]) -> float:
    """``grouped_variance`` of Δ̄ = ΣΔ/n, each S_g summed exactly (``math.fsum``) from the per-query Δ."""
    if len(groups) < 2:
        raise ValueError("the grouped variance needs at least two groups")
    sums = [math.fsum(deltas[i] for i in g) for g in groups]
    return grouped_variance(sums, [len(g) for g in groups], math.fsum(deltas) / len(deltas), len(deltas))


def minimum_detectable_effect(sd_eff: float, n: int, alpha: float = 0.05, power: float = 0.8,
                              exact: bool = True) -> float:
    """MDE of a mean paired difference over n queries: (z_{1-α/2} + z_{power}) * sd_eff / sqrt(n),
    where sd_eff^2 = n_dev * Var(Δ̄_dev) is the per-query variance implied by the development
    set's grouped variance (so clustering is carried over at the development set's rate)."""
    if n < 1 or sd_eff < 0:
        raise ValueError(f"need n >= 1 and sd_eff >= 0, got {n}, {sd_eff}")
    za, zb = z_quantiles(alpha, power, exact)
    return (za + zb) * sd_eff / math.sqrt(n)


POWER_FORMULA = ("MDE = (z_{1-alpha/2} + z_{power}) * sd_eff / sqrt(n_conf); sd_eff^2 = n_dev * Var(mean Δ), "
                 "Var(mean Δ) = G/(G-1) * sum_g (S_g - n_g * mean Δ)^2 / n_dev^2 (grouped, linearised)")


def power_block(deltas: Sequence[float], groups: Sequence[Sequence[int]], power_cfg: Mapping) -> dict | None:
    """The minimum detectable primary Δ of the confirmation set from the development groups' variance (the
    analysis reports it; freezing recomputes it from the run's files with this same function). None when there
    are fewer than two groups (no grouped variance)."""
    if len(groups) < 2:
        return None
    n = len(deltas)
    var = grouped_variance_of_mean(deltas, groups)
    sd_eff = math.sqrt(n * var)
    return {"alpha": power_cfg["alpha"], "power": power_cfg["power"], "n_development": n,
            "n_confirmation": power_cfg["confirm_n"], "grouped_variance_of_mean": var, "sd_eff": sd_eff,
            "mde_confirmation": minimum_detectable_effect(sd_eff, power_cfg["confirm_n"], power_cfg["alpha"],
                                                          power_cfg["power"]),
            "formula": POWER_FORMULA}


def two_proportion_sample_size(p: float, relative_lift: float, alpha: float = 0.05, power: float = 0.8,
                               exact_z: bool = False) -> dict:
    """Two-proportion sample size: n per group = 2 (z_α + z_β)^2 p(1-p) / δ^2 with δ = p * relative_lift.

    With the primer's rounded z (1.96, 0.84) the arithmetic is done in exact fractions of the
    decimal inputs, so the table values come out as whole numbers without float noise."""
    if not 0 < p < 1:
        raise ValueError(f"proportion p must lie in (0, 1), got {p!r}")
    if not relative_lift > 0:
        raise ValueError(f"relative lift must be > 0, got {relative_lift!r}")
    za, zb = z_quantiles(alpha, power, exact=exact_z)
    if exact_z:
        delta = p * relative_lift
        n = 2 * (za + zb) ** 2 * p * (1 - p) / delta ** 2
        n_exact = None
    else:
        P, L, ZA, ZB = (Fraction(str(x)) for x in (p, relative_lift, za, zb))
        n_exact = 2 * (ZA + ZB) ** 2 * P * (1 - P) / (P * L) ** 2
        n = float(n_exact)
    per_group = math.ceil(n_exact) if n_exact is not None else math.ceil(n - 1e-9)
    return {"p": p, "relative_lift": relative_lift, "absolute_delta": p * relative_lift, "z_alpha": za,
            "z_beta": zb, "n_per_group": n, "n_per_group_ceil": per_group}


def days_needed(n_per_group: float, daily_traffic: float, share: float = 1.0, groups: int = 2) -> float:
    """Days to collect ``groups`` x n users when a ``share`` of the daily traffic enters the test."""
    if daily_traffic <= 0 or not 0 < share <= 1:
        raise ValueError(f"daily traffic must be > 0 and share in (0, 1], got {daily_traffic}, {share}")
    return groups * n_per_group / (daily_traffic * share)


# ------------------------------------------------------------------------------- CLI --

def main(argv=None) -> int:
    import argparse
    import json

    ap = argparse.ArgumentParser(prog="python -m rerank_study.evalstats", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("mcnemar", help="exact McNemar p-value from gained / lost counts")
    m.add_argument("gained", type=int)
    m.add_argument("lost", type=int)
    s = sub.add_parser("sample-size", help="two-proportion sample size per group")
    s.add_argument("--p", type=float, required=True, help="baseline proportion, e.g. 0.02")
    s.add_argument("--lift", type=float, nargs="+", required=True, help="relative lift(s), e.g. 0.01 0.05")
    s.add_argument("--alpha", type=float, default=0.05)
    s.add_argument("--power", type=float, default=0.8)
    s.add_argument("--exact-z", action="store_true", help="exact normal quantiles instead of 1.96 / 0.84")
    s.add_argument("--daily-traffic", type=float, default=None)
    s.add_argument("--share", type=float, default=1.0)
    d = sub.add_parser("mde", help="minimum detectable mean difference of a paired n-query set")
    d.add_argument("--sd-eff", type=float, required=True, help="per-query SD implied by the grouped variance")
    d.add_argument("--n", type=int, required=True)
    d.add_argument("--alpha", type=float, default=0.05)
    d.add_argument("--power", type=float, default=0.8)
    args = ap.parse_args(argv)
    try:
        if args.cmd == "mcnemar":
            p = exact_mcnemar(args.gained, args.lost)
            print(json.dumps({"gained": args.gained, "lost": args.lost, "p": p}))
        elif args.cmd == "sample-size":
            for lift in args.lift:
                r = two_proportion_sample_size(args.p, lift, args.alpha, args.power, args.exact_z)
                if args.daily_traffic:
                    r["days"] = days_needed(r["n_per_group"], args.daily_traffic, args.share)
                print(json.dumps(r))
        else:
            print(json.dumps({"mde": minimum_detectable_effect(args.sd_eff, args.n, args.alpha, args.power),
                              "n": args.n, "alpha": args.alpha, "power": args.power}))
    except ValueError as exc:
        ap.error(str(exc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
