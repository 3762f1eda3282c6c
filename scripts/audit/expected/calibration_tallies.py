"""The tallies of calibration.json for one comparison - coverage, type I error, dropped bootstrap-t
replicates, the power curve - recounted by the audit from the file's record of EVERY simulation
(``simulations``, column-wise), exactly as the definitions count them: an undefined interval (both endpoints
null) neither covers nor excludes 0; widths summed in simulation order over the defined intervals; every
share, Wilson interval and mean query count derived from those counts. ``read_columns`` first checks the
record's shape (one entry per simulation, numbers or null where the definitions allow them) and returns it
with every malformed column replaced by nulls of the right length, so that the comparison with the vouched-for
record fails there (and only there). Which recorded simulations are recomputed, and how: checks.calibration.
Failures are recorded under 'calibration'."""

from __future__ import annotations

from expected.calib_stats import wilson
from expected.expected_calibration import power_groups

CHECK = "calibration"
METHODS = ("percentile", "bca", "bootstrap_t", "cluster_t", "query_percentile")


def _is_float(x) -> bool:
    return isinstance(x, float)


def _is_count(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _column(au, f, where: str, value, length: int, ok_entry, nullable: bool = False) -> list:
    """A list of ``length`` entries each passing ``ok_entry`` (or null when ``nullable``); else nulls (a
    failure)."""
    ok = isinstance(value, list) and len(value) == length and \
        all(ok_entry(x) or (nullable and x is None) for x in value)
    au.check(CHECK, ok, f, f"{where} (one entry per simulation)", f"{length} entries", _shape(value))
    return list(value) if ok else [None] * length


def _shape(value) -> str:
    return f"{len(value)} entries" if isinstance(value, list) else type(value).__name__


def _get(tree, *keys):
    for key in keys:
        tree = tree.get(key) if isinstance(tree, dict) else None
    return tree


def _stream_columns(au, f, stream: str, found: dict, names: list[str], S: int) -> dict:
    out = {}
    for name in names:
        where = f"simulations.{stream}.{name}"
        ivs = {}
        for m in METHODS:
            lo = _column(au, f, f"{where}.intervals.{m}.lower", _get(found, name, "intervals", m, "lower"), S,
                         _is_float, nullable=True)
            hi = _column(au, f, f"{where}.intervals.{m}.upper", _get(found, name, "intervals", m, "upper"), S,
                         _is_float, nullable=True)
            paired = all((a is None) == (b is None) for a, b in zip(lo, hi, strict=True))
            au.check(CHECK, paired, f, f"{where}.intervals.{m} (an endpoint is null exactly when the other "
                     "is)", "both or neither null", "one null")
            ivs[m] = {"lower": lo, "upper": hi}
        dropped = _column(au, f, f"{where}.bootstrap_t_dropped", _get(found, name, "bootstrap_t_dropped"), S,
                          _is_count)
        out[name] = {"intervals": ivs, "bootstrap_t_dropped": dropped}
    return out


def read_columns(au, f, found: dict, names: list[str], st: dict) -> dict:
    """The file's per-simulation columns, shape-checked (malformed ones become nulls)."""
    sims = found.get("simulations") if isinstance(found.get("simulations"), dict) else {}
    cols = {s: _stream_columns(au, f, s, sims.get(s) if isinstance(sims.get(s), dict) else {}, names, st["S"])
            for s in ("coverage", "null")}
    power = {}
    for n in st["power_n"]:
        given = _get(sims, "power", str(n)) or {}
        where = f"simulations.power.{n}"
        power[str(n)] = {
            "queries": _column(au, f, f"{where}.queries", given.get("queries"), st["S_power"], _is_count),
            "comparisons": {name: {key: _column(au, f, f"{where}.comparisons.{name}.{key}",
                                                _get(given, "comparisons", name, key), st["S_power"],
                                                _is_float)
                                   for key in ("theta", "lower")} for name in names}}
    cols["power"] = power
    return cols


def _count(ivs: dict, truth) -> dict:
    c = {"contains": 0, "excludes_0": 0, "undefined": 0, "width": 0.0, "defined": 0}
    for lo, hi in zip(ivs["lower"], ivs["upper"], strict=True):
        if lo is None or hi is None:
            c["undefined"] += 1
            continue
        c["defined"] += 1
        c["contains"] += truth is not None and lo <= truth <= hi
        c["excludes_0"] += lo > 0 or hi < 0
        c["width"] += hi - lo
    return c


def _power_point(n: int, m: int, reach: int, positive: int, queries: int, S: int, alpha: float) -> dict:
    return {"n": n, "m_groups": m, "mean_queries": queries / S, "p_mean_reaches_threshold": reach / S,
            "wilson_reaches": wilson(reach, S, alpha), "p_lower_above_0": positive / S,
            "wilson_lower_above_0": wilson(positive, S, alpha)}


def _sum_counts(values: list) -> int:
    total = 0
    for v in values:
        total += v if isinstance(v, int) else 0
    return total


def tallies(name: str, truth: float, data, st: dict, cols: dict) -> dict:
    """Every tally of one comparison, recounted from the per-simulation columns."""
    S, alpha = st["S"], st["test_level"]
    cov, typ = {}, {}
    for m in METHODS:
        c = _count(cols["coverage"][name]["intervals"][m], truth)
        t = _count(cols["null"][name]["intervals"][m], None)
        cov[m] = {"coverage": c["contains"] / S, "wilson": wilson(c["contains"], S, alpha),
                  "covered": c["contains"], "undefined": c["undefined"],
                  "mean_width": c["width"] / c["defined"] if c["defined"] else None}
        typ[m] = {"rate": t["excludes_0"] / S, "wilson": wilson(t["excludes_0"], S, alpha),
                  "rejections": t["excludes_0"], "undefined": t["undefined"]}
    dropped = {s: _sum_counts(cols[s][name]["bootstrap_t_dropped"]) for s in ("coverage", "null")}
    power = []
    for n in st["power_n"]:
        col = cols["power"][str(n)]
        mine = col["comparisons"][name]
        reach = sum(t is not None and t >= st["threshold"] for t in mine["theta"])
        positive = sum(v is not None and v > 0 for v in mine["lower"])
        power.append(_power_point(n, power_groups(n, data.G, data.N), reach, positive,
                                  _sum_counts(col["queries"]), st["S_power"], alpha))
    return {"coverage": cov, "type_i_error": typ, "bootstrap_t_dropped_replicates": dropped, "power": power}
