"""Tie rule, RRF, blend and TREC runs against hand-computed expectations."""

import pytest

from rerank_study import ranking, trec


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


def test_blend_is_sum_in_order_r0_then_r1():
    s = ranking.blend_scores({"d": 7}, {"d": 33}, k=60)
    assert s["d"] == 1.0 / 67 + 1.0 / 93


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


def test_rerank_query_rejects_missing_logit():
    with pytest.raises(ValueError, match="missing"):
        ranking.rerank_query(["a", "b"], {"a": 1.0}, 60)


def test_duplicate_in_ranking_refused():
    with pytest.raises(ValueError, match="duplicate"):
        ranking.ranks_from_order(["a", "b", "a"])


def test_trec_round_trip(tmp_path):
    ranked = {"q2": ["d9", "d10", "d1"], "q1": ["a"]}
    path = tmp_path / "run.trec"
    trec.write_run(path, ranked, "tag", query_order=["q1", "q2"])
    text = path.read_text()
    assert text.splitlines()[0] == "q1 Q0 a 1 1 tag"
    assert text.splitlines()[1:] == ["q2 Q0 d9 1 3 tag", "q2 Q0 d10 2 2 tag", "q2 Q0 d1 3 1 tag"]
    back = trec.read_run(path)
    assert {q: [d for d, _, _ in v] for q, v in back.items()} == ranked


def test_trec_rank_derived_scores_survive_pytrec_eval_resorting():
    """pytrec_eval/trec_eval re-sort by score; rank-derived scores keep our order, incl. ties."""
    import pytrec_eval

    order = ["10", "9"]  # our tie rule would put "9" first for equal scores; the run says "10" first
    run = {"q": {d: float(s) for d, s in zip(order, ranking.rank_derived_scores(len(order)))}}
    qrels = {"q": {"10": 1}}
    res = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)
    assert res["q"]["recip_rank"] == 1.0
