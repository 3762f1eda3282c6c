"""The reproducibility measures of a whole run, as one JSON-able dict (pure, no I/O).

``measure_reproduction`` applies the measures of ``repro_measures`` (RMSE, nRMSE, KTU, RBO, ER, RI,
ΔRI, Pyserini's band) to every method and every comparison of a reproduction against its original
(the reference run), states each measure's ideal value, and lists what failed (every FAIL band) and
what is undefined (every null ER / ΔRI). The means that the bands compare are the project's own
(``bootstrap.seq_mean``, the means ``summary.json`` reports), in the original's query order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..stats.bootstrap import seq_mean
from .repro_measures import (
    FAIL,
    OK,
    OKISH,
    RBO_EXT_P,
    delta_relative_improvement,
    effect_ratio,
    ktu_by_query,
    nrmse,
    pyserini_band,
    query_mean,
    rbo_by_query,
    relative_improvement,
    rmse,
    same_topics,
)

IDEAL = {"rmse": 0.0, "nrmse": 0.0, "ktu": 1.0, "rbo": 1.0, "er": 1.0, "delta_ri": 0.0}

DEFINITIONS = {
    "reference": "original = the reference run, reproduction = the new run",
    "rmse": "sqrt(mean_q (o_q - r_q)^2) of the per-query metric (ideal 0)",
    "nrmse": "RMSE / sqrt(mean_q max(o_q, 1 - o_q)^2) (ideal 0)",
    "ktu": "repro_eval's Kendall's tau union per query: tau_b of the sorted-union index codes, position by "
           "position; numpy mean over queries (ideal 1)",
    "rbo": "RBO_ext (Webber et al. 2010, eq. 32) of the whole ranked lists, persistence p; numpy "
           "mean (ideal 1)",
    "er": "mean(Δ') / mean(Δ) (ideal 1); null when mean(Δ) = 0",
    "delta_ri": "RI - RI', RI = (mean a - mean b) / mean b (ideal 0); null when a mean b is 0",
    "band": "Pyserini: OK equal at 4 decimals, OKish <= 5e-4 apart at 4 decimals, FAIL otherwise",
    "failed": "every mean whose band is FAIL (RMSE, KTU, RBO, ER and ΔRI have no published pass threshold)",
}


def _check_deltas(run: Mapping, label: str, comparisons: Mapping[str, Sequence[str]]) -> None:
    """Each comparison's per-query Δ must be exactly a - b of the run's per-query values."""
    for name, (a, b) in comparisons.items():
        if name not in run["deltas"]:
            raise ValueError(f"{label}: no per-query Δ for comparison {name!r}")
        given, va, vb = run["deltas"][name], run["values"][a], run["values"][b]
        same_topics(va, given, f"{label}: Δ of {name} vs the values of {a}")
        same_topics(va, vb, f"{label}: values of {a} vs {b}")
        bad = [q for q in va if given[q] != va[q] - vb[q]]
        if bad:
            raise ValueError(f"{label}: the Δ of {name} is not {a} - {b} for queries {bad[:5]} "
                             f"({len(bad)} in all): swapped methods or another metric?")


def _mean_block(o: Mapping[str, float], r: Mapping[str, float]) -> dict:
    """The two means (the project's ``seq_mean``, original's query order) and their Pyserini band."""
    qids = same_topics(o, r, "means")
    m_o, m_r = seq_mean([o[q] for q in qids]), seq_mean([r[q] for q in qids])
    return {"original": m_o, "reproduction": m_r, "difference": m_r - m_o, "band": pyserini_band(m_o, m_r)}


def _method_block(orig: Mapping, rep: Mapping, method: str, rbo_p: float) -> dict:
    """Effectiveness and document-order measures of one method."""
    o, r = orig["values"][method], rep["values"][method]
    for run, label in ((orig, "original"), (rep, "reproduction")):
        same_topics(run["values"][method], run["rankings"][method], f"{label} {method}: values vs rankings")
    ktu_q = ktu_by_query(orig["rankings"][method], rep["rankings"][method])
    rbo_q = rbo_by_query(orig["rankings"][method], rep["rankings"][method], rbo_p)
    return {"mean": _mean_block(o, r), "rmse": rmse(o, r), "nrmse": nrmse(o, r),
            "per_query_difference": {q: r[q] - o[q] for q in o},
            "ktu": {"mean": query_mean(ktu_q), "per_query": ktu_q},
            "rbo": {"mean": query_mean(rbo_q), "p": rbo_p, "per_query": rbo_q},
            "ideal": {k: IDEAL[k] for k in ("rmse", "nrmse", "ktu", "rbo")}}


def _comparison_block(orig: Mapping, rep: Mapping, name: str, a: str, b: str) -> dict:
    """Overall-effect measures of one comparison (Δ = a - b)."""
    od, rd = orig["deltas"][name], rep["deltas"][name]
    oa, ob, ra, rb = orig["values"][a], orig["values"][b], rep["values"][a], rep["values"][b]
    return {"a": a, "b": b, "mean_delta": _mean_block(od, rd),
            "er": effect_ratio(od, rd), "er_ideal": IDEAL["er"],
            "relative_improvement": {"original": relative_improvement(oa, ob),
                                     "reproduction": relative_improvement(ra, rb)},
            "delta_ri": delta_relative_improvement(oa, ob, ra, rb), "delta_ri_ideal": IDEAL["delta_ri"]}


def _problems(result: Mapping) -> tuple[list[str], list[str]]:
    """(what failed: every FAIL band; what is undefined: every null ER / ΔRI), in table order."""
    def line(path: str, block: Mapping) -> str:
        return (f"{path}: {block['band']} (original {block['original']:.4f}, reproduction "
                f"{block['reproduction']:.4f}; Δ = {block['difference']:+.6f})")

    failed = [line(f"methods.{m}.mean", blk["mean"]) for m, blk in result["methods"].items()
              if blk["mean"]["band"] == FAIL]
    undefined = []
    for c, blk in result["comparisons"].items():
        if blk["mean_delta"]["band"] == FAIL:
            failed.append(line(f"comparisons.{c}.mean_delta", blk["mean_delta"]))
        if blk["er"] is None:
            undefined.append(f"comparisons.{c}.er: the original's mean Δ is 0")
        if blk["delta_ri"] is None:
            undefined.append(f"comparisons.{c}.delta_ri: a mean of the baseline {blk['b']} is 0")
    return failed, undefined


def measure_reproduction(orig: Mapping, rep: Mapping, *, methods: Sequence[str],
                         comparisons: Mapping[str, Sequence[str]], primary: str,
                         rbo_p: float = RBO_EXT_P) -> dict:
    """Every reproducibility measure of a reproduction against its original (reference), JSON-able.

    ``orig`` and ``rep`` each hold ``{"values": {method: {qid: metric}}, "rankings": {method: {qid:
    [doc, ...]}}, "deltas": {comparison: {qid: Δ}}}`` (one per-query metric, rankings with ties
    broken, Δ = a - b exactly). ``comparisons`` maps a name to (a, b); ``primary`` is one of them.

    Returns ``{"methods": {m: mean + band, rmse, nrmse, per-query differences, ktu / rbo mean and
    per query, ideal values}, "comparisons": {c: mean Δ + band, er, relative improvements, delta_ri,
    their ideals}, "primary", "worst_band", "failed", "undefined", "definitions"}``. ``failed``
    lists every mean whose band is FAIL; nothing else fails (no published threshold exists for the
    other measures: read them against their ideal values)."""
    if primary not in comparisons:
        raise ValueError(f"primary comparison {primary!r} is not one of {sorted(comparisons)}")
    unknown = sorted({m for ab in comparisons.values() for m in ab} - set(methods))
    if unknown or not methods:
        raise ValueError(f"comparisons name methods not measured: {unknown} (methods: {list(methods)})")
    for run, label in ((orig, "original"), (rep, "reproduction")):
        _check_deltas(run, label, comparisons)
    result = {"methods": {m: _method_block(orig, rep, m, rbo_p) for m in methods},
              "comparisons": {c: _comparison_block(orig, rep, c, a, b) for c, (a, b) in comparisons.items()},
              "primary": primary}
    bands = [blk["mean"]["band"] for blk in result["methods"].values()]
    bands += [blk["mean_delta"]["band"] for blk in result["comparisons"].values()]
    result["worst_band"] = max(bands, key=(OK, OKISH, FAIL).index)
    result["failed"], result["undefined"] = _problems(result)
    result["definitions"] = dict(DEFINITIONS)
    return result
