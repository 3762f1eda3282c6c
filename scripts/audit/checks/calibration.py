"""Check 'calibration': calibration.json is the calibration the definitions give on the run's own data (the
audit's recomputed Δ and groups) with the ANCHOR's settings. The file records every simulation's outcome
(``simulations``, column-wise); the audit recomputes exactly, in the documented arithmetic order: the settings
record, the data, θ̂ and its SE, a seeded sample of ``n_audit`` simulations of the coverage stream, of the
null stream and of the power grid (all of them when n_audit is at least their number; every endpoint and
dropped count, or θ̂*, lower bound and query count), the sign-flip test from the audit's own flips (all R when
R·G ≤ FLIPS_LIMIT), and every tally, share, Wilson interval and mean from the recorded columns. The sample is
seeded with FRESH randomness at audit time (``secrets.randbits(64)``, recorded with the drawn simulation
numbers in the check's note), so nobody can know beforehand which simulations will be recomputed:
``DefaultRng(seed)``, a partial Fisher-Yates shuffle of the simulation numbers (``audit_sample``), drawn for
coverage, null and the power grid in that order (``samples``; the same seed gives the same sample).
Tolerances, each stated: Student's t quantile (scipy in the pipeline) within calib_stats.T_QUANTILE_REL; a
sign-flip count from a prefix of the flips within 4.5 binomial standard errors. Signature: see
checks.provenance."""

from __future__ import annotations

import math
import secrets

from core.compare import same_value
from expected.calib_stats import T_QUANTILE_REL, ratio_and_se, t_quantile
from expected.calibration_tallies import METHODS, read_columns, tallies
from expected.expected_calibration import (
    CalibrationData,
    coverage_sample,
    null_sample,
    power_sample,
    randomization,
)
from expected.rng import DefaultRng
from read.readers import read_json

CHECK = "calibration"
# sign-flip draws the audit makes itself (R·G); above it, the first FLIPS_LIMIT // G flips
FLIPS_LIMIT = 3_000_000
NOT_COMPUTABLE = "fewer than two evidence groups: nothing to resample"


def expected_settings(c: dict, settings: dict) -> dict:
    """The settings record of calibration.json from the anchor (its percentiles and threshold: the
    bootstrap's)."""
    pct = [float(p) for p in settings["percentiles"]]
    return {"seed": c["seed"], "S": c["S"], "B_inner": c["B_inner"], "R": c["R"], "S_power": c["S_power"],
            "power_n": list(c["power_n"]), "threshold": float(settings["threshold"]), "percentiles": pct,
            "n_audit": c["n_audit"], "nominal_coverage": (pct[1] - pct[0]) / 100,
            "test_level": 2 * pct[0] / 100}


def compare(au, f: str, path: str, found, want) -> None:
    """Leaf by leaf; a missing or extra key fails; ``note`` (a description) is exempt."""
    if isinstance(want, dict):
        if not isinstance(found, dict):
            au.check(CHECK, False, f, path, "a record", type(found).__name__)
            return
        for key in sorted(set(found) | set(want)):
            if key == "note" and key not in want:
                continue
            sub = f"{path}.{key}" if path else key
            if key not in want or key not in found:
                au.check(CHECK, False, f, sub, want.get(key, "nothing (not a documented key)"),
                         found.get(key, "missing"))
            else:
                compare(au, f, sub, found[key], want[key])
    elif isinstance(want, list):
        ok = isinstance(found, list) and len(found) == len(want)
        au.check(CHECK, ok, f, f"{path} entries", len(want), len(found) if isinstance(found, list) else found)
        for i, (x, y) in enumerate(zip(found, want, strict=True) if ok else ()):
            compare(au, f, f"{path}[{i}]", x, y)
    else:
        au.check(CHECK, same_value(found, want), f, path, want, found)


