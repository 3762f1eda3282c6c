"""The report's section "How far to trust these intervals here" and its power-curve figure, from
calibration.json (rule calibrate). The preregistered percentile interval decides; this section is reported
beside it."""

from __future__ import annotations

from collections.abc import Mapping

from ..core.names import STANDIN_LABEL
from .report import f6

HEADING = "## How far to trust these intervals here"
METHOD_LABELS = {"percentile": "percentile (preregistered)", "bca": "BCa", "bootstrap_t": "bootstrap-t",
                 "cluster_t": "cluster-t", "query_percentile": "query-level percentile"}


def pct(x) -> str:
    return "NA" if x is None else f"{100 * x:.1f} %"


def mc_interval(iv) -> str:
    return f"[{100 * iv[0]:.1f}, {100 * iv[1]:.1f}]"


def verdict(share: float, wilson, nominal: float) -> str:
    """Where the coverage lies against nominal, beyond Monte-Carlo error or not."""
    if wilson[1] < nominal:
        return "too narrow here"
    if wilson[0] > nominal:
        return "wider than needed here"
    return "as nominal here, within Monte-Carlo error"


def intro(cal: Mapping) -> str:
    st = cal["settings"]
    return (f"Calibration on this run's own data (rule calibrate, calibration.json; seed {st['seed']}, "
            f"S = {st['S']} outer simulations per stream, B_inner = {st['B_inner']} replicates inside each, "
            f"R = {st['R']} sign flips, S_power = {st['S_power']} simulations per power size): coverage "
            "under the empirical population (the evidence groups resampled with replacement; truth = the "
            "observed mean Δ), type I error under the grouped paired null (each group's Δ sign-flipped "
            "together). Monte-Carlo intervals: Wilson 95 %. The preregistered percentile interval decides; "
            "this is reported beside it.")


def method_table(cal: Mapping, comp: Mapping) -> list[str]:
    st = cal["settings"]
    nominal, level = f"{100 * st['nominal_coverage']:g}", f"{100 * st['test_level']:g}"
    out = [f"| method ({cal['primary']}) | coverage at nominal {nominal} % [MC interval] | type I error at "
           f"nominal {level} % [MC interval] | mean width | undefined (coverage / null) |",
           "|---|---|---|---|---|"]
    for m in cal["methods"]:
        c, t = comp["coverage"][m], comp["type_i_error"][m]
        out.append(f"| {METHOD_LABELS.get(m, m)} | {pct(c['coverage'])} {mc_interval(c['wilson'])} | "
                   f"{pct(t['rate'])} {mc_interval(t['wilson'])} | {f6(c['mean_width'])} | "
                   f"{c['undefined']} / {t['undefined']} |")
    return out


def reading(cal: Mapping, comp: Mapping) -> str:
    """One line: the preregistered interval's coverage, what it means here, and the others' coverage."""
    c = comp["coverage"]["percentile"]
    others = ", ".join(f"{METHOD_LABELS.get(m, m)} {pct(comp['coverage'][m]['coverage'])}"
                       for m in cal["methods"] if m != "percentile")
    return (f"Reading: the percentile interval covers {pct(c['coverage'])} {mc_interval(c['wilson'])}: "
            f"{verdict(c['coverage'], c['wilson'], cal['settings']['nominal_coverage'])}; {others}.")


def randomization_line(cal: Mapping) -> str:
    st = cal["settings"]
    tests = "; ".join(f"{name} p = {c['randomization']['p']:.4g}" for name, c in cal["comparisons"].items())
    return (f"Grouped sign-flip randomization test of the mean Δ (two-sided, R = {st['R']}, "
            f"p = (1 + extreme) / (1 + R)): {tests}.")


def power_line(cal: Mapping, comp: Mapping) -> str:
    n = cal["confirmation_n"]
    point = next(p for p in comp["power"] if p["n"] == n)
    thr = cal["settings"]["threshold"]
    return (f"Power of a confirmation of {n} queries ({point['m_groups']} groups drawn; it assumes the true "
            f"effect is this run's estimate, so it is optimistic), {cal['primary']}: P(mean Δ ≥ {thr}) = "
            f"{pct(point['p_mean_reaches_threshold'])} {mc_interval(point['wilson_reaches'])}; P(grouped "
            f"percentile lower bound > 0) = {pct(point['p_lower_above_0'])} "
            f"{mc_interval(point['wilson_lower_above_0'])}.")


def calibration_section(cal: Mapping) -> str:
    """The section's text (numbers from calibration.json)."""
    out = [HEADING, ""]
    if not cal["computable"]:
        return "\n".join(out + [f"Not computable: {cal['reason']}."]) + "\n"
    comp = cal["comparisons"][cal["primary"]]
    out += [intro(cal), "", *method_table(cal, comp), "", reading(cal, comp), "", randomization_line(cal), "",
            power_line(cal, comp)]
    return "\n".join(out) + "\n"


def power_plot(cal: Mapping, scorer: str, path) -> None:
    """The primary comparison's power curve with Wilson intervals; deterministic bytes (no metadata)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    if cal["computable"]:
        curve = cal["comparisons"][cal["primary"]]["power"]
        ns = [p["n"] for p in curve]
        for key, wkey, label, colour in (
                ("p_mean_reaches_threshold", "wilson_reaches", f"P(mean Δ ≥ {cal['settings']['threshold']})",
                 "tab:blue"),
                ("p_lower_above_0", "wilson_lower_above_0", "P(lower bound > 0)", "tab:orange")):
            ys = [p[key] for p in curve]
            # (a Wilson bound can sit an ulp inside a share of 0 or 1: never a negative bar)
            err = [[max(0.0, y - p[wkey][0]) for y, p in zip(ys, curve, strict=True)],
                   [max(0.0, p[wkey][1] - y) for y, p in zip(ys, curve, strict=True)]]
            ax.errorbar(ns, ys, yerr=err, marker="o", capsize=3, color=colour, label=label)
        ax.axvline(cal["confirmation_n"], color="grey", ls="--", lw=1,
                   label=f"confirmation n = {cal['confirmation_n']}")
        ax.set_ylim(-0.02, 1.02)
        ax.legend(loc="best", fontsize=8)
    else:
        ax.text(0.5, 0.5, f"not computable: {cal['reason']}", ha="center", va="center",
                transform=ax.transAxes)
    ax.set_xlabel("confirmation queries")
    ax.set_ylabel("share of simulations")
    title = f"power, {cal['primary']} (if the true effect is this run's estimate)"
    ax.set_title(title + (f" ({STANDIN_LABEL})" if scorer == STANDIN_LABEL else ""), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)
