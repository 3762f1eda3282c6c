"""The paired analysis (rerank_study.stats.analysis): ``analyse`` and ``evaluation_statistics`` on a small
hand-made
run (6 queries in 3 evidence groups, dyadic metric values so every sum is exact), with the expectations
computed by hand (the arithmetic in the comments) or by an independent library: numpy's default_rng for the
index matrices, numpy.percentile for the interval ends, scipy's binomtest / hypergeom and statsmodels'
multipletests for the McNemar, sign-test, chance and multiplicity numbers, statistics.NormalDist for the
power. Exact zeros are ties (W/T/L and the sign test), never wins or losses."""

from __future__ import annotations

import math
from fractions import Fraction
from statistics import NormalDist

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from rerank_study.stats import analysis

METHODS = ("rrf", "ce", "blend")
QIDS = ["q2", "q10", "q1", "q3", "q7", "q5"]          # the analysed order (NOT the string order)
GROUPS = [["q2", "q1"], ["q10"], ["q3", "q7", "q5"]]   # positions [0, 2], [1], [3, 4, 5]
GIDS = ["G001", "G002", "G003"]
NDCG = {  # q: (rrf, ce, blend) nDCG@10
    "q2": (0.5, 0.75, 0.75), "q10": (0.25, 0.5, 0.5), "q1": (1.0, 0.5, 0.75),
    "q3": (0.0, 0.0, 0.25), "q7": (0.5, 1.0, 0.5), "q5": (0.75, 0.5, 0.5)}
RECALL = {"q2": (1.0, 1.0, 1.0), "q10": (0.5, 1.0, 1.0), "q1": (1.0, 1.0, 1.0),
          "q3": (0.0, 0.0, 0.0), "q7": (1.0, 1.0, 1.0), "q5": (0.5, 1.0, 0.5)}
MRR = {"q2": (0.5, 1.0, 1.0), "q10": (1.0, 0.25, 1.0), "q1": (1.0, 0.5, 1.0),
       "q3": (0.0, 0.0, 0.0), "q7": (0.25, 1.0, 1.0), "q5": (0.25, 1.0, 1.0)}
TABLE = {q: {**{f"{m}_ndcg@10": NDCG[q][i] for i, m in enumerate(METHODS)},
             **{f"{m}_recall@10": RECALL[q][i] for i, m in enumerate(METHODS)},
             **{f"{m}_mrr@10": MRR[q][i] for i, m in enumerate(METHODS)}} for q in QIDS}
FIRST_REL = {  # q: first relevant rank per method (None: no relevant candidate)
    "q2": {"rrf": 2, "ce": 1, "blend": 1}, "q10": {"rrf": 1, "ce": 4, "blend": 1},
    "q1": {"rrf": 1, "ce": 2, "blend": 1}, "q3": {"rrf": None, "ce": None, "blend": None},
    "q7": {"rrf": 4, "ce": 1, "blend": 1}, "q5": {"rrf": 3, "ce": 1, "blend": 1}}
# (|P|, in candidates)
COUNTS = {"q2": (1, 1), "q10": (2, 2), "q1": (3, 1), "q3": (2, 0), "q7": (1, 1), "q5": (4, 2)}
COMPARISONS = {"blend-ce": ("blend", "ce"), "blend-rrf": ("blend", "rrf"), "ce-rrf": ("ce", "rrf")}
# per-query Δ in QIDS order (by hand from NDCG):
#   blend-ce : 0, 0, +.25, +.25, -.5, 0       sum 0     -> mean 0.0; W 2, T 3 (exact zeros), L 1
#   blend-rrf: +.25, +.25, -.25, +.25, 0, -.25 sum .25  -> mean .25/6; W 3, T 1, L 2
#   ce-rrf   : +.25, +.25, -.5, 0, +.5, -.25   sum .25  -> mean .25/6; W 3, T 1, L 2
DELTAS = {"blend-ce": [0.0, 0.0, 0.25, 0.25, -0.5, 0.0], "blend-rrf": [0.25, 0.25, -0.25, 0.25, 0.0, -0.25],
          "ce-rrf": [0.25, 0.25, -0.5, 0.0, 0.5, -0.25]}
