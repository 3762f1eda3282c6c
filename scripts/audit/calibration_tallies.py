"""The tallies of calibration.json for one comparison - coverage, type I error, dropped bootstrap-t replicates,
the power curve - as the audit vouches for them. ``recomputed_tree``: from every simulation (the file records all
of them: n_audit ≥ S and ≥ S_power), exactly as the definitions count them (an undefined interval neither covers
nor excludes 0; widths summed in simulation order over the defined intervals). ``consistent_tree``: the file's
counts where the audit holds only the first n_audit simulations: each count must be an integer in range, at least
what the recorded simulations show, and leave room for what they do not; every share, Wilson interval and the
mean query count are then derived from the counts exactly. Failures are recorded under 'calibration'."""

from __future__ import annotations

import math

from calib_stats import wilson
from expected_calibration import power_groups

CHECK = "calibration"


def _count(comp_records, k: int, m: str, truth) -> dict:
    c = {"contains": 0, "excludes_0": 0, "undefined": 0, "width": 0.0, "defined": 0}
    for rec in comp_records:
        iv = rec["comparisons"][k]["intervals"][m]
        if iv is None:
            c["undefined"] += 1
            continue
        c["defined"] += 1
        c["contains"] += truth is not None and iv[0] <= truth <= iv[1]
        c["excludes_0"] += iv[0] > 0 or iv[1] < 0
        c["width"] += iv[1] - iv[0]
    return c


def _power_counts(recs: list[dict], k: int, threshold: float) -> tuple[int, int, int]:
    return (sum(r["theta"][k] >= threshold for r in recs), sum(r["lower"][k] > 0 for r in recs),
            sum(r["queries"] for r in recs))


def _power_point(n: int, m: int, reach: int, positive: int, queries: int, S: int, alpha: float) -> dict:
    return {"n": n, "m_groups": m, "mean_queries": queries / S, "p_mean_reaches_threshold": reach / S,
            "wilson_reaches": wilson(reach, S, alpha), "p_lower_above_0": positive / S,
            "wilson_lower_above_0": wilson(positive, S, alpha)}


def recomputed_tree(au, f, name, k, data, st, recs, found) -> dict:
    """Every tally from every simulation (all recorded)."""
    S, alpha, truth = st["S"], st["test_level"], data.theta(k)
    cov, typ = {}, {}
    for m in ("percentile", "bca", "bootstrap_t", "cluster_t", "query_percentile"):
        c, t = _count(recs["coverage"], k, m, truth), _count(recs["null"], k, m, None)
        cov[m] = {"coverage": c["contains"] / S, "wilson": wilson(c["contains"], S, alpha), "covered": c["contains"],
                  "undefined": c["undefined"], "mean_width": c["width"] / c["defined"] if c["defined"] else None}
        typ[m] = {"rate": t["excludes_0"] / S, "wilson": wilson(t["excludes_0"], S, alpha),
                  "rejections": t["excludes_0"], "undefined": t["undefined"]}
    dropped = {s: sum(r["comparisons"][k]["bootstrap_t_dropped"] for r in recs[s]) for s in ("coverage", "null")}
    power = []
    for n in st["power_n"]:
        reach, positive, queries = _power_counts(recs["power"][str(n)], k, st["threshold"])
        power.append(_power_point(n, power_groups(n, data.G, data.N), reach, positive, queries, st["S_power"], alpha))
    return {"coverage": cov, "type_i_error": typ, "bootstrap_t_dropped_replicates": dropped, "power": power}


def _given_count(au, f, item: str, value, low: int, high: int) -> int:
    """The file's count, checked to be an integer in [low, high] (the recorded simulations' bounds)."""
    ok = isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
    au.check(CHECK, ok, f, f"{item} (consistent with the recorded simulations)", f"an integer in [{low}, {high}]",
             value)
    return value if ok else low


