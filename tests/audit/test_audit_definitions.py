"""The audit's own definitions (scripts/audit/expected/definitions.py) tested like the library's: every
function against a hand calculation (the arithmetic in the comments) or an independent library - pytrec_eval
(trec_eval) for nDCG, Recall and MRR on graded judgements with relevance 0 and negative ones, numpy.percentile
on adversarial inputs, statsmodels' multipletests for Holm / BH, scipy for the exact McNemar / sign test, the
hypergeometric chance level and connected components. Each test names the branch it pins: a wrong audit
definition must fail here, because the SciFact runs (binary judgements, no judged non-relevant document, few
chains) cannot tell it from the right one.

The module is imported as the audit imports it (tests/conftest.py ``audit_module``)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import pytrec_eval
from conftest import audit_module
from scipy import stats
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from statsmodels.stats.multitest import multipletests

D = audit_module("expected.definitions")


def trec(order: list[str], rels: dict[str, int], measure: str, key: str) -> float:
    """trec_eval's value for ONE ranked list (rank-derived scores n..1, so trec_eval keeps the order)."""
    run = {"q": {d: float(len(order) - i) for i, d in enumerate(order)}}
    return pytrec_eval.RelevanceEvaluator({"q": dict(rels)}, {measure}).evaluate(run)["q"][key]


L2, L3, L4, L5, L6 = (math.log2(x) for x in (2, 3, 4, 5, 6))


# ---------------------------------------------------------------------------------- constants --
def test_method_names_and_the_stand_in_label_are_the_documented_spellings():
    assert D.METHODS == ("rrf", "ce", "blend")
    assert D.STANDIN == "STAND-IN"


# ----------------------------------------------------------------------------- the tie rule --
def test_tie_rule_is_score_descending_then_document_id_as_a_string_descending():
    # b has the top score; a and c tie at 1.0 -> ids descending: "c" > "a"
    assert D.tie_rule_order({"a": 1.0, "b": 2.0, "c": 1.0}) == ["b", "c", "a"]
    # ids compared as STRINGS: "9" > "100" > "10" (numerically it would be 100, 10, 9)
    assert D.tie_rule_order({"10": 0.5, "9": 0.5, "100": 0.5}) == ["9", "100", "10"]
    # 0.0 == -0.0 is a tie (broken by the id); negative scores rank below
    assert D.tie_rule_order({"a": 0.0, "b": -0.0, "z": -1.0, "y": 3.0}) == ["y", "b", "a", "z"]


def test_blend_is_one_over_k_plus_r0_plus_one_over_k_plus_r1_with_r0_the_list_position():
    cands = ["x", "y", "z"]          # r0 = 1, 2, 3 (1-based list order)
    r1 = {"x": 3, "y": 1, "z": 2}    # the CE ranks
    s = D.blend_scores(cands, r1, 60)
    assert s == {"x": 1 / 61 + 1 / 63, "y": 1 / 62 + 1 / 61, "z": 1 / 63 + 1 / 62}
    assert D.blend_scores(cands, r1, 1) == {"x": 1 / 2 + 1 / 4, "y": 1 / 3 + 1 / 2, "z": 1 / 4 + 1 / 3}
    # swapped rank pairs tie exactly (float addition commutes), so the id decides: "b" before "a"
    tied = D.blend_scores(["a", "b"], {"a": 2, "b": 1}, 60)
    assert tied["a"] == tied["b"] == 1 / 61 + 1 / 62
    assert D.tie_rule_order(tied) == ["b", "a"]


# ------------------------------------------------------------------------------------- nDCG --
GRADED = {"a": 2, "b": 1, "c": 0, "d": -1, "e": 1}  # e is relevant but never ranked; c judged 0; d negative


