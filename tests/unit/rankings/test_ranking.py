"""Tie rule, RRF, blend and rank-derived scores against hand-computed expectations."""

import re

import pytest

from rerank_study.rankings import ranking


def test_tie_rule_is_score_desc_then_doc_id_string_desc():
    scores = {"10": 0.5, "9": 0.5, "2": 0.7, "100": 0.5}
    # string order descending among the ties: "9" > "100" > "10"
    assert ranking.order_by_score(scores) == ["2", "9", "100", "10"]


def test_rank_by_score_refuses_nan():
    with pytest.raises(ValueError, match="non-finite"):
        ranking.rank_by_score({"a": float("nan")})


def test_rrf_hand_computed():
    bm25 = {"a": 1, "b": 2, "c": 3}
    dense = {"b": 1, "c": 2, "d": 3}
    fused = ranking.rrf_scores([bm25, dense], k=60)
    assert fused["a"] == 1 / 61
    assert fused["b"] == 1 / 62 + 1 / 61
    assert fused["c"] == 1 / 63 + 1 / 62
    assert fused["d"] == 1 / 63
    # 0.032523 > 0.032002 > 0.016393 > 0.015873
    assert ranking.order_by_score(fused) == ["b", "c", "a", "d"]
    assert ranking.top_k(fused, 2) == [("b", 1, fused["b"]), ("c", 2, fused["c"])]


def test_blend_swapped_ranks_tie_exactly_and_tie_rule_decides():
    r0 = {"x": 1, "y": 2, "z": 3}
    r1 = {"x": 2, "y": 1, "z": 3}
    s = ranking.blend_scores(r0, r1, k=60)
    assert s["x"] == s["y"] == 1 / 61 + 1 / 62  # exactly equal in float64
    assert s["z"] == 2 / 63
    assert ranking.order_by_score(s) == ["y", "x", "z"]  # "y" > "x" as strings


def test_blend_score_is_one_over_k_plus_r0_plus_one_over_k_plus_r1():
    # (the ORDER of the two float64 terms cannot be observed: IEEE addition of two terms is commutative)
    s = ranking.blend_scores({"d": 7}, {"d": 33}, k=60)
    assert s["d"] == 1.0 / 67 + 1.0 / 93
    assert ranking.blend_scores({"d": 7}, {"d": 33}, k=10)["d"] == 1.0 / 17 + 1.0 / 43


def test_blend_requires_same_documents():
    with pytest.raises(ValueError, match="same documents"):
        ranking.blend_scores({"a": 1}, {"b": 1})


def test_rerank_query_three_orders():
    cands = ["d1", "d2", "d3"]
    logits = {"d1": -1.0, "d2": 3.0, "d3": 3.0}  # d2/d3 tie: "d3" > "d2"
    res = ranking.rerank_query(cands, logits, 60)
    assert res["order"]["ce"] == ["d3", "d2", "d1"]
    assert res["r1"] == {"d3": 1, "d2": 2, "d1": 3}
    # blend: d1 1/61+1/63, d2 1/62+1/62, d3 1/63+1/61 -> d1 and d3 tie exactly; "d3" > "d1"
    assert res["blend_score"]["d1"] == 1 / 61 + 1 / 63
    assert res["blend_score"]["d3"] == 1 / 63 + 1 / 61
    assert res["blend_score"]["d1"] == res["blend_score"]["d3"]
    # 1/61+1/63 = 0.0322664 > 2/62 = 0.0322581
    assert res["order"]["blend"] == ["d3", "d1", "d2"]
    # the documented result: r0 = candidate position, blend ranks, and the three orders by name
    assert set(res) == {"r0", "r1", "blend_score", "blend_rank", "order"}
    assert res["r0"] == {"d1": 1, "d2": 2, "d3": 3}
    assert res["blend_rank"] == {"d3": 1, "d1": 2, "d2": 3}
    assert res["order"] == {"rrf": ["d1", "d2", "d3"], "ce": ["d3", "d2", "d1"], "blend": ["d3", "d1", "d2"]}


def test_rerank_query_rejects_missing_logit():
    with pytest.raises(ValueError, match="missing"):
        ranking.rerank_query(["a", "b"], {"a": 1.0}, 60)


def test_duplicate_in_ranking_refused():
    with pytest.raises(ValueError, match="duplicate"):
        ranking.ranks_from_order(["a", "b", "a"])


def test_trec_rank_derived_scores_survive_pytrec_eval_resorting():
    """pytrec_eval/trec_eval re-sort by score; rank-derived scores keep our order, incl. ties."""
    import pytrec_eval

    order = ["10", "9"]  # our tie rule would put "9" first for equal scores; the run says "10" first
    run = {"q": {d: float(s) for d, s in zip(order, ranking.rank_derived_scores(len(order)))}}
    qrels = {"q": {"10": 1}}
    res = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)
    assert res["q"]["recip_rank"] == 1.0