def _consistent_method(au, f, where, c, t, given_cov, given_typ, S, alpha) -> tuple[dict, dict]:
    miss = c["defined"] - c["contains"]
    covered = _given_count(au, f, f"{where}.coverage.covered", given_cov.get("covered"), c["contains"],
                           S - miss - c["undefined"])
    undef = _given_count(au, f, f"{where}.coverage.undefined", given_cov.get("undefined"), c["undefined"],
                         S - covered - miss)
    width = given_cov.get("mean_width")
    ok = width is None if undef == S else isinstance(width, float) and math.isfinite(width) and width >= 0
    au.check(CHECK, ok, f, f"{where}.coverage.mean_width (null exactly when every interval is undefined)",
             "a number >= 0", width)
    keep = t["defined"] - t["excludes_0"]
    rejections = _given_count(au, f, f"{where}.type_i_error.rejections", given_typ.get("rejections"),
                              t["excludes_0"], S - keep - t["undefined"])
    t_undef = _given_count(au, f, f"{where}.type_i_error.undefined", given_typ.get("undefined"), t["undefined"],
                           S - rejections - keep)
    return ({"coverage": covered / S, "wilson": wilson(covered, S, alpha), "covered": covered, "undefined": undef,
             "mean_width": width if ok else None},
            {"rate": rejections / S, "wilson": wilson(rejections, S, alpha), "rejections": rejections,
             "undefined": t_undef})


def _consistent_power(au, f, name, k, data, st, recs, found) -> list[dict]:
    S, alpha, out = st["S_power"], st["test_level"], []
    given = {p.get("n"): p for p in found.get("power", []) if isinstance(p, dict)}
    lo_size, hi_size = min(data.sizes), max(data.sizes)
    for n in st["power_n"]:
        rec, g, m = recs["power"][str(n)], given.get(n, {}), power_groups(n, data.G, data.N)
        reach, positive, queries = _power_counts(rec, k, st["threshold"])
        left, where = S - len(rec), f"comparisons.{name}.power[n={n}]"
        counts = []
        for key, low in (("p_mean_reaches_threshold", reach), ("p_lower_above_0", positive)):
            p = g.get(key)
            x = round(p * S) if isinstance(p, float) or isinstance(p, int) else None
            counts.append(_given_count(au, f, f"{where}.{key} x S_power", x if x is not None and x / S == p else None,
                                       low, low + left))
        mq = g.get("mean_queries")
        total = round(mq * S) if isinstance(mq, (int, float)) and total_ok(mq, S) else None
        total = _given_count(au, f, f"{where}.mean_queries x S_power", total, queries + left * m * lo_size,
                             queries + left * m * hi_size)
        out.append(_power_point(n, m, counts[0], counts[1], total, S, alpha))
    return out


def total_ok(mean: float, S: int) -> bool:
    return round(mean * S) / S == mean


def consistent_tree(au, f, name, k, data, st, recs, found) -> dict:
    """The file's tallies, consistent with the first n_audit simulations (the only ones the audit recomputes)."""
    S, alpha, truth = st["S"], st["test_level"], data.theta(k)
    cov, typ = {}, {}
    for m in ("percentile", "bca", "bootstrap_t", "cluster_t", "query_percentile"):
        c, t = _count(recs["coverage"], k, m, truth), _count(recs["null"], k, m, None)
        cov[m], typ[m] = _consistent_method(au, f, f"comparisons.{name}.{m}", c, t,
                                            (found.get("coverage") or {}).get(m) or {},
                                            (found.get("type_i_error") or {}).get(m) or {}, S, alpha)
    given = found.get("bootstrap_t_dropped_replicates") or {}
    dropped = {}
    for s in ("coverage", "null"):
        low = sum(r["comparisons"][k]["bootstrap_t_dropped"] for r in recs[s])
        dropped[s] = _given_count(au, f, f"comparisons.{name}.bootstrap_t_dropped_replicates.{s}", given.get(s), low,
                                  low + (S - len(recs[s])) * st["B_inner"])
    return {"coverage": cov, "type_i_error": typ, "bootstrap_t_dropped_replicates": dropped,
            "power": _consistent_power(au, f, name, k, data, st, recs, found)}