def test_ndcg_has_linear_graded_gains_and_counts_neither_zero_nor_negative_judgements():
    order = ["c", "a", "d", "b", "x"]
    # DCG@3: c (0) at i=0 -> nothing; a (2) at i=1 -> 2/log2(3); d (-1) at i=2 -> nothing (not relevant)
    # IDCG@3: gains of ALL relevant docs sorted [2, 1, 1] -> 2/log2(2) + 1/log2(3) + 1/log2(4)
    want = (2 / L3) / (2 / L2 + 1 / L3 + 1 / L4)
    assert D.ndcg(order, GRADED, 3) == pytest.approx(want, rel=1e-15)
    assert D.ndcg(order, GRADED, 3) == trec(order, GRADED, "ndcg_cut.3", "ndcg_cut_3")
    # @5: + b (1) at i=3 -> 1/log2(5); IDCG has only three relevant gains (e counts, c and d do not)
    want5 = (2 / L3 + 1 / L5) / (2 / L2 + 1 / L3 + 1 / L4)
    assert D.ndcg(order, GRADED, 5) == pytest.approx(want5, rel=1e-15)
    assert D.ndcg(order, GRADED, 5) == trec(order, GRADED, "ndcg_cut.5", "ndcg_cut_5")
    # exponential gain (2^g - 1) would give (3/log2 3 + 1/log2 5) / (3 + 1/log2 3 + 1/log2 4): not this
    assert D.ndcg(order, GRADED, 5) != pytest.approx((3 / L3 + 1 / L5) / (3 + 1 / L3 + 1 / L4), rel=1e-6)


def test_ndcg_ideal_is_cut_at_k_when_there_are_more_relevant_documents_than_k():
    rels = {f"r{i}": 1 for i in range(12)} | {"top": 2, "zero": 0}   # 13 relevant documents, K = 10
    order = ["zero", "top", "r0", "x1", "r1", "x2", "x3", "r2", "x4", "x5", "r3", "r4"]
    dcg = 2 / L3 + 1 / L4 + 1 / L6 + 1 / math.log2(9)                 # top, r0, r1, r2 at i = 1, 2, 4, 7
    idcg = 2 / L2 + sum(1 / math.log2(i + 2) for i in range(1, 10))   # [2, 1 x 9]: ten gains, not thirteen
    assert D.ndcg(order, rels, 10) == pytest.approx(dcg / idcg, rel=1e-15)
    assert D.ndcg(order, rels, 10) == trec(order, rels, "ndcg_cut.10", "ndcg_cut_10")
    # an all-relevant top 3 with 13 relevant documents: the ideal of K = 3 is [2, 1, 1] -> nDCG@3 = 1 exactly
    assert D.ndcg(["top", "r5", "r6", "x"], rels, 3) == 1.0


def test_ndcg_ignores_documents_ranked_after_k_and_an_unjudged_document_has_no_gain():
    rels = {"r": 1}
    assert D.ndcg(["x0", "x1", "r"], rels, 2) == 0.0               # r at rank 3 > K
    assert D.ndcg(["x0", "x1", "r"], rels, 3) == pytest.approx(1 / L4, rel=1e-15)   # (1/log2 4) / (1/log2 2)
    assert D.ndcg(["r", "x"], rels, 10) == 1.0                     # K beyond the list
    assert D.ndcg([], rels, 10) == 0.0


@pytest.mark.parametrize("seed", range(6))
def test_ndcg_recall_and_mrr_equal_trec_eval_on_random_graded_judgements(seed):
    rng = np.random.default_rng(seed)
    docs = [f"d{i}" for i in range(30)]
    for _ in range(25):
        rels = {d: int(g) for d, g in zip(docs, rng.integers(-1, 3, size=30)) if rng.random() < 0.6}
        if not any(g > 0 for g in rels.values()):
            rels["d0"] = 2
        order = [docs[int(i)] for i in rng.permutation(30)[: int(rng.integers(1, 25))]]
        for k in (1, 3, 5, 10, 20):
            assert D.ndcg(order, rels, k) == trec(order, rels, f"ndcg_cut.{k}", f"ndcg_cut_{k}")  # to the bit
            assert D.recall(order, rels, k) == trec(order, rels, f"recall.{k}", f"recall_{k}")
            assert D.mrr(order, rels, k) == trec(order[:k], rels, "recip_rank", "recip_rank")


# ----------------------------------------------------------------------------- Recall@K --
def test_recall_divides_by_every_relevant_document_including_those_outside_the_ranking():
    order = ["c", "a", "d", "b", "x"]
    # P = {a, b, e} (|P| = 3: e is never ranked; c judged 0 and d judged -1 are not in P)
    assert D.recall(order, GRADED, 2) == 1 / 3                    # {a}
    assert D.recall(order, GRADED, 4) == 2 / 3                    # {a, b}
    assert D.recall(order, GRADED, 50) == 2 / 3                   # e stays missing
    assert D.recall(order, GRADED, 4) == trec(order, GRADED, "recall.4", "recall_4")
    assert D.recall(order, GRADED, 1) == 0.0                      # c at rank 1 is judged, not relevant