POSITIONS = [[0, 2], [1], [3, 4, 5]]
EV = {"binary_outcome": "success@1", "chance_k": 2,
      "slices": {"relevant_count": {"one": 0.5, "several": 0.5},
                 "candidate_coverage": {"all": 0.5, "partly": 0.5, "none": 0.0}},
      "guardrails": {"blend-rrf": 0.02, "ce-rrf": 0.01},
      "exploratory": {"comparisons": ["blend-ce"], "families": ["relevant_count", "candidate_coverage"]},
      "power": {"alpha": 0.05, "power": 0.8, "confirm_n": 300}}


def plan(**kw) -> analysis.AnalysisPlan:
    base = dict(comparisons=COMPARISONS, primary="blend-ce", metric="ndcg@10", B=7, seed=110,
                percentiles=(2.5, 97.5), threshold=0.01, other_metrics=("recall@10", "mrr@10"))
    return analysis.AnalysisPlan(**{**base, **kw})


def numpy_draws(seed, G, n, B):
    rng = np.random.default_rng(seed)
    return rng.integers(0, G, size=(B, G)), rng.integers(0, n, size=(B, n))


def loop_replicates(d, positions, g_idx, q_idx):
    """Both schemes by plain loops: Σ drawn group sums / Σ drawn sizes; Σ drawn Δ / n."""
    grouped, query = [], []
    for row in g_idx.tolist():
        num, den = 0.0, 0
        for g in row:
            s = 0.0
            for i in positions[g]:
                s += d[i]
            num += s
            den += len(positions[g])
        grouped.append(num / den)
    for row in q_idx.tolist():
        num = 0.0
        for i in row:
            num += d[i]
        query.append(num / len(row))
    return grouped, query


# ------------------------------------------------------------------------------ plan, deltas --
def test_plan_from_settings_takes_the_primary_metric_first_and_the_other_measures_without_the_rank():
    settings = {"metrics": {"ndcg_k": 5, "recall_ks": [5, 20], "mrr_k": 3},
                "comparisons": {"primary": "blend-ce", "all": {"blend-ce": ["blend", "ce"],
                                                               "ce-rrf": ["ce", "rrf"]}},
                "bootstrap_B": 11, "bootstrap_seed": 3, "percentiles": [5, 95], "threshold": 0.02}
    p = analysis.AnalysisPlan.from_settings(settings)
    assert p == analysis.AnalysisPlan(
        comparisons={"blend-ce": ("blend", "ce"), "ce-rrf": ("ce", "rrf")}, primary="blend-ce",
        metric="ndcg@5", B=11, seed=3, percentiles=(5, 95), threshold=0.02,
        other_metrics=("recall@5", "recall@20", "capped_recall@5", "capped_recall@20", "mrr@3"))
    assert type(p.comparisons["ce-rrf"]) is tuple and type(p.percentiles) is tuple and type(p.metric) is str
    assert all(type(x) is str for x in p.other_metrics)


def test_deltas_are_a_minus_b_in_the_order_of_the_given_queries():
    assert analysis.deltas(TABLE, QIDS, "blend", "ce", "ndcg@10") == DELTAS["blend-ce"]
    assert analysis.deltas(TABLE, ["q7", "q1"], "ce", "rrf", "ndcg@10") == [0.5, -0.5]   # 1 - .5, .5 - 1
    assert analysis.deltas(TABLE, ["q10"], "rrf", "ce", "mrr@10") == [0.75]                # 1 - .25


# ---------------------------------------------------------------------------------- analyse --
def test_analyse_draws_both_index_matrices_from_one_seeded_generator_and_saves_every_replicate():
    summary, g_idx, q_idx, reps = analysis.analyse(QIDS, TABLE, GROUPS, GIDS, plan=plan(),
                                                   first_rel=FIRST_REL)
    want_g, want_q = numpy_draws(110, 3, 6, 7)          # grouped (B x G) first, then query-level (B x n)
    assert g_idx.tolist() == want_g.tolist() and q_idx.tolist() == want_q.tolist()
    assert sorted(reps) == sorted(f"{s}_{c}" for s in ("grouped", "query") for c in COMPARISONS)
    for name, d in DELTAS.items():
        grouped, query = loop_replicates(d, POSITIONS, want_g, want_q)
        assert reps[f"grouped_{name}"].tolist() == grouped      # bit for bit
        assert reps[f"query_{name}"].tolist() == query