def comparison_names(au, f, found: dict, want) -> list[str]:
    """The comparisons in the order the file records them (its records are indexed in it), when that order is
    a permutation of the anchor's; else the anchor's (and a failure)."""
    names = list(want.comparisons)
    given = (found.get("data") or {}).get("comparisons") if isinstance(found.get("data"), dict) else None
    ok = isinstance(given, list) and sorted(given) == sorted(names) and len(given) == len(names)
    au.check(CHECK, ok, f, "data.comparisons (the anchor's comparisons)", names, given)
    return list(given) if ok else names


def run_t_quantile(au, f, found: dict, own: float) -> float:
    """The run's t quantile when it is within the stated tolerance of the audit's own, else the audit's
    own."""
    sims = found.get("simulations")
    theirs = sims.get("t_quantile") if isinstance(sims, dict) else None
    ok = isinstance(theirs, float) and abs(theirs - own) <= T_QUANTILE_REL * abs(own)
    au.check(CHECK, ok, f, f"simulations.t_quantile (within {T_QUANTILE_REL} relative of the audit's own)",
             own, theirs)
    return theirs if ok else own


def audit_sample(rng: DefaultRng, total: int, n: int) -> list[int]:
    """min(n, total) distinct numbers of 0..total-1, sorted: a partial Fisher-Yates shuffle, step i swapping
    position i with i + integers(0, total - i)."""
    order = list(range(total))
    for i in range(min(n, total)):
        j = i + rng.integers_flat(total - i, 1)[0]
        order[i], order[j] = order[j], order[i]
    return sorted(order[:min(n, total)])


