"""Conclusion retention: does another scorer of the SAME pairs (a derived backend: ONNX Runtime fp32 or int8)
change what the experiment concludes, against the reference scorer (the fp32 torch model)?

Pure: logits and judgements in, numbers out.

* ``method_table``: the per-query metric table of the three methods from one scorer's logits (the same
  ranking, blend and metrics as rule evaluate: ``ranking.rerank_query``, ``metrics.query_metrics``);
* ``logit_agreement``: per query, Kendall's tau-b of the two scorers' logits over the query's candidates
  (``scipy.stats.kendalltau``), the overlap of their top-k lists (ranked by the pipeline's tie rule) and
  the largest |delta logit|; then the smallest, the median and the mean over queries;
* ``conclusion``: each scorer's analysis (``analysis.analyse``: every comparison's mean, grouped interval
  and verdicts) and guardrails (``analysis.guardrails``), with the SAME evidence groups and the SAME
  bootstrap draws; the grouped paired interval of the difference of the two scorers' per-query primary
  delta (other - reference); and whether every verdict is unchanged.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from scipy.stats import kendalltau

from ..core import names
from ..rankings.ranking import order_by_score, rerank_query
from ..stats import analysis, metrics
from ..stats import bootstrap as bs
from ..stats.grouping import group_ids
from . import audited

Logits = Mapping[str, Mapping[str, float]]  # qid -> doc id -> logit
VERDICTS = (
    "grouped_covers_0",
    "grouped_covers_threshold",
    "mean_reaches_threshold",
    "query_covers_0",
    "query_covers_threshold",
)


def method_table(
    qids: Sequence[str],
    cands: Mapping[str, Sequence[str]],
    logits: Logits,
    qrels: Mapping[str, Mapping[str, int]],
    metrics_cfg: Mapping,
    blend_k: int,
) -> dict:
    """``table[qid][column(method, measure)]`` for every method and measure of a run."""
    table = {}
    for q in qids:
        orders = rerank_query(cands[q], logits[q], blend_k)["order"]
        row = {}
        for m in names.METHODS:
            vals = metrics.query_metrics(
                orders[m], qrels[q], metrics_cfg["ndcg_k"], metrics_cfg["recall_ks"], metrics_cfg["mrr_k"]
            )
            row.update({names.column(m, x): vals[str(x)] for x in names.measures(metrics_cfg)})
        table[q] = row
    return table


def query_agreement(ref: Mapping[str, float], other: Mapping[str, float], k: int) -> dict:
    """One query's agreement of two scorers over the same candidates."""
    if set(ref) != set(other):
        raise ValueError(f"the two scorers scored different candidates: {sorted(set(ref) ^ set(other))[:5]}")
    docs = sorted(ref)
    tau = kendalltau([ref[d] for d in docs], [other[d] for d in docs]).statistic  # tau-b
    top_ref, top_other = order_by_score(ref)[:k], order_by_score(other)[:k]
    return {
        "kendall_tau_b": float(tau),
        f"top{k}_overlap": len(set(top_ref) & set(top_other)) / len(top_ref),
        "max_abs_delta_logit": max(abs(other[d] - ref[d]) for d in docs),
        "pairs_equal": sum(1 for d in docs if other[d] == ref[d]),
        "pairs": len(docs),
    }


def logit_agreement(qids: Sequence[str], ref: Logits, other: Logits, k: int = 10) -> dict:
    """Every query's agreement, and the smallest, median and mean over queries."""
    per = {q: query_agreement(ref[q], other[q], k) for q in qids}

    def over(key):
        vals = [per[q][key] for q in qids]
        return {"min": min(vals), "median": statistics.median(vals), "mean": bs.seq_mean(vals)}

    return {
        "per_query": per,
        "kendall_tau_b": over("kendall_tau_b"),
        f"top{k}_overlap": over(f"top{k}_overlap"),
        "max_abs_delta_logit": max(per[q]["max_abs_delta_logit"] for q in qids),
        "pairs_equal": sum(per[q]["pairs_equal"] for q in qids),
        "pairs": sum(per[q]["pairs"] for q in qids),
    }