def test_capped_recall_divides_by_min_of_relevant_count_and_k():
    rels = {f"p{i}": 1 for i in range(8)} | {"n": 0}
    order = ["p0", "n", "p1", "p2", "x"]
    assert D.capped_recall(order, rels, 3) == 2 / 3               # |P ∩ R_3| = 2, min(8, 3) = 3
    assert D.recall(order, rels, 3) == 2 / 8                      # ... while Recall@3 = 2/8
    assert D.capped_recall(order, rels, 10) == 3 / 8              # min(8, 10) = 8
    assert D.capped_recall(["p0", "p1", "p2"], rels, 3) == 1.0    # the source text's 3/8 vs 1 example
    two = {"a": 2, "b": 1, "z": 0}
    assert D.capped_recall(["z", "a"], two, 5) == 1 / 2          # min(2, 5) = 2


# ----------------------------------------------------------------- first relevant rank, MRR --
def test_first_relevant_rank_skips_a_judged_non_relevant_document_ranked_first():
    rels = {"n0": 0, "neg": -1, "r": 1, "s": 2}
    assert D.first_rel(["n0", "x", "r", "s"], rels) == 3          # n0 judged 0, x unjudged
    assert D.first_rel(["neg", "s"], rels) == 2                   # a negative judgement is not relevant
    assert D.first_rel(["s"], rels) == 1
    assert D.first_rel(["n0", "neg", "x"], rels) is None
    assert D.first_rel([], rels) is None


def test_mrr_is_one_over_the_first_relevant_rank_within_k_else_zero():
    rels = {"n0": 0, "r": 1}
    order = ["n0", "x", "r"]
    assert D.mrr(order, rels, 3) == 1 / 3 == trec(order, rels, "recip_rank", "recip_rank")
    assert D.mrr(order, rels, 2) == 0.0                           # r at rank 3 > K
    assert D.mrr(["r"], rels, 1) == 1.0
    assert D.mrr(["n0", "r"], rels, 10) == 0.5


@pytest.mark.parametrize("rels", [{}, {"n": 0}, {"n": 0, "m": -1}])
@pytest.mark.parametrize("metric", ["ndcg", "recall", "capped_recall", "mrr"])
def test_a_query_without_a_relevant_document_is_refused_with_a_value_error(metric, rels):
    """The pipeline refuses it (metrics raise ValueError); the audit used to answer 0 (nDCG, MRR) and a
    ZeroDivisionError (Recall), which Audit.run does not catch. Now: a ValueError naming the reason."""
    message = (f"a query without a judged relevant document (relevance > 0; {len(rels)} judgement(s), none "
               "positive): its nDCG, Recall and MRR are undefined and the pipeline refuses it")
    with pytest.raises(ValueError) as err:
        getattr(D, metric)(["n", "m", "x"], rels, 10)
    assert str(err.value) == message


def test_relevant_keeps_positive_judgements_with_their_gains():
    assert D.relevant({"a": 2, "b": 1, "c": 0, "d": -1}) == {"a": 2, "b": 1}


# ----------------------------------------------------------------------------- evidence groups --
def test_a_chain_of_three_queries_linked_only_through_relevant_documents_is_one_group():
    qrels = {
        "q1": {"a": 1, "n": 0},            # q1 - q2 share a (relevant to both)
        "q2": {"a": 2, "b": 1},            # q2 - q3 share b: q1 and q3 share nothing, yet one group
        "q3": {"b": 1, "c": 1, "z": -1},
        "q4": {"n": 0, "z": -1, "y": 1},   # shares n (judged 0 by q1) and z (judged -1 by q3): NOT linked
        "q5": {"a": 0, "w": 1},            # a judged 0 here: not linked to q1 / q2
    }
    assert D.components(["q1", "q2", "q3", "q4", "q5"], qrels) == [["q1", "q2", "q3"], ["q4"], ["q5"]]
    # members keep the analysed order, groups follow their first member
    assert D.components(["q3", "q4", "q1", "q5", "q2"], qrels) == [["q3", "q1", "q2"], ["q4"], ["q5"]]