def test_analyse_summary_head_histogram_bootstrap_and_method_means():
    summary, *_ = analysis.analyse(QIDS, TABLE, GROUPS, GIDS, plan=plan(), first_rel=FIRST_REL)
    assert list(summary) == ["metric", "n_queries", "n_groups", "group_size_histogram", "bootstrap",
                             "threshold", "primary", "methods", "comparisons", "worst_primary", "repair"]
    assert (summary["metric"], summary["n_queries"], summary["n_groups"]) == ("ndcg@10", 6, 3)
    assert summary["group_size_histogram"] == {"1": 1, "2": 1, "3": 1}
    assert summary["bootstrap"] == {
        "B": 7, "seed": 110, "percentiles": [2.5, 97.5],
        "generator": "numpy.random.default_rng(seed); grouped = integers(0, G, (B, G)); then query = "
                     "integers(0, n, (B, n))",
        "estimator": "sum over drawn groups of the group's summed delta / sum of drawn group sizes"}
    assert summary["threshold"] == 0.01 and summary["primary"] == "blend-ce"
    # means: nDCG rrf (.5+.25+1+0+.5+.75)/6 = 3/6; ce (.75+.5+.5+0+1+.5)/6 = 3.25/6; blend
    # (.75+.5+.75+.25+.5+.5)/6 recall rrf 4/6, ce 5/6, blend 4.5/6; mrr rrf (.5+1+1+0+.25+.25)/6 = 3/6, ce
    # 3.75/6, blend 5/6
    assert summary["methods"] == {
        "rrf": {"mean": 3 / 6, "mean_recall@10": 4 / 6, "mean_mrr@10": 3 / 6},
        "ce": {"mean": 3.25 / 6, "mean_recall@10": 5 / 6, "mean_mrr@10": 3.75 / 6},
        "blend": {"mean": 3.25 / 6, "mean_recall@10": 4.5 / 6, "mean_mrr@10": 5 / 6}}


def test_analyse_comparison_blocks_mean_intervals_flags_wins_ties_losses_and_leave_one_group_out():
    summary, _, _, reps = analysis.analyse(QIDS, TABLE, GROUPS, GIDS, plan=plan(), first_rel=FIRST_REL)
    note = "influence diagnostic (mean with each evidence group removed), NOT an interval"
    # leave-one-group-out by hand (sequential sums of the remaining queries / their count):
    #   blend-ce: -G001 -> (0 + .25 - .5 + 0)/4 = -.0625; -G002 -> (0 + .25 + .25 - .5 + 0)/5 = 0; -G003 ->
    #   .25/3 blend-rrf: -G001 -> (.25 + .25 + 0 - .25)/4 = .0625; -G002 -> 0/5 = 0; -G003 -> .25/3
    #   ce-rrf: -G001 -> (.25 + 0 + .5 - .25)/4 = .125; -G002 -> 0/5; -G003 -> (.25 + .25 - .5)/3 = 0:
    #   the minimum ties between G002 and G003: the first group is named
    logo = {"blend-ce": (-0.0625, 0.25 / 3, "G001", "G003"), "blend-rrf": (0.0, 0.25 / 3, "G002", "G003"),
            "ce-rrf": (0.0, 0.125, "G002", "G001")}
    wtl = {"blend-ce": (2, 3, 1), "blend-rrf": (3, 1, 2), "ce-rrf": (3, 1, 2)}
    means = {"blend-ce": 0.0, "blend-rrf": 0.25 / 6, "ce-rrf": 0.25 / 6}
    for name, (a, b) in COMPARISONS.items():
        g, q = reps[f"grouped_{name}"], reps[f"query_{name}"]
        gi = [float(np.percentile(g, 2.5)), float(np.percentile(g, 97.5))]
        qi = [float(np.percentile(q, 2.5)), float(np.percentile(q, 97.5))]
        lo, hi, lo_g, hi_g = logo[name]
        w, t, l = wtl[name]
        assert summary["comparisons"][name] == {
            "a": a, "b": b, "mean": means[name], "grouped_interval": gi, "query_interval": qi,
            "grouped_covers_0": gi[0] <= 0 <= gi[1], "grouped_covers_threshold": gi[0] <= 0.01 <= gi[1],
            "query_covers_0": qi[0] <= 0 <= qi[1], "query_covers_threshold": qi[0] <= 0.01 <= qi[1],
            "mean_reaches_threshold": means[name] >= 0.01, "wins": w, "ties": t, "losses": l,
            "leave_one_group_out": {"min": lo, "max": hi, "min_group": lo_g, "max_group": hi_g, "note": note}}
    # the flags differ across the blocks (so each is pinned both ways)
    assert summary["comparisons"]["blend-rrf"]["mean_reaches_threshold"] is True
    assert summary["comparisons"]["blend-ce"]["mean_reaches_threshold"] is False