def conclusion(
    qids: Sequence[str],
    groups: Sequence[Sequence[str]],
    ref_table: Mapping,
    other_table: Mapping,
    plan: analysis.AnalysisPlan,
    tolerated: Mapping[str, float],
) -> dict:
    """Both scorers' analyses on the same groups and draws, the interval of the difference of their primary
    deltas, and which verdicts (every comparison's, every guardrail's) changed."""
    ids = group_ids(groups)
    ref = analysis.analyse(qids, ref_table, groups, ids, plan=plan)[0]
    other = analysis.analyse(qids, other_table, groups, ids, plan=plan)[0]
    guard_ref, guard_other = analysis.guardrails(ref, tolerated), analysis.guardrails(other, tolerated)
    a, b = plan.comparisons[plan.primary]
    diff = [
        o - r
        for o, r in zip(
            analysis.deltas(other_table, qids, a, b, plan.metric),
            analysis.deltas(ref_table, qids, a, b, plan.metric),
        )
    ]
    g_idx, _ = bs.draw_indices(plan.seed, len(groups), len(qids), plan.B)  # the analyses' own grouped draws
    iv = bs.interval(
        bs.grouped_replicates(diff, bs.group_positions(qids, groups), g_idx).tolist(), plan.percentiles
    )
    changed = [
        f"{name}.{v}"
        for name in plan.comparisons
        for v in VERDICTS
        if ref["comparisons"][name][v] != other["comparisons"][name][v]
    ]
    changed += [
        f"guardrail {name}.pass" for name in tolerated if guard_ref[name]["pass"] != guard_other[name]["pass"]
    ]
    return {
        "primary": plan.primary,
        "metric": plan.metric,
        "reference": _primary(ref, plan.primary),
        "other": _primary(other, plan.primary),
        "difference": {
            "mean": bs.seq_mean(diff),
            "grouped_interval": [iv.lower, iv.upper],
            "covers_0": iv.covers(0.0),
            "definition": "per query: the other scorer's primary delta - the reference's; "
            "grouped paired bootstrap with the analyses' own draws",
        },
        "guardrails": {"reference": guard_ref, "other": guard_other},
        "verdicts_changed": changed,
        "conclusion_retained": not changed,
    }


def side_problems(backend: str, pin_sha256: str, ref: Mapping, other: Mapping) -> list[str]:
    """Why two audited runs are not the torch run and the ``backend`` run of ONE model: each side is
    ``{"manifest", "verdict", "labels"}`` (its audited manifest, its audit verdict, the set of its pairs'
    model labels). Both audits re-inferred with the same model files (every file's sha256, not the model's
    name). The torch side names no backend; the other names ``backend`` and its pinned file; both
    audits re-inferred a sample, the backend's with exactly that file, which its audit also made again from
    the model by the recipe (the pin is the recipe's file)."""
    mr, mo = ref["manifest"], other["manifest"]
    same = ("model_identity", "model_weights_sha256", "scorer", "kind")  # the pins: the inputs' sha256
    out = [f"manifest {k}: {mr.get(k)!r} (torch) against {mo.get(k)!r}"
           for k in same if mr.get(k) != mo.get(k)]
    if "backend" in mr.get("settings", {}):
        out.append(f"the torch side's settings name backend {mr['settings']['backend']!r}")
    if mo.get("settings", {}).get("backend") != backend:
        out.append(f"the {backend} side's settings name backend {mo.get('settings', {}).get('backend')!r}")
    model, weights = mr.get("model_identity"), mr.get("model_weights_sha256")
    derived_label = f"{model} {backend}:sha256:{pin_sha256} weights-sha256:{weights}"
    torch_label = f"{model} weights-sha256:{weights}"
    for name, side, want in (("torch", ref, torch_label), (backend, other, derived_label)):
        if side["labels"] != {want}:
            out.append(f"the {name} side's pairs were scored by {sorted(side['labels'])[:2]}, not {want!r}")
    stages = [(s["verdict"].get("info") or {}).get("reinfer") or {} for s in (ref, other)]
    files = [st.get("model_files_sha256") for st in stages]
    if not files[0] or files[0] != files[1]:  # one model: every file (a name can be pinned to other files)
        out.append(f"the two audits re-inferred with other model files (sha256 of every file: torch "
                   f"{files[0]}, {backend} {files[1]})")
    sides = (("torch", ref, stages[0], None), (backend, other, stages[1], pin_sha256))
    for name, side, stage, derived in sides:
        problem = audited.reinfer_problem(side["verdict"])
        if problem:
            out.append(f"the {name} side: {problem}")
        child = (stage.get("child") or {}).get("derived") or {}
        if stage.get("asked") and child.get("sha256") != derived:
            out.append(f"the {name} side's audit re-inferred with derived file {child.get('sha256')!r}, "
                       f"not {derived!r}")
        if stage.get("asked") and child.get("rederived_sha256") != derived:
            out.append(f"the {name} side's audit made the derived file again with sha256 "
                       f"{child.get('rederived_sha256')!r}, not the pin's {derived!r}")
    return out


def _primary(summary: Mapping, primary: str) -> dict:
    c = summary["comparisons"][primary]
    return {
        "means": {m: summary["methods"][m]["mean"] for m in names.METHODS},
        "primary_mean": c["mean"],
        "grouped_interval": c["grouped_interval"],
        **{v: c[v] for v in VERDICTS},
    }
