"""The paired analysis of one run: per-method means, paired comparisons with grouped and
query-level bootstrap intervals, and the diagnostics (``analyse``); the declared evaluation
statistics (``evaluation_statistics``: McNemar, chance level, slices, the analysis plan, power).
Pure: tables in, numbers out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..core import names
from ..core.names import BLEND, CE, FIRST_REL_RANK, METHODS, RRF, column
from . import bootstrap as bs
from . import evalstats as es
from .grouping import size_histogram


def deltas(table: Mapping[str, Mapping[str, float]], qids: Sequence[str], a: str, b: str,
           metric: str) -> list[float]:
    """Per-query paired differences Δ_q = M_a(q) - M_b(q), in the order of ``qids``."""
    return [table[q][column(a, metric)] - table[q][column(b, metric)] for q in qids]


@dataclass(frozen=True)
class AnalysisPlan:
    """What the paired analysis computes: the comparisons (name -> (a, b), Δ = a - b), the primary
    one, the metric, the bootstrap (B, seed, percentiles), the practical threshold, and the other
    per-query measures whose means are reported."""

    comparisons: Mapping[str, tuple[str, str]]
    primary: str
    metric: str
    B: int
    seed: int
    percentiles: tuple[float, float]
    threshold: float
    other_metrics: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, settings: Mapping) -> AnalysisPlan:
        """From ``config.run_settings`` (the manifest's settings)."""
        ms = names.measures(settings["metrics"])
        return cls(comparisons={k: tuple(v) for k, v in settings["comparisons"]["all"].items()},
                   primary=settings["comparisons"]["primary"], metric=str(ms[0]), B=settings["bootstrap_B"],
                   seed=settings["bootstrap_seed"], percentiles=tuple(settings["percentiles"]),
                   threshold=settings["threshold"], other_metrics=tuple(str(x) for x in ms[1:-1]))


def _summary_head(qids: Sequence[str], table: Mapping[str, Mapping[str, float]],
                  groups: Sequence[Sequence[str]], plan: AnalysisPlan) -> dict:
    """The summary's header (sizes, group-size histogram, bootstrap description, threshold, primary) and
    the per-method means of the metric and of the other measures; ``comparisons`` still empty."""
    metric, other_metrics = plan.metric, plan.other_metrics
    per_method = {m: [table[q][column(m, metric)] for q in qids] for m in METHODS}
    return {
        "metric": metric, "n_queries": len(qids), "n_groups": len(groups),
        "group_size_histogram": {str(k): v for k, v in size_histogram(groups).items()},
        "bootstrap": {"B": plan.B, "seed": plan.seed, "percentiles": list(plan.percentiles),
                      "generator": "numpy.random.default_rng(seed); grouped = integers(0, G, (B, G)); then "
                                   "query = integers(0, n, (B, n))",
                      "estimator": "sum over drawn groups of the group's summed delta / sum of "
                                   "drawn group sizes"},
        "threshold": plan.threshold, "primary": plan.primary,
        "methods": {m: {"mean": bs.seq_mean(per_method[m]),
                        **{f"mean_{x}": bs.seq_mean(table[q][column(m, x)] for q in qids)
                           for x in other_metrics}}
                    for m in METHODS},
        "comparisons": {},
    }


def _comparison_block(d: Sequence[float], a: str, b: str, grouped: np.ndarray, query: np.ndarray,
                      positions, n_groups: int, group_ids: Sequence[str], plan: AnalysisPlan) -> dict:
    """One comparison (Δ = a - b per query): mean, grouped and query-level intervals of its replicates,
    the threshold checks, W/T/L and the leave-one-group-out influence diagnostic."""
    percentiles, threshold = plan.percentiles, plan.threshold
    gi, qi = bs.interval(grouped.tolist(), percentiles), bs.interval(query.tolist(), percentiles)
    w, t, l = bs.wins_ties_losses(d)
    logo = bs.leave_one_group_out(d, positions) if n_groups > 1 else None
    return {
        "a": a, "b": b, "mean": bs.seq_mean(d),
        "grouped_interval": [gi.lower, gi.upper], "query_interval": [qi.lower, qi.upper],
        "grouped_covers_0": gi.covers(0.0), "grouped_covers_threshold": gi.covers(threshold),
        "query_covers_0": qi.covers(0.0), "query_covers_threshold": qi.covers(threshold),
        "mean_reaches_threshold": bs.seq_mean(d) >= threshold,
        "wins": w, "ties": t, "losses": l,
        "leave_one_group_out": None if logo is None else {
            "min": min(logo), "max": max(logo),
            "min_group": group_ids[int(np.argmin(logo))], "max_group": group_ids[int(np.argmax(logo))],
            "note": "influence diagnostic (mean with each evidence group removed), NOT an interval"},
    }


def _worst_primary(qids: Sequence[str], table: Mapping[str, Mapping[str, float]], plan: AnalysisPlan,
                   first_rel: Mapping[str, Mapping[str, int | None]] | None) -> list[dict]:
    """The three worst queries of the primary comparison (smallest Δ, ties in query order), with both
    methods' values and, when given, their first relevant ranks."""
    metric = plan.metric
    a, b = plan.comparisons[plan.primary]
    prim = dict(zip(qids, deltas(table, qids, a, b, metric)))
    position = {q: i for i, q in enumerate(qids)}
    order = sorted(qids, key=lambda q: (prim[q], position[q]))
    return [{
        "qid": q, "delta": prim[q], **{column(m, metric): table[q][column(m, metric)] for m in (a, b)},
        **({column(m, FIRST_REL_RANK): first_rel[q][m] for m in (a, b)} if first_rel else {}),
    } for q in order[:3]]


def _repair(qids: Sequence[str], table: Mapping[str, Mapping[str, float]], metric: str) -> dict:
    """CE vs RRF, and what the blend does to those queries: repaired CE losses, weakened CE wins."""
    ce_, rrf_, blend_ = (column(m, metric) for m in (CE, RRF, BLEND))
    ce_loss = [q for q in qids if table[q][ce_] < table[q][rrf_]]
    ce_win = [q for q in qids if table[q][ce_] > table[q][rrf_]]
    return {
        "ce_losses_vs_rrf": len(ce_loss),
        "repaired_by_blend": sum(1 for q in ce_loss if table[q][blend_] > table[q][ce_]),
        "ce_wins_vs_rrf": len(ce_win),
        "weakened_by_blend": sum(1 for q in ce_win if table[q][blend_] < table[q][ce_]),
        "definition": "CE loss/win = CE metric < / > RRF metric; repaired = blend > CE among CE losses; "
                      "weakened = blend < CE among CE wins",
    }


def analyse(qids: Sequence[str], table: Mapping[str, Mapping[str, float]], groups: Sequence[Sequence[str]],
            group_ids: Sequence[str], *, plan: AnalysisPlan,
            first_rel: Mapping[str, Mapping[str, int | None]] | None = None):
    """Returns (summary dict, grouped index matrix, query index matrix, {column: replicate array}).

    ``table[qid][f"{method}_{measure}"]`` holds per-query values; ``first_rel[qid][method]`` the
    first relevant rank (for the worst-query audit).
    """
    positions = bs.group_positions(qids, groups)
    g_idx, q_idx = bs.draw_indices(plan.seed, len(groups), len(qids), plan.B)
    summary = _summary_head(qids, table, groups, plan)
    replicates = {}
    for name, (a, b) in plan.comparisons.items():
        d = deltas(table, qids, a, b, plan.metric)
        grouped = bs.grouped_replicates(d, positions, g_idx)
        query = bs.query_replicates(d, q_idx)
        replicates[f"grouped_{name}"] = grouped
        replicates[f"query_{name}"] = query
        summary["comparisons"][name] = _comparison_block(d, a, b, grouped, query, positions, len(groups),
                                                         group_ids, plan)
    # worst queries of the primary comparison and the repair / weakening counts
    summary["worst_primary"] = _worst_primary(qids, table, plan, first_rel)
    summary["repair"] = _repair(qids, table, plan.metric)
    return summary, g_idx, q_idx, replicates


# ------------------------------------------------------------------------ evaluation statistics --
@dataclass(frozen=True)
class _StatisticsInput:
    """What the evaluation statistics read, gathered once (``_statistics_input``): the analysed queries,
    the per-query table, ``counts[q] = (n_relevant, n_relevant_in_candidates)``, the first relevant
    ranks, the evidence groups, the plan's comparisons and metric, and two derived lookups: the group
    of each query and the queries of multi-query groups."""

    qids: Sequence[str]
    table: Mapping[str, Mapping[str, float]]
    counts: Mapping[str, tuple[int, int]]
    first_rel: Mapping[str, Mapping[str, int | None]]
    groups: Sequence[Sequence[str]]
    comparisons: Mapping[str, tuple[str, str]]
    metric: str
    group_of: Mapping[str, int]
    multi: set

    @property
    def n(self) -> int:
        return len(self.qids)


def _statistics_input(qids: Sequence[str], table: Mapping[str, Mapping[str, float]], *,
                      counts: Mapping[str, tuple[int, int]],
                      first_rel: Mapping[str, Mapping[str, int | None]], groups: Sequence[Sequence[str]],
                      plan: AnalysisPlan) -> _StatisticsInput:
    """The inputs of ``evaluation_statistics`` with the group lookups derived."""
    return _StatisticsInput(qids=qids, table=table, counts=counts, first_rel=first_rel, groups=groups,
                            comparisons=plan.comparisons, metric=plan.metric,
                            group_of={q: i for i, g in enumerate(groups) for q in g},
                            multi={q for g in groups if len(g) > 1 for q in g})


@dataclass(frozen=True)
class EvaluationStatistics:
    """The evaluation statistics of one run, one field per section of summary.json's ``evalstats``."""

    mcnemar: dict
    chance: dict
    slices: dict
    plan: dict
    power: dict | None

    def as_dict(self) -> dict:
        return {"mcnemar": self.mcnemar, "chance": self.chance, "slices": self.slices, "plan": self.plan,
                "power": self.power}


def _mcnemar_section(inp: _StatisticsInput, outcome: str) -> dict:
    """Exact McNemar per comparison on the declared binary outcome (success@1: the rank-1 document is
    relevant), with the discordant queries' evidence groups."""
    qids, first_rel = inp.qids, inp.first_rel
    success = {m: [first_rel[q][m] == 1 for q in qids] for m in METHODS}
    mc = {}
    for name, (a, b) in inp.comparisons.items():
        c = es.paired_binary_counts(success[a], success[b])
        disc = [q for q, x, y in zip(qids, success[a], success[b]) if x != y]
        mc[name] = {**c, "p": es.exact_mcnemar(c["gained"], c["lost"]),
                    "discordant_in_multi_query_groups": sum(1 for q in disc if q in inp.multi),
                    "discordant_groups": len({inp.group_of[q] for q in disc})}
    return {"outcome": outcome, "comparisons": mc,
            "assumption": "exact McNemar treats queries as independent; queries in one evidence group "
                          "share relevant documents and are not. The grouped bootstrap is the primary "
                          "uncertainty statement; this test is a secondary, binary view."}


def _chance_section(inp: _StatisticsInput, k: int, depth: int) -> dict:
    """The chance level of the candidate pool (how hard is the pool?) beside the observed success@k."""
    qids, counts, first_rel, n = inp.qids, inp.counts, inp.first_rel, inp.n
    hit = [es.chance_hit_at_k(depth, counts[q][1], k) for q in qids]
    rec = [es.chance_recall_at_k(depth, counts[q][1], counts[q][0], k) for q in qids]
    return {
        "k": k, "candidates_per_query": depth,
        "mean_chance_success": bs.seq_mean(hit), "mean_chance_recall": bs.seq_mean(rec),
        "observed_success": {m: sum(1 for q in qids if first_rel[q][m] is not None
                                    and first_rel[q][m] <= k) / n
                             for m in METHODS},
        "queries_without_relevant_candidate": sum(1 for q in qids if counts[q][1] == 0),
        "definition": "chance success@k = 1 - C(N-m, k)/C(N, k) for m relevant among N candidates (random "
                      "order); chance recall@k = min(k, N)/N * m/|P|",
    }


def _slice_family(inp: _StatisticsInput, fam: str, weights: Mapping[str, float]) -> dict:
    """One declared slice family: per-slice means, raw population mean, declared-weight (stratified) mean."""
    qids, table, metric, n = inp.qids, inp.table, inp.metric, inp.n
    members = {s: [] for s in weights}
    for q in qids:
        members[es.assign_slice(fam, *inp.counts[q])].append(q)
    fam_out = {"slices": {}, "raw_mean": {}, "declared_weight_mean": {}}
    for s, qs in members.items():
        fam_out["slices"][s] = {"n": len(qs), "weight": weights[s], "population_share": len(qs) / n,
                                "means": {m: (bs.seq_mean(table[q][column(m, metric)] for q in qs) if qs
                                              else None)
                                          for m in METHODS}}
    for m in METHODS:
        fam_out["raw_mean"][m] = bs.seq_mean(table[q][column(m, metric)] for q in qids)
        fam_out["declared_weight_mean"][m] = es.stratified_mean(
            {s: fam_out["slices"][s]["means"][m] for s in weights}, weights)
    return fam_out


def guardrails(summary: Mapping, tolerated: Mapping[str, float]) -> dict:
    """Each guardrail comparison passes when its grouped interval's lower bound >= -tolerated loss."""
    guard = {}
    for name, loss in tolerated.items():
        lower = summary["comparisons"][name]["grouped_interval"][0]
        guard[name] = {"tolerated_loss": loss, "grouped_lower": lower,
                       "mean": summary["comparisons"][name]["mean"], "pass": lower >= -loss,
                       "rule": "passes when the grouped interval's lower bound >= -tolerated loss"}
    return guard


def _exploratory_tests(inp: _StatisticsInput, ev: Mapping) -> list[dict]:
    """Exploratory per-slice comparisons: an exact sign test each, p adjusted (Holm, BH) over every
    non-empty slice's test; an empty slice is no test and not in the family."""
    explo = []
    for fam in ev["exploratory"]["families"]:
        for s in ev["slices"][fam]:
            qs = [q for q in inp.qids if es.assign_slice(fam, *inp.counts[q]) == s]
            for name in ev["exploratory"]["comparisons"]:
                a, b = inp.comparisons[name]
                d = deltas(inp.table, qs, a, b, inp.metric)
                st = es.sign_test(d) if d else {"wins": 0, "losses": 0, "ties": 0, "p": None}
                explo.append({"family": fam, "slice": s, "comparison": name, "n": len(qs),
                              "mean_delta": bs.seq_mean(d) if d else None, **st})
    tested = [e for e in explo if e["p"] is not None]  # an empty slice is no test and not in the family
    ps = [e["p"] for e in tested]
    for e in explo:
        e["p_holm"] = e["p_bh"] = None
    for e, h, q in zip(tested, es.holm(ps), es.benjamini_hochberg(ps)):
        e["p_holm"], e["p_bh"] = h, q
    return explo


def _plan_section(inp: _StatisticsInput, summary: Mapping, ev: Mapping) -> dict:
    """The analysis plan: primary, guardrails (pass/fail), exploratory per-slice comparisons (Holm, BH)."""
    return {"primary": {"comparison": summary["primary"], "metric": inp.metric},
            "guardrails": guardrails(summary, ev["guardrails"]), "exploratory": _exploratory_tests(inp, ev),
            "exploratory_test": "exact sign test (wins vs losses of the per-query Δ; ties dropped); "
                                "p adjusted over all non-empty exploratory tests with Holm and "
                                "Benjamini-Hochberg"}


def _power_section(inp: _StatisticsInput, primary: str, power_cfg: Mapping) -> dict | None:
    """The minimum detectable primary Δ of the confirmation set from the grouped variance
    (``evalstats.power_block``)."""
    a, b = inp.comparisons[primary]
    pos = {q: i for i, q in enumerate(inp.qids)}
    return es.power_block(deltas(inp.table, inp.qids, a, b, inp.metric),
                          [[pos[q] for q in g] for g in inp.groups], power_cfg)


def evaluation_statistics(qids: Sequence[str], table: Mapping[str, Mapping[str, float]], *,
                          counts: Mapping[str, tuple[int, int]],
                          first_rel: Mapping[str, Mapping[str, int | None]], groups: Sequence[Sequence[str]],
                          plan: AnalysisPlan, summary: Mapping, ev: Mapping, depth: int) -> dict:
    """The evaluation statistics of one run. ``counts[q] = (n_relevant, n_relevant_in_candidates)``."""
    inp = _statistics_input(qids, table, counts=counts, first_rel=first_rel, groups=groups, plan=plan)
    return EvaluationStatistics(
        mcnemar=_mcnemar_section(inp, ev["binary_outcome"]),
        chance=_chance_section(inp, ev["chance_k"], depth),
        slices={fam: _slice_family(inp, fam, weights) for fam, weights in ev["slices"].items()},
        plan=_plan_section(inp, summary, ev),
        power=_power_section(inp, summary["primary"], ev["power"]),
    ).as_dict()