def test_a_constant_positive_delta_gives_a_point_interval_excluding_zero_and_meeting_the_threshold():
    table = {q: {"rrf_ndcg@10": 0.25, "ce_ndcg@10": 0.5, "blend_ndcg@10": 0.75} for q in QIDS}
    summary, *_ = analysis.analyse(QIDS, table, GROUPS, GIDS, plan=plan(threshold=0.25, other_metrics=()))
    c = summary["comparisons"]["blend-ce"]              # Δ = .25 everywhere: every replicate is .25
    assert c["grouped_interval"] == c["query_interval"] == [0.25, 0.25] and c["mean"] == 0.25
    assert (c["grouped_covers_0"], c["query_covers_0"]) == (False, False)
    assert (c["grouped_covers_threshold"], c["query_covers_threshold"]) == (True, True)   # closed ends
    assert c["mean_reaches_threshold"] is True          # .25 >= .25
    assert (c["wins"], c["ties"], c["losses"]) == (6, 0, 0)
    c = summary["comparisons"]["blend-rrf"]             # Δ = .5 everywhere: [.5, .5] misses the threshold .25
    assert c["grouped_covers_threshold"] is False and c["mean_reaches_threshold"] is True
    assert summary["methods"] == {"rrf": {"mean": 0.25}, "ce": {"mean": 0.5}, "blend": {"mean": 0.75}}
    zero = {q: {"rrf_ndcg@10": 0.5, "ce_ndcg@10": 0.5, "blend_ndcg@10": 0.5} for q in QIDS}
    c = analysis.analyse(QIDS, zero, GROUPS, GIDS, plan=plan(other_metrics=()))[0]["comparisons"]["ce-rrf"]
    assert (c["wins"], c["ties"], c["losses"]) == (0, 6, 0)   # exact zero differences are ties
    assert c["grouped_covers_0"] is True and c["grouped_covers_threshold"] is False


def test_intervals_use_the_declared_percentiles_of_both_schemes():
    summary, _, _, reps = analysis.analyse(QIDS, TABLE, GROUPS, GIDS,
                                           plan=plan(B=40, percentiles=(10.0, 90.0)))
    for name in COMPARISONS:
        for scheme in ("grouped", "query"):
            r = reps[f"{scheme}_{name}"]
            want = [float(np.percentile(r, 10.0)), float(np.percentile(r, 90.0))]
            assert summary["comparisons"][name][f"{scheme}_interval"] == want
            # the default would differ
            assert want != [float(np.percentile(r, 2.5)), float(np.percentile(r, 97.5))]


def test_two_evidence_groups_have_a_leave_one_group_out_range():
    groups = [["q2", "q10", "q1"], ["q3", "q7", "q5"]]
    summary, *_ = analysis.analyse(QIDS, TABLE, groups, ["G001", "G002"], plan=plan())
    # blend-ce Δ 0, 0, .25 | .25, -.5, 0: without G001 -> -.25/3; without G002 -> .25/3
    logo = summary["comparisons"]["blend-ce"]["leave_one_group_out"]
    assert (logo["min"], logo["max"], logo["min_group"], logo["max_group"]) == (-0.25 / 3, 0.25 / 3,
                                                                                "G001", "G002")


def test_one_evidence_group_has_no_leave_one_group_out():
    summary, g_idx, _, _ = analysis.analyse(QIDS, TABLE, [QIDS], ["G001"], plan=plan())
    assert all(c["leave_one_group_out"] is None for c in summary["comparisons"].values())
    assert g_idx.tolist() == numpy_draws(110, 1, 6, 7)[0].tolist() == [[0]] * 7
    assert summary["group_size_histogram"] == {"6": 1} and summary["n_groups"] == 1