def test_groups_need_two_hops_and_merge_when_a_late_query_joins_two_chains():
    # q1-q3 via d13, q2-q4 via d24, q3-q4 via d34: one component whatever the order it is found in
    qrels = {"q1": {"d13": 1}, "q2": {"d24": 1}, "q3": {"d13": 1, "d34": 1}, "q4": {"d24": 1, "d34": 2}}
    assert D.components(["q1", "q2", "q3", "q4"], qrels) == [["q1", "q2", "q3", "q4"]]
    assert D.components(["q1", "q2"], qrels) == [["q1"], ["q2"]]   # only the analysed queries count


@pytest.mark.parametrize("seed", range(5))
def test_groups_equal_scipy_connected_components_on_random_graded_incidence(seed):
    rng = np.random.default_rng(100 + seed)
    qids = [f"q{i}" for i in range(25)]
    qrels = {q: {f"d{int(j)}": int(rng.integers(-1, 3)) for j in rng.choice(40, size=3, replace=False)}
             for q in qids}
    for q in qids[::7]:
        qrels[q] = {"only-zero": 0}
    docs = sorted({d for r in qrels.values() for d, g in r.items() if g > 0})
    rows = [i for i, q in enumerate(qids) for d, g in qrels[q].items() if g > 0]
    cols = [len(qids) + docs.index(d) for q in qids for d, g in qrels[q].items() if g > 0]
    n = len(qids) + len(docs)
    _, labels = connected_components(coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n)),
                                     directed=False)
    want: dict[int, list[str]] = {}
    for i, q in enumerate(qids):
        want.setdefault(int(labels[i]), []).append(q)
    assert D.components(qids, qrels) == sorted(want.values(), key=lambda g: qids.index(g[0]))


@pytest.mark.parametrize("index,n,label", [(0, 1, "G001"), (0, 5, "G001"), (41, 999, "G042"),
                                           (998, 999, "G999"), (0, 1000, "G0001"), (999, 1000, "G1000"),
                                           (9, 10, "G010")])
def test_group_labels_have_at_least_three_digits_and_more_for_many_groups(index, n, label):
    assert D.group_label(index, n) == label


# ------------------------------------------------------------------------------- percentile --
@pytest.mark.parametrize("values,p", [([0.1, 0.7], 50), ([0.1, 0.7], 10), ([0.1, 0.7], 49), ([0.1, 0.7], 51),
                                      ([0.1, 0.7], 70), ([0.001, 7.0], 50), ([0.7, 0.1], 2.5)])
def test_percentile_uses_numpys_two_lerp_formulas_bit_for_bit(values, p):
    """numpy's _lerp: a + (b-a)t, but b - (b-a)(1-t) where t >= 0.5; on these inputs the two formulas differ
    in the last bit (e.g. [0.1, 0.7] at 50: 0.4 by the first, 0.39999999999999997 by the second, numpy's)."""
    a, b = sorted(values)
    t = p / 100
    first, second = a + (b - a) * t, b - (b - a) * (1 - t)
    assert first != second                          # adversarial: the branch matters
    want = float(np.percentile(values, p))
    assert want == (second if t >= 0.5 else first)
    assert D.percentile(values, p) == want


def test_percentile_hand_examples_and_both_ends():
    xs = [3.0, 1.0, 4.0, 2.0]                       # sorted 1, 2, 3, 4
    assert D.percentile(xs, 25) == 1.75             # h = 3 * 0.25 = 0.75, t >= .5: 2 - (2 - 1) * 0.25
    assert D.percentile(xs, 50) == 2.5              # h = 1.5: 3 - (3 - 2) * 0.5
    assert D.percentile(xs, 10) == 1.3              # h = 0.3: 1 + (2 - 1) * 0.3 = 1.3
    assert D.percentile(xs, 0) == 1.0 and D.percentile(xs, 100) == 4.0   # h = 0 and h = n - 1 (no index n)
    assert D.percentile([5.0], 0) == D.percentile([5.0], 97.5) == D.percentile([5.0], 100) == 5.0
    assert D.percentile([2.0, 2.0, 2.0], 37.5) == 2.0


