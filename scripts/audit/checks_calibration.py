"""Check 'calibration': calibration.json is the calibration the definitions give on the run's own data (the audit's
recomputed Δ and groups) with the ANCHOR's settings. Recomputed exactly, in the documented arithmetic order: the
settings record, the data, θ̂ and its SE, every recorded simulation (the first n_audit of each stream and of each
power size: every endpoint, z0, a and dropped count), the sign-flip test from the audit's own flips (all R when
R·G ≤ FLIPS_LIMIT), and every share and Wilson interval from its counts. The tallies over simulations the file does
not record (S > n_audit) cannot be recomputed without redoing them; they must be consistent with the recorded ones
(counts in range, at least the recorded successes and failures, shares = counts / S exactly); with n_audit ≥ S (a
smoke run) every tally and mean width is recomputed. Tolerances, each stated: Student's t quantile (scipy in the
pipeline) within calib_stats.T_QUANTILE_REL; a sign-flip count from a prefix of the flips within 4.5 binomial
standard errors. Signature: see checks_provenance."""

from __future__ import annotations

import math

from calib_stats import T_QUANTILE_REL, ratio_and_se, t_quantile
from calibration_tallies import consistent_tree, recomputed_tree
from expected_calibration import CalibrationData, coverage_sample, null_sample, power_sample, randomization
from readers import read_json

CHECK = "calibration"
FLIPS_LIMIT = 3_000_000  # sign-flip draws the audit makes itself (R·G); above it, the first FLIPS_LIMIT // G flips
METHODS = ["percentile", "bca", "bootstrap_t", "cluster_t", "query_percentile"]
NOT_COMPUTABLE = "fewer than two evidence groups: nothing to resample"


def expected_settings(c: dict, settings: dict) -> dict:
    """The settings record of calibration.json from the anchor (its percentiles and threshold: the bootstrap's)."""
    pct = [float(p) for p in settings["percentiles"]]
    return {"seed": c["seed"], "S": c["S"], "B_inner": c["B_inner"], "R": c["R"], "S_power": c["S_power"],
            "power_n": list(c["power_n"]), "threshold": float(settings["threshold"]), "percentiles": pct,
            "n_audit": c["n_audit"], "nominal_coverage": (pct[1] - pct[0]) / 100, "test_level": 2 * pct[0] / 100}


def same(a, b) -> bool:
    """Equal values of the same JSON kind (an int and a float of equal value count as equal)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


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
        for i, (x, y) in enumerate(zip(found if ok else [], want)):
            compare(au, f, f"{path}[{i}]", x, y)
    else:
        au.check(CHECK, same(found, want), f, path, want, found)


def comparison_names(au, f, found: dict, want) -> list[str]:
    """The comparisons in the order the file records them (its records are indexed in it), when that order is a
    permutation of the anchor's; else the anchor's (and a failure)."""
    names = list(want.comparisons)
    given = (found.get("data") or {}).get("comparisons") if isinstance(found.get("data"), dict) else None
    ok = isinstance(given, list) and sorted(given) == sorted(names) and len(given) == len(names)
    au.check(CHECK, ok, f, "data.comparisons (the anchor's comparisons)", names, given)
    return list(given) if ok else names


def run_t_quantile(au, f, found: dict, own: float) -> float:
    """The run's t quantile when it is within the stated tolerance of the audit's own, else the audit's own."""
    recs = (found.get("audit") or {}).get("coverage") or []
    if not recs:  # nothing recorded (n_audit 0) shows a quantile: the record's tree holds none
        return own
    theirs = recs[0].get("t_quantile") if isinstance(recs[0], dict) else None
    ok = isinstance(theirs, float) and abs(theirs - own) <= T_QUANTILE_REL * abs(own)
    au.check(CHECK, ok, f, f"t quantile (within {T_QUANTILE_REL} relative of the audit's own)", own, theirs)
    return theirs if ok else own


def records(data, st: dict, t_q: float) -> dict:
    """The recorded simulations, recomputed: the first n_audit of the coverage and null streams and of each size."""
    n_cov, n_pow = min(st["n_audit"], st["S"]), min(st["n_audit"], st["S_power"])
    return {"coverage": [coverage_sample(data, st, s, t_q) for s in range(n_cov)],
            "null": [null_sample(data, st, s, t_q) for s in range(n_cov)],
            "power": {str(n): [power_sample(data, st, n, s) for s in range(n_pow)] for n in st["power_n"]}}


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
    """calibration.json as the audit vouches for it (recomputed, or consistent where it cannot be recomputed)."""
    st = dict(expected_settings(want.settings["calibration"], want.settings))
    names = comparison_names(au, f, found, want)
    head = {"primary": want.settings["comparisons"]["primary"], "metric": want.metric,
            "confirmation_n": want.settings["calibration"]["confirmation_n"], "settings": st, "methods": METHODS,
            "data": {"n_queries": len(run.analysed), "n_groups": len(want.groups), "comparisons": names}}
    if len(want.groups) < 2:
        return {**head, "computable": False, "reason": NOT_COMPUTABLE, "comparisons": {},
                "audit": {"coverage": [], "null": [], "power": {}}}
    data = CalibrationData(names, want.deltas, want.members)
    t_q = run_t_quantile(au, f, found, t_quantile(st["percentiles"][1] / 100, data.G - 1))
    recs = records(data, st, t_q)
    tally = recomputed_tree if st["n_audit"] >= max(st["S"], st["S_power"]) else consistent_tree
    rand = randomization(data, st, FLIPS_LIMIT)
    comps = {}
    for k, name in enumerate(names):
        theta, se = ratio_and_se(data.sums[k], data.sizes, range(data.G))
        found_comp = (found.get("comparisons") or {}).get(name) if isinstance(found.get("comparisons"), dict) else None
        comps[name] = {"theta_hat": theta, "se": se, "randomization": randomization_view(au, f, found_comp, rand[k], st["R"]),
                       **tally(au, f, name, k, data, st, recs, found_comp if isinstance(found_comp, dict) else {})}
    return {**head, "computable": True, "reason": None, "comparisons": comps, "audit": recs}


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
        au.check(CHECK, False, f, "settings", "the anchor's calibration settings", "the anchor has none (a protocol "
                 "frozen before the calibration existed): freeze a new protocol")
        return
    au.note(CHECK, "recorded simulations, θ̂, SE, sign-flip test, shares and Wilson intervals recomputed exactly; "
                   "tallies over unrecorded simulations checked for consistency (all recomputed when n_audit >= S); "
                   f"t quantile within {T_QUANTILE_REL} relative")
    compare(au, f, "", found, calibration_view(run, want, au))