def test_worst_primary_queries_are_the_three_smallest_deltas_with_ties_in_query_order():
    summary, *_ = analysis.analyse(QIDS, TABLE, GROUPS, GIDS, plan=plan(), first_rel=FIRST_REL)
    # blend-ce Δ: q7 -.5 is the worst; then the exact zeros q2, q10, q5 in QUERY order (q2 before q10,
    # although "q10" < "q2" as strings); q5 is the fourth and left out
    assert summary["worst_primary"] == [
        {"qid": "q7", "delta": -0.5, "blend_ndcg@10": 0.5, "ce_ndcg@10": 1.0, "blend_first_rel_rank": 1,
         "ce_first_rel_rank": 1},
        {"qid": "q2", "delta": 0.0, "blend_ndcg@10": 0.75, "ce_ndcg@10": 0.75, "blend_first_rel_rank": 1,
         "ce_first_rel_rank": 1},
        {"qid": "q10", "delta": 0.0, "blend_ndcg@10": 0.5, "ce_ndcg@10": 0.5, "blend_first_rel_rank": 1,
         "ce_first_rel_rank": 4}]
    # another primary, no first relevant ranks given: no rank columns
    s2, *_ = analysis.analyse(QIDS, TABLE, GROUPS, GIDS, plan=plan(primary="ce-rrf"))
    # ce-rrf Δ: q1 -.5, q5 -.25, q3 0
    assert s2["worst_primary"] == [{"qid": "q1", "delta": -0.5, "ce_ndcg@10": 0.5, "rrf_ndcg@10": 1.0},
                                   {"qid": "q5", "delta": -0.25, "ce_ndcg@10": 0.5, "rrf_ndcg@10": 0.75},
                                   {"qid": "q3", "delta": 0.0, "ce_ndcg@10": 0.0, "rrf_ndcg@10": 0.0}]


def test_repair_counts_use_strict_inequalities():
    summary, *_ = analysis.analyse(QIDS, TABLE, GROUPS, GIDS, plan=plan())
    # CE losses vs RRF (ce < rrf): q1 (.5 < 1), q5 (.5 < .75); repaired (blend > ce): q1 (.75 > .5) - q5 ties
    # (.5) CE wins (ce > rrf): q2, q10, q7; weakened (blend < ce): q7 (.5 < 1) - q2 (.75) and q10 (.5) tie
    assert summary["repair"] == {
        "ce_losses_vs_rrf": 2, "repaired_by_blend": 1, "ce_wins_vs_rrf": 3, "weakened_by_blend": 1,
        "definition": "CE loss/win = CE metric < / > RRF metric; repaired = blend > CE among CE losses; "
                      "weakened = blend < CE among CE wins"}


def test_groups_that_do_not_partition_the_queries_are_refused():
    with pytest.raises(ValueError, match="partition"):
        analysis.analyse(QIDS, TABLE, [["q2", "q1"], ["q10"]], ["G001", "G002"], plan=plan())


# -------------------------------------------------------------------------- evaluation statistics --
def summary_for(ev_summary=None):
    return ev_summary or {"primary": "blend-ce", "comparisons": {
        "blend-rrf": {"grouped_interval": [-0.02, 0.3], "mean": 0.1},        # lower = -tolerated: passes
        # just below -0.01: fails
        "ce-rrf": {"grouped_interval": [-0.010000000000000002, 0.2], "mean": 0.05}}}


def evaluation_statistics(qids=QIDS, groups=GROUPS, summary=None, ev=EV):
    return analysis.evaluation_statistics(qids, TABLE, counts=COUNTS, first_rel=FIRST_REL, groups=groups,
                                          plan=plan(), summary=summary_for(summary), ev=ev, depth=4)


def test_evaluation_statistics_has_its_five_sections():
    assert list(evaluation_statistics()) == ["mcnemar", "chance", "slices", "plan", "power"]