def _exact(message):
    """A pytest.raises pattern that matches the whole message and nothing else."""
    return "^" + re.escape(message) + "$"


def test_non_string_document_id_is_refused():
    with pytest.raises(TypeError, match=_exact("document ids must be strings, got 7")):
        ranking.order_by_score({"a": 1.0, 7: 0.5})


def test_duplicate_ids_are_named_once_each_in_the_error():
    with pytest.raises(ValueError, match=_exact("duplicate document ids in a ranking: ['a', 'b']")):
        ranking.ranks_from_order(["a", "b", "a", "c", "b", "a"])


def test_default_rrf_constant_is_60_everywhere():
    assert ranking.rrf_scores([{"a": 1, "b": 2}]) == {"a": 1 / 61, "b": 1 / 62}
    assert ranking.blend_scores({"a": 1, "b": 2}, {"a": 2, "b": 1}) == {"a": 1 / 61 + 1 / 62,
                                                                        "b": 1 / 62 + 1 / 61}
    res = ranking.rerank_query(["a", "b"], {"a": 0.0, "b": 1.0})  # CE: b first
    assert res["blend_score"] == {"a": 1 / 61 + 1 / 62, "b": 1 / 62 + 1 / 61}


def test_rrf_constant_zero_is_allowed_and_negative_refused():
    # k = 0: 1/(0+1) + 1/(0+2) = 1.5
    assert ranking.rrf_scores([{"a": 1}, {"a": 2}], k=0) == {"a": 1.5}
    with pytest.raises(ValueError, match=_exact("RRF constant k must be >= 0, got -1")):
        ranking.rrf_scores([{"a": 1}], k=-1)


@pytest.mark.parametrize("bad", [0, -1, True, 1.0, "1"])
def test_rrf_refuses_ranks_that_are_not_positive_integers(bad):
    with pytest.raises(ValueError, match=_exact(f"rank of 'a' must be a positive integer, got {bad!r}")):
        ranking.rrf_scores([{"b": 1, "a": bad}])


def test_blend_and_rerank_use_the_given_constant():
    # k = 2: a: 1/(2+1) + 1/(2+2) = 7/12 ; b: 1/(2+2) + 1/(2+1)
    assert ranking.blend_scores({"a": 1, "b": 2}, {"a": 2, "b": 1}, k=2) == {"a": 1 / 3 + 1 / 4,
                                                                             "b": 1 / 4 + 1 / 3}
    # candidates a, b, c (r0 = 1, 2, 3); CE order c, a, b (r1 = 2, 3, 1); k = 0:
    # a: 1/1 + 1/2 = 1.5, b: 1/2 + 1/3 = 0.8333, c: 1/3 + 1/1 = 1.3333 -> blend a, c, b
    res = ranking.rerank_query(["a", "b", "c"], {"a": 0.5, "b": 0.1, "c": 0.9}, k=0)
    assert res["blend_score"] == {"a": 1 / 1 + 1 / 2, "b": 1 / 2 + 1 / 3, "c": 1 / 3 + 1 / 1}
    assert res["order"]["blend"] == ["a", "c", "b"]


def test_blend_error_lists_the_first_five_documents_that_differ():
    r0 = {"a": 1, "b": 2, "c": 3, "d": 4}
    r1 = {"a": 1, "e": 2, "f": 3, "g": 4}
    # symmetric difference sorted: b c d e f g -> the first five
    with pytest.raises(ValueError, match=_exact(
            "blend needs the same documents in both rankings; differ by ['b', 'c', 'd', 'e', 'f']")):
        ranking.blend_scores(r0, r1)


def test_rerank_query_error_lists_the_first_five_missing_and_extra():
    cands = ["c1", "c2", "c3", "c4", "c5", "c6", "c7"]
    logits = {"c1": 0.0, "x1": 0.0, "x2": 0.0, "x3": 0.0, "x4": 0.0, "x5": 0.0, "x6": 0.0}
    with pytest.raises(ValueError, match=_exact(
            "logits do not match the candidates: missing ['c2', 'c3', 'c4', 'c5', 'c6'], "
            "extra ['x1', 'x2', 'x3', 'x4', 'x5']")):
        ranking.rerank_query(cands, logits)


def test_rerank_query_refuses_logits_that_differ_only_in_count():
    # a duplicated candidate: same set of ids, one logit fewer than candidates
    with pytest.raises(ValueError, match=_exact("logits do not match the candidates: missing [], extra []")):
        ranking.rerank_query(["a", "a", "b"], {"a": 1.0, "b": 2.0})
    # same count, different ids
    with pytest.raises(ValueError, match=_exact("logits do not match the candidates: missing "
                                                "['b'], extra ['c']")):
        ranking.rerank_query(["a", "b"], {"a": 1.0, "c": 2.0})