def samples(st: dict, seed: int) -> dict:
    """The simulations the audit recomputes: coverage and null numbers s, power pairs (n, s)."""
    rng = DefaultRng(seed)
    cov = audit_sample(rng, st["S"], st["n_audit"])
    null = audit_sample(rng, st["S"], st["n_audit"])
    grid = audit_sample(rng, len(st["power_n"]) * st["S_power"], st["n_audit"])
    return {"coverage": cov, "null": null,
            "power": [(st["power_n"][j // st["S_power"]], j % st["S_power"]) for j in grid]}


def overlay(cols: dict, names: list[str], data, st: dict, t_q: float, picked: dict) -> dict:
    """The recorded columns with the sampled simulations replaced by the audit's recomputation of them."""
    one = {"coverage": coverage_sample, "null": null_sample}
    for stream in ("coverage", "null"):
        for s in picked[stream]:
            rec = one[stream](data, st, s, t_q)
            for name, comp in zip(names, rec["comparisons"], strict=True):
                col = cols[stream][name]
                col["bootstrap_t_dropped"][s] = comp["bootstrap_t_dropped"]
                for m in METHODS:
                    iv = comp["intervals"][m]
                    col["intervals"][m]["lower"][s] = None if iv is None else iv[0]
                    col["intervals"][m]["upper"][s] = None if iv is None else iv[1]
    for n, s in picked["power"]:
        rec, col = power_sample(data, st, n, s), cols["power"][str(n)]
        col["queries"][s] = rec["queries"]
        for k, name in enumerate(names):
            col["comparisons"][name]["theta"][s] = rec["theta"][k]
            col["comparisons"][name]["lower"][s] = rec["lower"][k]
    return cols


def randomization_view(au, f, found_comp: dict, own: dict, R: int) -> dict:
    """The sign-flip test as the audit vouches for it: its own when it made all R flips; else the run's count
    when it is within 4.5 binomial standard errors (+ 1/flips) of the audit's share on its first flips."""
    if own["flips"] == R:
        return {k: own[k] for k in ("statistic", "extreme", "R", "p")}
    theirs = (found_comp or {}).get("randomization") or {}
    extreme = theirs.get("extreme")
    share = own["extreme"] / own["flips"]
    ok = isinstance(extreme, int) and 0 <= extreme <= R and abs(extreme / R - share) <= \
        4.5 * math.sqrt(max(share * (1 - share), 1 / own["flips"]) / own["flips"]) + 1 / own["flips"]
    au.check(CHECK, ok, f, f"randomization extreme (consistent with the audit's {own['flips']} flips)",
             f"about {share * R:.0f}", extreme)
    extreme = extreme if ok else own["extreme"]
    return {"statistic": own["statistic"], "extreme": extreme, "R": R, "p": (1 + extreme) / (1 + R)}


def expected_record(run, want, au, f: str, found: dict) -> dict:
    """calibration.json as the audit vouches for it: the sampled simulations recomputed, the rest as recorded
    (when well formed), every tally recounted from them."""
    st = dict(expected_settings(want.settings["calibration"], want.settings))
    names = comparison_names(au, f, found, want)
    head = {"primary": want.settings["comparisons"]["primary"], "metric": want.metric,
            "confirmation_n": want.settings["calibration"]["confirmation_n"], "settings": st,
            "methods": list(METHODS),
            "data": {"n_queries": len(run.analysed), "n_groups": len(want.groups), "comparisons": names}}
    if len(want.groups) < 2:
        return {**head, "computable": False, "reason": NOT_COMPUTABLE, "comparisons": {},
                "simulations": {"coverage": {}, "null": {}, "power": {}, "t_quantile": None}}
    data = CalibrationData(names, want.deltas, want.members)
    t_q = run_t_quantile(au, f, found, t_quantile(st["percentiles"][1] / 100, data.G - 1))
    seed = secrets.randbits(64)
    picked = samples(st, seed)
    want.__dict__.setdefault("_calibration_view", {})["sample"] = (
        f"simulations recomputed, drawn with seed {seed} (secrets.randbits(64) at audit time): coverage "
        f"{picked['coverage']}, null {picked['null']}, power (n, s) {[list(p) for p in picked['power']]}")
    cols = overlay(read_columns(au, f, found, names, st), names, data, st, t_q, picked)
    rand = randomization(data, st, FLIPS_LIMIT)
    comps = {}
    for k, name in enumerate(names):
        theta, se = ratio_and_se(data.sums[k], data.sizes, range(data.G))
        found_comp = _get_comp(found, name)
        comps[name] = {"theta_hat": theta, "se": se,
                       "randomization": randomization_view(au, f, found_comp, rand[k], st["R"]),
                       **tallies(name, data.theta(k), data, st, cols)}
    return {**head, "computable": True, "reason": None, "comparisons": comps,
            "simulations": {**cols, "t_quantile": t_q}}


def _get_comp(found: dict, name: str) -> dict:
    comps = found.get("comparisons")
    comp = comps.get(name) if isinstance(comps, dict) else None
    return comp if isinstance(comp, dict) else {}


def calibration_view(run, want, au) -> dict:
    """The vouched-for record, computed once per audit (the report check renders its section from it)."""
    cache = want.__dict__.setdefault("_calibration_view", {})
    if "record" not in cache:
        f = str(run.path("calibration"))
        cache["record"] = expected_record(run, want, au, f, read_json(run.path("calibration")))
    return cache["record"]


def check_calibration(run, want, au) -> None:
    f = str(run.path("calibration"))
    found = read_json(run.path("calibration"))
    if want.settings.get("calibration") is None:
        au.check(CHECK, False, f, "settings", "the anchor's calibration settings",
                 "the anchor has none (a protocol frozen before the calibration existed): freeze a new "
                 "protocol")
        return
    view = calibration_view(run, want, au)
    sample = want.__dict__["_calibration_view"].get("sample", "nothing to recompute (not computable)")
    au.note(CHECK, "a freshly seeded sample of n_audit simulations per stream recomputed exactly (all "
                   "when n_audit covers them); θ̂, SE and the sign-flip test recomputed; every tally, share "
                   "and Wilson interval recounted from the recorded simulations; t quantile within "
                   f"{T_QUANTILE_REL} relative; {sample}")
    compare(au, f, "", found, view)