def test_mcnemar_on_success_at_1_with_the_discordant_queries_groups():
    mc = evaluation_statistics()["mcnemar"]
    assert mc["outcome"] == "success@1"
    assert mc["assumption"] == ("exact McNemar treats queries as independent; queries in one evidence group "
                                "share relevant documents and are not. The grouped bootstrap is the primary "
                                "uncertainty statement; this test is a secondary, binary view.")
    # success@1 (first relevant rank == 1) in QIDS order: rrf F T T F F F; ce T F F F T T; blend T T T F T T
    # multi-query groups: G001 {q2, q1}, G003 {q3, q7, q5}
    # gained = a yes & b no; lost = a no & b yes; discordant queries -> (in multi-query groups, groups)
    want = {
        "blend-ce": (2, 0, 4, 3, 1, 1, 2),     # gained q10, q1; both yes q2 q7 q5; both no q3; q1 in G001
        "blend-rrf": (3, 0, 3, 2, 1, 3, 2),    # gained q2, q7, q5 (G001, G003, G003)
        "ce-rrf": (3, 2, 1, 0, 1, 4, 3)}       # gained q2 q7 q5, lost q10 q1
    for name, (g, l, u, yy, nn, multi, groups) in want.items():
        p = stats.binomtest(min(g, l), g + l, 0.5).pvalue   # blend-ce: 2/4; blend-rrf: 2/8; ce-rrf: 1
        assert mc["comparisons"][name] == {"gained": g, "lost": l, "unchanged": u, "both_yes": yy,
                                           "both_no": nn, "p": pytest.approx(p, rel=1e-12),
                                           "discordant_in_multi_query_groups": multi,
                                           "discordant_groups": groups}
    assert [mc["comparisons"][n]["p"] for n in want] == [0.5, 0.25, 1.0]


def test_chance_level_beside_the_observed_success_at_k():
    ch = evaluation_statistics()["chance"]
    # chance success@2 of 4 candidates, m relevant among them: 1 - C(4-m, 2)/C(4, 2):
    #   m = 1 -> 1 - 3/6 = 1/2; m = 2 -> 1 - 1/6 = 5/6; m = 0 -> 0  (q2 1, q10 2, q1 1, q3 0, q7 1, q5 2)
    hit = [float(stats.hypergeom(4, m, 2).sf(0)) if m else 0.0 for m in (1, 2, 1, 0, 1, 2)]
    assert hit == pytest.approx([0.5, 5 / 6, 0.5, 0.0, 0.5, 5 / 6], abs=1e-15)
    # chance recall@2 = min(2, 4)/4 * m/|P|: .5*1/1, .5*2/2, .5*1/3, 0, .5*1/1, .5*2/4 -> sum 23/12, mean
    # 23/72
    assert ch["mean_chance_success"] == pytest.approx(float(Fraction(19, 36)), rel=1e-15)   # (19/6) / 6
    assert ch["mean_chance_recall"] == pytest.approx(float(Fraction(23, 72)), rel=1e-15)
    # observed success@2 (rank <= 2, None never): rrf q2 (2) q10 q1 -> 3/6; ce q2 q1 (2) q7 q5 -> 4/6; blend
    # 5/6
    assert ch["observed_success"] == {"rrf": 3 / 6, "ce": 4 / 6, "blend": 5 / 6}
    assert (ch["k"], ch["candidates_per_query"], ch["queries_without_relevant_candidate"]) == (2, 4, 1)
    assert ch["definition"] == ("chance success@k = 1 - C(N-m, k)/C(N, k) for m relevant among N candidates "
                                "(random order); chance recall@k = min(k, N)/N * m/|P|")


def test_slices_per_slice_means_raw_and_declared_weight_means():
    sl = evaluation_statistics()["slices"]
    # relevant_count: one = {q2, q7}; several = {q10, q1, q3, q5}
    one = {"rrf": (0.5 + 0.5) / 2, "ce": (0.75 + 1.0) / 2, "blend": (0.75 + 0.5) / 2}
    several = {"rrf": (0.25 + 1.0 + 0.0 + 0.75) / 4, "ce": (0.5 + 0.5 + 0.0 + 0.5) / 4,
               "blend": (0.5 + 0.75 + 0.25 + 0.5) / 4}
    raw = {"rrf": 3 / 6, "ce": 3.25 / 6, "blend": 3.25 / 6}
    assert sl["relevant_count"] == {
        "slices": {"one": {"n": 2, "weight": 0.5, "population_share": 2 / 6, "means": one},
                   "several": {"n": 4, "weight": 0.5, "population_share": 4 / 6, "means": several}},
        "raw_mean": raw, "declared_weight_mean": {m: 0.5 * one[m] + 0.5 * several[m] for m in METHODS}}
    # candidate_coverage: all (in = |P|) = {q2, q10, q7}; partly = {q1, q5}; none = {q3} (weight 0: left out)
    al = {"rrf": (0.5 + 0.25 + 0.5) / 3, "ce": (0.75 + 0.5 + 1.0) / 3, "blend": (0.75 + 0.5 + 0.5) / 3}
    partly = {"rrf": (1.0 + 0.75) / 2, "ce": (0.5 + 0.5) / 2, "blend": (0.75 + 0.5) / 2}
    assert sl["candidate_coverage"] == {
        "slices": {"all": {"n": 3, "weight": 0.5, "population_share": 3 / 6, "means": al},
                   "partly": {"n": 2, "weight": 0.5, "population_share": 2 / 6, "means": partly},
                   "none": {"n": 1, "weight": 0.0, "population_share": 1 / 6,
                            "means": {"rrf": 0.0, "ce": 0.0, "blend": 0.25}}},
        "raw_mean": raw, "declared_weight_mean": {m: 0.5 * al[m] + 0.5 * partly[m] for m in METHODS}}


