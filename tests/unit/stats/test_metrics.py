"""Metrics against hand calculation and against pytrec_eval (trec_eval)."""

import math
import re

import pytest
import pytrec_eval

from rerank_study.rankings.ranking import rank_derived_scores
from rerank_study.stats import metrics


def test_ndcg_hand_computed_with_relevant_doc_outside_the_list():
    qrels = {"d1": 1, "d2": 1, "d3": 1, "n": 0}
    ranked = ["d0", "d1", "x", "d2"]
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    idcg = 1 + 1 / math.log2(3) + 1 / math.log2(4)  # ideal from ALL judged relevant docs (d3 too)
    assert metrics.ndcg_at(ranked, qrels, 10) == pytest.approx(dcg / idcg, abs=1e-15)
    assert metrics.recall_at(ranked, qrels, 10) == 2 / 3
    assert metrics.recall_at(ranked, qrels, 2) == 1 / 3
    assert metrics.mrr_at(ranked, qrels, 10) == 0.5
    assert metrics.mrr_at(ranked, qrels, 1) == 0.0
    assert metrics.first_relevant_rank(ranked, qrels) == 2


def test_no_relevant_document_in_the_list():
    qrels = {"r": 1}
    ranked = ["a", "b", "c"]
    assert metrics.ndcg_at(ranked, qrels, 10) == 0.0
    assert metrics.recall_at(ranked, qrels, 10) == 0.0
    assert metrics.mrr_at(ranked, qrels, 10) == 0.0
    assert metrics.first_relevant_rank(ranked, qrels) is None


def test_an_empty_ranking_retrieves_nothing_and_scores_zero():
    # By the definitions: DCG of no document = 0, |P ∩ R_K| = 0, no first relevant rank.
    qrels = {"r": 2, "s": 1}
    assert metrics.ndcg_at([], qrels, 10) == 0.0
    assert metrics.recall_at([], qrels, 10) == 0.0
    assert metrics.mrr_at([], qrels, 10) == 0.0
    assert metrics.capped_recall_at([], qrels, 10) == 0.0
    assert metrics.first_relevant_rank([], qrels) is None


def test_cut_at_k_ignores_later_relevant_docs():
    qrels = {"r": 1}
    ranked = [f"x{i}" for i in range(10)] + ["r"]
    assert metrics.ndcg_at(ranked, qrels, 10) == 0.0
    assert metrics.recall_at(ranked, qrels, 10) == 0.0
    assert metrics.recall_at(ranked, qrels, 11) == 1.0
    assert metrics.first_relevant_rank(ranked, qrels) == 11


def test_capped_recall_is_a_different_named_metric():
    qrels = {f"p{i}": 1 for i in range(8)}
    ranked = ["p0", "p1", "p2", "x"]
    assert metrics.recall_at(ranked, qrels, 3) == 3 / 8  # the source text's example: Recall@3 = 3/8
    assert metrics.capped_recall_at(ranked, qrels, 3) == 1.0  # ... and the capped variant = 1


def test_query_without_relevant_judgement_is_an_error():
    with pytest.raises(ValueError, match="no judged relevant"):
        metrics.ndcg_at(["a"], {"a": 0}, 10)


