"""report.md's section "How far to trust these intervals here", rendered by the audit from the calibration
record it vouches for (``checks_calibration.calibration_view``: a seeded sample of the simulations recomputed,
every tally recounted from the recorded ones) with the fixed words of the report's specification copied here:
the settings sentence, the primary comparison's table (coverage at nominal with its Wilson interval, type I
error with its interval, mean width, undefined counts), the one-line reading, the sign-flip p-values and the
power of the confirmation size."""

from __future__ import annotations

from checks_calibration import calibration_view

HEADING = "## How far to trust these intervals here"
METHOD_LABELS = {"percentile": "percentile (preregistered)", "bca": "BCa", "bootstrap_t": "bootstrap-t",
                 "cluster_t": "cluster-t", "query_percentile": "query-level percentile"}


def pct(x) -> str:
    return "NA" if x is None else f"{100 * x:.1f} %"


def mc(iv) -> str:
    return f"[{100 * iv[0]:.1f}, {100 * iv[1]:.1f}]"


def f6(x) -> str:
    return "NA" if x is None else f"{x:.6f}"


def verdict(wilson, nominal: float) -> str:
    """Below nominal beyond Monte-Carlo error: too narrow; above it: wider than needed; else as nominal."""
    if wilson[1] < nominal:
        return "too narrow here"
    if wilson[0] > nominal:
        return "wider than needed here"
    return "as nominal here, within Monte-Carlo error"


def intro(st: dict) -> str:
    return (f"Calibration on this run's own data (rule calibrate, calibration.json; seed {st['seed']}, "
            f"S = {st['S']} outer simulations per stream, B_inner = {st['B_inner']} replicates inside each, "
            f"R = {st['R']} sign flips, S_power = {st['S_power']} simulations per power size): coverage "
            "under the empirical population (the evidence groups resampled with replacement; truth = the "
            "observed mean Δ), type I error under the grouped paired null (each group's Δ sign-flipped "
            "together). Monte-Carlo intervals: Wilson 95 %. The preregistered percentile interval decides; "
            "this is reported beside it.")


def table(cal: dict, comp: dict) -> list[str]:
    st = cal["settings"]
    out = [f"| method ({cal['primary']}) | coverage at nominal {100 * st['nominal_coverage']:g} % "
           f"[MC interval] | type I error at nominal {100 * st['test_level']:g} % [MC interval] | "
           "mean width | undefined (coverage / null) |", "|---|---|---|---|---|"]
    for m in cal["methods"]:
        c, t = comp["coverage"][m], comp["type_i_error"][m]
        out.append(f"| {METHOD_LABELS[m]} | {pct(c['coverage'])} {mc(c['wilson'])} | {pct(t['rate'])} "
                   f"{mc(t['wilson'])} | {f6(c['mean_width'])} | {c['undefined']} / {t['undefined']} |")
    return out


def reading(cal: dict, comp: dict) -> str:
    c = comp["coverage"]["percentile"]
    others = ", ".join(f"{METHOD_LABELS[m]} {pct(comp['coverage'][m]['coverage'])}" for m in cal["methods"]
                       if m != "percentile")
    return (f"Reading: the percentile interval covers {pct(c['coverage'])} {mc(c['wilson'])}: "
            f"{verdict(c['wilson'], cal['settings']['nominal_coverage'])}; {others}.")


def randomization(cal: dict) -> str:
    tests = "; ".join(f"{name} p = {cal['comparisons'][name]['randomization']['p']:.4g}"
                      for name in sorted(cal["comparisons"]))  # calibration.json's order (canonical JSON)
    return (f"Grouped sign-flip randomization test of the mean Δ (two-sided, R = {cal['settings']['R']}, "
            f"p = (1 + extreme) / (1 + R)): {tests}.")


def power(cal: dict, comp: dict) -> str:
    n = cal["confirmation_n"]
    point = next(p for p in comp["power"] if p["n"] == n)
    return (f"Power of a confirmation of {n} queries ({point['m_groups']} groups drawn; it assumes the true "
            f"effect is this run's estimate, so it is optimistic), {cal['primary']}: "
            f"P(mean Δ ≥ {cal['settings']['threshold']}) = {pct(point['p_mean_reaches_threshold'])} "
            f"{mc(point['wilson_reaches'])}; P(grouped percentile lower bound > 0) = "
            f"{pct(point['p_lower_above_0'])} {mc(point['wilson_lower_above_0'])}.")


def calibration_lines(run, want, au) -> list[str]:
    """The section, from the vouched-for calibration record."""
    cal = calibration_view(run, want, au)
    out = [HEADING, ""]
    if not cal["computable"]:
        return out + [f"Not computable: {cal['reason']}."]
    comp = cal["comparisons"][cal["primary"]]
    return out + [intro(cal["settings"]), "", *table(cal, comp), "", reading(cal, comp), "",
                  randomization(cal), "", power(cal, comp)]