@pytest.mark.parametrize("seed", range(4))
def test_percentile_equals_numpy_exactly_on_adversarial_random_inputs(seed):
    rng = np.random.default_rng(7 + seed)
    for _ in range(300):
        n = int(rng.integers(1, 60))
        scale = 10.0 ** int(rng.integers(-12, 13))
        xs = (rng.standard_normal(n) * scale).tolist()
        if rng.random() < 0.3:
            xs = [round(x, 1) for x in xs]          # ties
        for p in (0.0, 2.5, 25.0, 50.0, 97.5, 100.0, float(rng.uniform(0, 100))):
            assert D.percentile(xs, p) == float(np.percentile(xs, p)), (xs, p)


# -------------------------------------------------------------------------- sums and means --
def test_sums_are_sequential_left_to_right():
    # 1e16 + 1 rounds back to 1e16 (spacing 2 there), twice; then - 1e16 -> 0.0 (math.fsum would give 2.0)
    assert D.seq_sum([1e16, 1.0, 1.0, -1e16]) == 0.0
    assert D.seq_sum([1.0, 1.0, 1e16, -1e16]) == 2.0   # 2 + 1e16 is exact
    assert D.seq_sum([]) == 0.0
    assert D.seq_sum(x for x in (0.5, 0.25)) == 0.75


def test_mean_is_the_sequential_sum_over_the_count():
    assert D.mean([1.0, 2.0, 4.0]) == 7.0 / 3
    assert D.mean(x for x in (1e16, 1.0, 1.0, -1e16)) == 0.0     # a generator; the sequential sum / 4
    assert D.mean([-0.5]) == -0.5


# ---------------------------------------------------------------------- McNemar and the sign test --
@pytest.mark.parametrize("gained,lost,want", [(0, 0, 1.0), (5, 0, 2 / 32), (0, 5, 2 / 32), (3, 1, 10 / 16),
                                              (1, 3, 10 / 16), (2, 2, 1.0), (1, 1, 1.0), (1, 0, 1.0),
                                              (6, 2, 74 / 256)])
def test_exact_mcnemar_is_the_doubled_binomial_tail_capped_at_one(gained, lost, want):
    # (5, 0): 2 * C(5,0) / 2^5 = 2/32; (3, 1): 2 * (C(4,0) + C(4,1)) / 16 = 10/16;
    # (2, 2): 2 * (1 + 4 + 6) / 16 = 22/16 -> 1; (1, 0): 2 * 1/2 = 1; (6, 2): 2 * (1 + 8 + 28) / 256 = 74/256
    assert D.exact_mcnemar(gained, lost) == want


def test_exact_mcnemar_equals_scipy_binomtest_within_the_stated_four_ulp():
    for g in range(0, 25):
        for l in range(0, 25):
            p = D.exact_mcnemar(g, l)
            ref = 1.0 if g + l == 0 else stats.binomtest(min(g, l), g + l, 0.5).pvalue
            assert abs(p - ref) <= 4 * math.ulp(max(p, ref)), (g, l, p, ref)
            exact = min(Fraction(1), 2 * Fraction(sum(math.comb(g + l, i) for i in range(min(g, l) + 1)),
                                                  2 ** (g + l)))
            assert p == float(exact), (g, l)


def test_sign_counts_treat_an_exact_zero_difference_as_a_tie():
    d = [0.1, 0.0, -0.0, -0.2, 0.3, 0.0, 1e-300]
    assert D.sign_counts(d) == (3, 1)                 # wins 0.1, 0.3, 1e-300; loss -0.2; three ties
    assert D.sign_counts([0.0, 0.0]) == (0, 0)
    # the sign test drops the ties: p = McNemar(3, 1) = 10/16 (scipy's binomtest on 1 of 4 agrees)
    assert D.exact_mcnemar(*D.sign_counts(d)) == 10 / 16 == pytest.approx(stats.binomtest(1, 4, 0.5).pvalue)


# ------------------------------------------------------------------------------ Holm and BH --
def test_holm_hand_example_is_monotone_and_capped():
    # sorted 0.005 (i3), 0.01 (i0), 0.03 (i2), 0.04 (i1); x (4, 3, 2, 1): 0.02, 0.03, 0.06, 0.04 -> running
    # max makes the last 0.06 (monotone), so [0.03, 0.06, 0.06, 0.02]
    assert D.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02], rel=1e-15)
    assert D.holm([0.9, 0.95]) == [1.0, 1.0]          # 2 * 0.9 = 1.8 -> 1; then max(1, 0.95) = 1
    assert D.holm([0.3]) == [0.3] and D.holm([]) == []