def test_guardrails_pass_when_the_grouped_lower_bound_is_at_least_minus_the_tolerated_loss():
    g = evaluation_statistics()["plan"]["guardrails"]
    rule = "passes when the grouped interval's lower bound >= -tolerated loss"
    assert g == {"blend-rrf": {"tolerated_loss": 0.02, "grouped_lower": -0.02, "mean": 0.1, "pass": True,
                               "rule": rule},
                 "ce-rrf": {"tolerated_loss": 0.01, "grouped_lower": -0.010000000000000002, "mean": 0.05,
                            "pass": False, "rule": rule}}


def test_exploratory_sign_tests_treat_exact_zeros_as_ties_and_adjust_over_every_tested_slice():
    pl = evaluation_statistics()["plan"]
    assert pl["primary"] == {"comparison": "blend-ce", "metric": "ndcg@10"}
    assert pl["exploratory_test"] == ("exact sign test (wins vs losses of the per-query Δ; ties dropped); p "
                                      "adjusted over all non-empty exploratory tests with Holm and "
                                      "Benjamini-Hochberg")
    # blend-ce Δ: q2 0, q10 0, q1 .25, q3 .25, q7 -.5, q5 0
    rows = [  # (family, slice, n, mean Δ, wins, losses, ties)
        ("relevant_count", "one", 2, -0.25, 0, 1, 1),           # q2 0, q7 -.5
        ("relevant_count", "several", 4, 0.125, 2, 0, 2),       # q10 0, q1 .25, q3 .25, q5 0
        ("candidate_coverage", "all", 3, -0.5 / 3, 0, 1, 2),    # q2 0, q10 0, q7 -.5
        ("candidate_coverage", "partly", 2, 0.125, 1, 0, 1),    # q1 .25, q5 0
        ("candidate_coverage", "none", 1, 0.25, 1, 0, 0)]       # q3 .25
    ps = [stats.binomtest(min(w, l), w + l, 0.5).pvalue for *_, w, l, _t in rows]   # 1, 2/4, 1, 1, 1
    holm, bh = multipletests(ps, method="holm")[1], multipletests(ps, method="fdr_bh")[1]
    assert len(pl["exploratory"]) == 5
    for e, (fam, s, n, md, w, l, t), p, h, b in zip(pl["exploratory"], rows, ps, holm, bh):
        assert e == {"family": fam, "slice": s, "comparison": "blend-ce", "n": n, "mean_delta": md, "wins": w,
                     "losses": l, "ties": t, "p": pytest.approx(p, rel=1e-12),
                     "p_holm": pytest.approx(h, rel=1e-12), "p_bh": pytest.approx(b, rel=1e-12)}