CASES = {
    "several_relevant": (["a", "r1", "b", "r2", "c", "d", "e", "f", "g", "h", "r3", "i"],
                         {"r1": 1, "r2": 1, "r3": 1, "r4": 1}),
    "first_is_relevant": (["r", "a", "b"], {"r": 1}),
    "none_in_list": (["a", "b", "c"], {"r": 1}),
    "graded": (["a", "r2", "r1"], {"r1": 1, "r2": 2, "r0": 0}),
    "numeric_string_ids": (["10", "9", "100", "1"], {"9": 1, "1": 1}),
    # more relevant documents than the cut-off: the ideal DCG must stop at 10 as well
    "twelve_relevant": ([f"r{i}" for i in range(0, 12, 2)] + ["x"] + [f"r{i}" for i in range(1, 12, 2)],
                        {f"r{i}": 1 for i in range(12)}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_against_pytrec_eval(name):
    ranked, qrels = CASES[name]
    run = {"q": {d: float(s) for d, s in zip(ranked, rank_derived_scores(len(ranked)))}}
    run10 = {"q": {d: float(s) for d, s in zip(ranked[:10], rank_derived_scores(len(ranked[:10])))}}
    ev = pytrec_eval.RelevanceEvaluator({"q": qrels}, {"ndcg_cut.10", "recall.10", "recall.50"})
    ref = ev.evaluate(run)["q"]
    rr = pytrec_eval.RelevanceEvaluator({"q": qrels}, {"recip_rank"}).evaluate(run10)["q"]["recip_rank"]
    assert metrics.ndcg_at(ranked, qrels, 10) == pytest.approx(ref["ndcg_cut_10"], abs=1e-12)
    assert metrics.recall_at(ranked, qrels, 10) == pytest.approx(ref["recall_10"], abs=1e-12)
    assert metrics.recall_at(ranked, qrels, 50) == pytest.approx(ref["recall_50"], abs=1e-12)
    assert metrics.mrr_at(ranked, qrels, 10) == pytest.approx(rr, abs=1e-12)


def test_pytrec_eval_breaks_score_ties_by_doc_id_descending_like_us():
    """With EQUAL scores trec_eval orders docno descending: the same rule as ours."""
    from rerank_study.rankings.ranking import order_by_score

    qrels = {"q": {"9": 1}}
    run = {"q": {"10": 1.0, "9": 1.0, "100": 1.0}}
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)["q"]["recip_rank"]
    ours = order_by_score(run["q"])
    assert ours == ["9", "100", "10"]
    assert rr == 1.0 / (ours.index("9") + 1)


def _exact(message):
    """A pytest.raises pattern that matches the whole message and nothing else."""
    return "^" + re.escape(message) + "$"


@pytest.mark.parametrize("metric", [
    lambda r, q: metrics.ndcg_at(r, q, 10), lambda r, q: metrics.recall_at(r, q, 10),
    lambda r, q: metrics.capped_recall_at(r, q, 10), lambda r, q: metrics.mrr_at(r, q, 10),
    lambda r, q: metrics.query_metrics(r, q),
], ids=["ndcg", "recall", "capped_recall", "mrr", "query_metrics"])
def test_duplicate_document_id_in_the_ranked_list_is_an_error(metric):
    with pytest.raises(ValueError, match=_exact("ranked list contains duplicate document ids")):
        metric(["a", "r", "a"], {"r": 1})


def test_no_relevant_judgement_error_says_the_metrics_are_undefined():
    with pytest.raises(ValueError, match=_exact("query has no judged relevant document; its metrics "
                                                "are undefined")):
        metrics.recall_at(["a"], {"a": 0, "b": -1}, 10)


def test_default_cutoffs_are_ndcg_at_10_and_mrr_at_10():
    qrels = {"r": 1}
    at_11 = [f"x{i}" for i in range(10)] + ["r"]
    at_10 = [f"x{i}" for i in range(9)] + ["r"]
    assert metrics.ndcg_at(at_11, qrels) == 0.0 and metrics.mrr_at(at_11, qrels) == 0.0
    # rank 10 = 0-based position 9: DCG = 1/log2(9+2) = 1/log2(11); IDCG = 1/log2(2) = 1
    assert metrics.ndcg_at(at_10, qrels) == pytest.approx(1 / math.log2(11), abs=1e-15)
    assert metrics.mrr_at(at_10, qrels) == 0.1  # 1 / 10


def test_ndcg_ideal_dcg_takes_only_the_first_k_relevant_documents():
    qrels = {"r1": 1, "r2": 1, "r3": 1}
    # k=2: DCG = 1/log2(2) + 1/log2(3); IDCG@2 = the same (r3 is beyond the cut) -> 1.0
    assert metrics.ndcg_at(["r1", "r2", "x"], qrels, 2) == 1.0
    # k=2, only r1 at rank 2: DCG = 1/log2(3) = 0.630930; IDCG@2 = 1 + 1/log2(3) = 1.630930 -> 0.386853
    assert metrics.ndcg_at(["x", "r1", "r2"], qrels, 2) == pytest.approx(
        (1 / math.log2(3)) / (1 + 1 / math.log2(3)), abs=1e-15)


@pytest.mark.parametrize("k", [0, -1, True, 2.0])
def test_a_cut_off_must_be_a_positive_integer(k):
    # trec_eval itself crashes on ndcg_cut.0; the metrics refuse such a cut-off before calling it
    for fn in (metrics.ndcg_at, metrics.recall_at, metrics.mrr_at):
        with pytest.raises(ValueError, match="cut-off must be a positive integer"):
            fn(["r"], {"r": 1}, k)


def test_capped_recall_counts_only_relevant_judgements():
    qrels = {"r": 1, "n": 0}  # "n" is judged NOT relevant: not in P
    # |P ∩ R_2| / min(|P|, 2) = |{r}| / min(1, 2) = 1/1
    assert metrics.capped_recall_at(["r", "x"], qrels, 2) == 1.0
    assert metrics.recall_at(["r", "x"], qrels, 2) == 1.0


def test_query_metrics_columns_and_hand_computed_values():
    qrels = {"d1": 1, "d2": 2, "d3": 1, "n": 0}  # P = {d1, d2, d3} (d3 never ranked); n judged 0
    ranked = ["x", "d2", "n", "d1", "y"]
    # gains by position 0..4: 0, 2, 0, 1, 0 -> DCG = 2/log2(3) + 1/log2(5)
    # ideal gains 2, 1, 1 -> IDCG = 2/log2(2) + 1/log2(3) + 1/log2(4) = 2 + 1/log2(3) + 0.5
    ndcg10 = (2 / math.log2(3) + 1 / math.log2(5)) / (2 + 1 / math.log2(3) + 0.5)
    out = metrics.query_metrics(ranked, qrels)
    assert list(out) == ["ndcg@10", "recall@10", "recall@50", "capped_recall@10", "capped_recall@50",
                         "mrr@10", "first_rel_rank", "n_relevant", "n_relevant_in_list"]
    assert out["ndcg@10"] == pytest.approx(ndcg10, abs=1e-15)
    assert out["recall@10"] == 2 / 3 and out["recall@50"] == 2 / 3            # |{d2, d1}| / 3
    assert out["capped_recall@10"] == 2 / 3 and out["capped_recall@50"] == 2 / 3  # 2 / min(3, K)
    assert out["mrr@10"] == 0.5 and out["first_rel_rank"] == 2
    assert out["n_relevant"] == 3 and out["n_relevant_in_list"] == 2
    # the same query with other cut-offs: the names follow the parameters
    # nDCG@2: DCG = 2/log2(3); IDCG@2 = 2 + 1/log2(3). Recall@1 = 0/3, Recall@2 = 1/3;
    # capped@1 = 0/min(3,1) = 0, capped@2 = 1/min(3,2) = 1/2; MRR@1 = 0 (first relevant at rank 2)
    out = metrics.query_metrics(ranked, qrels, ndcg_k=2, recall_ks=(1, 2), mrr_k=1)
    assert out == {
        "ndcg@2": pytest.approx((2 / math.log2(3)) / (2 + 1 / math.log2(3)), abs=1e-15),
        "recall@1": 0.0, "recall@2": 1 / 3, "capped_recall@1": 0.0, "capped_recall@2": 0.5,
        "mrr@1": 0.0, "first_rel_rank": 2, "n_relevant": 3, "n_relevant_in_list": 2}
    # and trec_eval agrees on the default columns
    run = {"q": {d: float(s) for d, s in zip(ranked, rank_derived_scores(len(ranked)))}}
    ref = pytrec_eval.RelevanceEvaluator({"q": qrels},
                                         {"ndcg_cut.10", "recall.10", "recip_rank"}).evaluate(run)["q"]
    default = metrics.query_metrics(ranked, qrels)
    assert default["ndcg@10"] == pytest.approx(ref["ndcg_cut_10"], abs=1e-12)
    assert default["recall@10"] == pytest.approx(ref["recall_10"], abs=1e-12)
    assert default["mrr@10"] == pytest.approx(ref["recip_rank"], abs=1e-12)


def test_the_tie_rule_is_trec_evals_own_tie_breaking():
    """Raw scores WITH ties: our order (score desc, doc id string desc), evaluated with rank-derived
    scores, equals trec_eval fed the raw tied scores (it breaks ties by docno, descending, itself)."""
    from rerank_study.rankings.ranking import order_by_score

    raw = {"10": 2.0, "9": 2.0, "100": 2.0, "1": 1.0, "x": 2.0, "11": 0.5}  # four-way tie at 2.0
    qrels = {"9": 1, "100": 1, "11": 1}
    ours = order_by_score(raw)
    assert ours == ["x", "9", "100", "10", "1", "11"]  # "x" > "9" > "100" > "10" as strings
    ref = pytrec_eval.RelevanceEvaluator({"q": qrels}, {"ndcg_cut.3", "recall.2"}).evaluate({"q": raw})["q"]
    assert metrics.ndcg_at(ours, qrels, 3) == ref["ndcg_cut_3"]
    assert metrics.recall_at(ours, qrels, 2) == ref["recall_2"]