def test_benjamini_hochberg_hand_example_is_monotone_from_the_largest_p():
    # p * m / rank: 0.01*3/1 = 0.03, 0.011*3/2 = 0.0165, 0.5*3/3 = 0.5; running min from the largest: 0.5,
    # 0.0165, min(0.0165, 0.03) = 0.0165 -> the smallest p gets 0.0165, not 0.03
    assert D.benjamini_hochberg([0.5, 0.01, 0.011]) == pytest.approx([0.5, 0.0165, 0.0165], rel=1e-15)
    # 1.8 -> min(1.8, 0.95)
    assert D.benjamini_hochberg([0.9, 0.95]) == pytest.approx([0.95, 0.95], rel=1e-15)
    assert D.benjamini_hochberg([0.3]) == [0.3] and D.benjamini_hochberg([]) == []


@pytest.mark.parametrize("seed", range(5))
def test_holm_and_bh_equal_statsmodels_including_ties_and_large_p(seed):
    rng = np.random.default_rng(40 + seed)
    for m in (1, 2, 3, 5, 9, 17):
        ps = rng.random(m).tolist()
        if m > 2:
            ps[1] = ps[-1]                               # a tie
            ps[0] = float(rng.uniform(0.9, 1.0))         # adjusted above 1 before the cap
        holm = D.holm(ps)
        bh = D.benjamini_hochberg(ps)
        ref_h = multipletests(ps, method="holm")[1].tolist()
        ref_b = multipletests(ps, method="fdr_bh")[1].tolist()
        assert holm == ref_h                             # same products, same running max: bit-equal
        for x, y in zip(bh, ref_b):                      # m/(i+1) vs /((i+1)/m): the stated 4 ulp
            assert abs(x - y) <= 4 * math.ulp(max(x, y))
        order = sorted(range(m), key=lambda i: ps[i])
        assert [holm[i] for i in order] == sorted(holm) and [bh[i] for i in order] == sorted(bh)  # monotone
        assert max(holm) <= 1.0 and max(bh) <= 1.0


# ---------------------------------------------------------------------- chance level, slices --
@pytest.mark.parametrize("n,m,k,want", [(10, 2, 3, Fraction(8, 15)), (5, 1, 10, Fraction(1)),
                                        (20, 1, 10, Fraction(1, 2)), (4, 2, 2, Fraction(5, 6)),
                                        (6, 6, 1, Fraction(1)), (50, 0, 10, Fraction(0))])
def test_chance_hit_is_one_minus_the_hypergeometric_miss(n, m, k, want):
    # (10, 2, 3): 1 - C(8,3)/C(10,3) = 1 - 56/120 = 8/15; (5, 1, 10): k capped at 5 -> 1 - C(4,5)/C(5,5) = 1;
    # (4, 2, 2): 1 - C(2,2)/C(4,2) = 5/6; m = 0 -> 0
    assert D.chance_hit(n, m, k) == float(want)
    if m:
        assert D.chance_hit(n, m, k) == pytest.approx(stats.hypergeom(n, m, min(k, n)).sf(0), abs=1e-15)


@pytest.mark.parametrize("family,n_rel,in_c,want", [
    ("relevant_count", 1, 1, "one"), ("relevant_count", 1, 0, "one"), ("relevant_count", 2, 2, "several"),
    ("relevant_count", 13, 0, "several"), ("candidate_coverage", 3, 3, "all"),
    ("candidate_coverage", 1, 1, "all"), ("candidate_coverage", 3, 2, "partly"),
    ("candidate_coverage", 3, 1, "partly"), ("candidate_coverage", 3, 0, "none"),
    ("candidate_coverage", 1, 0, "none")])
def test_slices(family, n_rel, in_c, want):
    assert D.slice_of(family, n_rel, in_c) == want


def test_an_undeclared_slice_family_is_refused():
    with pytest.raises(ValueError, match="slice family 'length' is not defined in the audit"):
        D.slice_of("length", 1, 1)