def test_an_empty_slice_is_no_test_and_not_in_the_adjusted_family():
    # q2 (1, 1), q10 (2, 2), q7 (1, 1): every query covers all its relevant documents -> partly and none empty
    ev = {**EV, "exploratory": {"comparisons": ["blend-ce", "ce-rrf"], "families": ["candidate_coverage"]}}
    st = evaluation_statistics(qids=["q2", "q10", "q7"], groups=[["q2"], ["q10"], ["q7"]], ev=ev)
    cov = st["slices"]["candidate_coverage"]
    assert cov["slices"]["partly"] == {"n": 0, "weight": 0.5, "population_share": 0.0,
                                       "means": {"rrf": None, "ce": None, "blend": None}}
    assert cov["declared_weight_mean"] == {"rrf": None, "ce": None, "blend": None}   # weight .5 on no data
    explo = st["plan"]["exploratory"]
    empty = {"wins": 0, "losses": 0, "ties": 0, "p": None, "mean_delta": None, "p_holm": None, "p_bh": None}
    assert [(e["slice"], e["comparison"]) for e in explo] == [
        ("all", "blend-ce"), ("all", "ce-rrf"), ("partly", "blend-ce"), ("partly", "ce-rrf"),
        ("none", "blend-ce"), ("none", "ce-rrf")]
    for e in explo[2:]:
        assert {k: e[k] for k in empty} == empty and e["n"] == 0
    # the two tested: all/blend-ce Δ (0, 0, -.5) -> W0 L1 T2, p 1; all/ce-rrf Δ (.25, .25, .5) -> W3, p 2/8
    assert (explo[0]["wins"], explo[0]["losses"], explo[0]["ties"], explo[0]["p"]) == (0, 1, 2, 1.0)
    assert (explo[1]["wins"], explo[1]["losses"], explo[1]["ties"], explo[1]["p"]) == (3, 0, 0, 0.25)
    # Holm over the family of TWO: .25 * 2 = .5, then max(.5, 1) = 1; BH: .25 * 2/1 = .5, 1 * 2/2 = 1
    assert [explo[0]["p_holm"], explo[1]["p_holm"]] == [1.0, 0.5]
    assert [explo[0]["p_bh"], explo[1]["p_bh"]] == [1.0, 0.5]


def test_power_is_the_minimum_detectable_primary_delta_from_the_grouped_variance():
    pw = evaluation_statistics()["power"]
    # primary blend-ce Δ = 0, 0, .25, .25, -.5, 0: mean 0; group sums G001 (q2, q1) .25, G002 0, G003 (.25 -
    # .5 + 0) Var = G/(G-1) Σ (S_g - n_g * 0)^2 / n^2 = 3/2 * (.0625 + 0 + .0625) / 36 = .1875/36
    var = 0.1875 / 36
    sd = math.sqrt(6 * var)
    z = NormalDist().inv_cdf(0.975) + NormalDist().inv_cdf(0.8)
    assert pw["alpha"] == 0.05 and pw["power"] == 0.8 and pw["n_development"] == 6 \
        and pw["n_confirmation"] == 300
    assert pw["grouped_variance_of_mean"] == pytest.approx(var, rel=1e-14)
    assert pw["sd_eff"] == pytest.approx(sd, rel=1e-14)
    assert pw["mde_confirmation"] == pytest.approx(z * sd / math.sqrt(300), rel=1e-14)
    assert pw["mde_confirmation"] == pytest.approx((stats.norm.ppf(0.975)
                                                    + stats.norm.ppf(0.8)) * sd / math.sqrt(300),
                                                   rel=1e-12)
    assert evaluation_statistics(groups=[QIDS])["power"] is None      # one group: no grouped variance


def test_power_with_two_groups_uses_the_declared_alpha_and_power_and_states_its_formula():
    ev = {**EV, "power": {"alpha": 0.1, "power": 0.9, "confirm_n": 50}}
    pw = evaluation_statistics(groups=[["q2", "q10", "q1"], ["q3", "q7", "q5"]], ev=ev)["power"]
    # Δ 0, 0, .25 | .25, -.5, 0: mean 0, S = (.25, -.25); Var = 2/1 * (.0625 + .0625) / 36 = .25/36
    sd = math.sqrt(6 * 0.25 / 36)
    z = NormalDist().inv_cdf(1 - 0.1 / 2) + NormalDist().inv_cdf(0.9)
    assert pw["grouped_variance_of_mean"] == pytest.approx(0.25 / 36, rel=1e-14)
    assert pw["mde_confirmation"] == pytest.approx(z * sd / math.sqrt(50), rel=1e-14)
    assert (pw["alpha"], pw["power"], pw["n_confirmation"]) == (0.1, 0.9, 50)
    assert pw["formula"] == ("MDE = (z_{1-alpha/2} + z_{power}) * sd_eff / sqrt(n_conf); sd_eff^2 = n_dev * "
                             "Var(mean Δ), Var(mean Δ) = G/(G-1) * sum_g (S_g - n_g * mean Δ)^2 / n_dev^2 "
                             "(grouped, linearised)")
