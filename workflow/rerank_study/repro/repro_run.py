"""A finished run against its committed reference, in the IR reproducibility literature's measures.

``reference.compare`` says whether the bits are identical; when they are not, this module says whether the
*experiment* reproduced: the measures of ``repro_aggregate.measure_reproduction`` (RMSE, nRMSE, KTU, RBO, ER,
ΔRI, Pyserini's bands) on the run's primary metric, with the reference as the original, and whether the
primary comparison's interval verdicts (covers 0, covers the threshold) are unchanged.

Both sides are read the same way: the per-query metric from ``per_query.tsv``; the three rankings of each
query made from its frozen candidates (the run's ``inputs/candidates.tsv``: r0) and that side's logits by the
pipeline's own ``ranking.rerank_query`` (the reference keeps ``logits.tsv``, not its rankings).

REPRODUCED = no mean of a method or of a comparison's Δ is in Pyserini's FAIL band (every one OK or OKish) and
every primary interval verdict is unchanged; otherwise DIFFERENT, naming what failed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..rankings.candidates import read_candidates
from ..rankings.ranking import rerank_query
from ..stats.bootstrap import Interval
from .repro_aggregate import measure_reproduction

REPRODUCED, DIFFERENT = "REPRODUCED", "DIFFERENT"
INTERVALS = ("grouped_interval", "query_interval")


def side(per_query: Mapping[str, Mapping[str, str]], logits: Mapping[tuple[str, str], float],
         cands: Mapping[str, Sequence[str]], methods: Sequence[str], comparisons: Mapping[str, Sequence[str]],
         metric: str, blend_k: int) -> dict:
    """One side (original or reproduction) as ``measure_reproduction`` takes it: per-query values of
    ``metric``, the rankings of every method, each comparison's per-query Δ = a - b."""
    values = {m: {q: float(row[f"{m}_{metric}"]) for q, row in per_query.items()} for m in methods}
    by_q: dict[str, dict[str, float]] = {}
    for (q, d), x in logits.items():
        by_q.setdefault(q, {})[d] = x
    orders = {q: rerank_query(cands[q], by_q[q], blend_k)["order"] for q in per_query}
    return {"values": values,
            "rankings": {m: {q: orders[q][m] for q in per_query} for m in methods},
            "deltas": {c: {q: values[a][q] - values[b][q] for q in per_query}
                       for c, (a, b) in comparisons.items()}}


def interval_verdicts(interval: Sequence[float], threshold: float) -> dict:
    iv = Interval(interval[0], interval[1])
    return {"covers_0": iv.covers(0.0), "covers_threshold": iv.covers(threshold)}


def primary_verdicts(reference: Mapping, run: Mapping, threshold: float) -> dict:
    """Per interval of the primary comparison: the reference's and the run's verdicts, and whether they
    agree."""
    out = {}
    for name in INTERVALS:
        o, r = interval_verdicts(reference[name], threshold), interval_verdicts(run[name], threshold)
        out[name] = {"reference": o, "run": r, "unchanged": o == r}
    return out


def measures(run_pq: Mapping, ref_pq: Mapping, run_logits: Mapping, ref_logits: Mapping, candidates_path,
             summary: Mapping, blend_k: int) -> dict:
    """The measures of the run (reproduction) against the reference (original), for the run's methods and
    comparisons and its primary metric."""
    methods = list(summary["methods"])
    comparisons = {c: (blk["a"], blk["b"]) for c, blk in summary["comparisons"].items()}
    cands = read_candidates(candidates_path)
    args = (cands, methods, comparisons, summary["metric"], blend_k)
    return measure_reproduction(side(ref_pq, ref_logits, *args), side(run_pq, run_logits, *args),
                                methods=methods, comparisons=comparisons, primary=summary["primary"])


def verdict(result: Mapping, verdicts: Mapping) -> tuple[str, list[str]]:
    """(REPRODUCED or DIFFERENT, what failed: every FAIL band, every changed primary interval verdict)."""
    failed = list(result["failed"])
    for name, v in verdicts.items():
        if not v["unchanged"]:
            failed.append(f"primary {name}: verdicts {v['reference']} in the reference, "
                          f"{v['run']} in the run")
    return (DIFFERENT if failed else REPRODUCED), failed


def _num(x, spec: str = ".4f") -> str:
    return "undefined" if x is None else format(x, spec)


def _yes_no(v: Mapping) -> str:
    return (f"covers 0: {'yes' if v['covers_0'] else 'no'}; covers threshold: "
            f"{'yes' if v['covers_threshold'] else 'no'}")


def render_measures(result: Mapping) -> list[str]:
    """The measures as markdown: methods, comparisons, the primary interval verdicts, what failed."""
    ms, pr = result["measures"], result["primary"]
    lines = ["", "## Did the experiment reproduce?", "",
             "Reference = original, this run = reproduction; "
             f"{len(next(iter(ms['methods'].values()))['per_query_difference'])} queries. Ideal: RMSE 0, "
             "nRMSE 0, KTU 1, RBO 1, ER 1, ΔRI 0. Band (Pyserini): OK = equal at 4 decimals, OKish = at most "
             "5e-4 apart, FAIL otherwise.", "",
             "| method | mean (reference) | mean (run) | band | RMSE | nRMSE | KTU | RBO |",
             "|---|---|---|---|---|---|---|---|"]
    for m, b in ms["methods"].items():
        lines.append(f"| {m} | {b['mean']['original']:.4f} | {b['mean']['reproduction']:.4f} | "
                     f"{b['mean']['band']} | {b['rmse']:.6f} | {b['nrmse']:.6f} | {_num(b['ktu']['mean'])} | "
                     f"{_num(b['rbo']['mean'])} |")
    lines += ["", "| comparison | mean Δ (reference) | mean Δ (run) | band | ER | ΔRI |",
              "|---|---|---|---|---|---|"]
    for c, b in ms["comparisons"].items():
        mark = " (primary)" if c == ms["primary"] else ""
        lines.append(f"| {c}{mark} | {b['mean_delta']['original']:+.4f} | "
                     f"{b['mean_delta']['reproduction']:+.4f} | {b['mean_delta']['band']} | {_num(b['er'])} "
                     f"| {_num(b['delta_ri'], '+.4f')} |")
    lines += ["", f"Primary comparison {ms['primary']} (threshold {pr['threshold']!r}):", ""]
    for name, v in pr["verdicts"].items():
        lines.append(f"- {name}: reference {_yes_no(v['reference'])}; run {_yes_no(v['run'])} — "
                     f"{'unchanged' if v['unchanged'] else 'CHANGED'}")
    lines += ["", "What failed: " + ("; ".join(result["failed"]) if result["failed"] else "nothing")]
    if ms["undefined"]:
        lines.append("Undefined: " + "; ".join(ms["undefined"]))
    return lines
