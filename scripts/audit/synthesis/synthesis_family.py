"""The declared family of tests of a synthesis (synthesis.json ``family``), recomputed by the audit's own code
from its written definition (docs/across-datasets.md, "The declared family of tests"): every comparison all
studies declare, in every dataset, gets the two-sided grouped sign-flip randomization p-value of mean Δ = 0,
p = (1 + #{b: |Σ_g s_bg S_g| ≥ |Σ_g S_g| - 1e-10 Σ_g |S_g|}) / (B + 1), with s_bg = 2·integers(0, 2) - 1
drawn by ``default_rng([seed, 1])`` (the audit's ``rng.DefaultRng``) row matrix by row matrix: the declared
comparisons in their order, then the others in the studies' order, datasets in the invocation's order. Holm
and Benjamini–Hochberg (``definitions.holm``, ``definitions.benjamini_hochberg``) over the family's rows only;
exploratory rows have none."""

from __future__ import annotations

from expected.definitions import benjamini_hochberg, holm, seq_sum
from expected.rng import DefaultRng

V = None
SCHEMA = {"declared": V, "m": V, "B": V, "seed": V, "test": V, "adjustment": V,
          "rows": [{k: V for k in ("dataset", "comparison", "role", "n_queries", "n_groups", "mean", "p",
                                   "p_holm", "p_bh")}]}
PROSE = ("test", "adjustment")  # the rules as text: read for their form only


def sign_flip_p(sums: list[float], signs: list[list[int]]) -> float:
    observed = abs(seq_sum(sums))
    tol = 1e-10 * seq_sum(abs(s) for s in sums)
    extreme = sum(1 for row in signs if abs(seq_sum(s * x for s, x in zip(row, sums))) >= observed - tol)
    return (1 + extreme) / (len(signs) + 1)


def shared(studies_comparisons: list[list[str]]) -> list[str]:
    return [c for c in studies_comparisons[0] if all(c in other for other in studies_comparisons[1:])]


def rows(by_comparison: dict, names: list[str], anchor: dict) -> list[dict]:
    """``by_comparison``: comparison -> each dataset's (sums, sizes), datasets in order."""
    family = list(anchor["family"])
    rng, out = DefaultRng([anchor["seed"], 1]), []
    for c in family + [c for c in by_comparison if c not in family]:
        for name, (sums, sizes) in zip(names, by_comparison[c]):
            signs = [[2 * x - 1 for x in row] for row in rng.integers_matrix(2, anchor["B"], len(sums))]
            out.append({"dataset": name, "comparison": c, "role": "family" if c in family else "exploratory",
                        "n_queries": sum(sizes), "n_groups": len(sums), "mean": seq_sum(sums) / sum(sizes),
                        "p": sign_flip_p(sums, signs), "p_holm": None, "p_bh": None})
    return out


def family_block(by_comparison: dict, names: list[str], anchor: dict) -> dict:
    out = rows(by_comparison, names, anchor)
    members = [r for r in out if r["role"] == "family"]
    ps = [r["p"] for r in members]
    for r, h, q in zip(members, holm(ps), benjamini_hochberg(ps)):
        r["p_holm"], r["p_bh"] = h, q
    return {"declared": list(anchor["family"]), "m": len(members), "B": anchor["B"],
            "seed": [anchor["seed"], 1], "rows": out}
