"""One name per concept (rerank_study.core.names): measures parsed and printed in one place, the per-query
table's columns, the label of each scorer kind; every expected value written out by hand."""

import pytest

from rerank_study.core import names


def test_a_measure_is_parsed_and_printed_in_one_place():
    assert names.Measure.parse("ndcg@10") == names.Measure("ndcg", 10)
    assert str(names.Measure("recall", 100)) == "recall@100"
    assert str(names.Measure.parse("first_rel_rank")) == "first_rel_rank"
    for bad in ("ndcg@0", "NDCG@10", "ndcg@", "ndcg@-1", "recall@10x"):
        with pytest.raises(ValueError, match="not a measure name"):
            names.Measure.parse(bad)


def test_the_measures_of_a_run_in_column_order():
    cfg = {"ndcg_k": 10, "recall_ks": [5, 20], "mrr_k": 10}
    assert [str(m) for m in names.measures(cfg)] == [
        "ndcg@10", "recall@5", "recall@20", "capped_recall@5", "capped_recall@20", "mrr@10", "first_rel_rank"]
    assert names.primary_measure(cfg) == names.Measure("ndcg", 10)


def test_a_column_names_a_known_method_and_a_measure():
    assert names.column("blend", names.Measure("ndcg", 10)) == "blend_ndcg@10"
    assert names.column("rrf", "mrr@10") == "rrf_mrr@10"
    with pytest.raises(ValueError, match="unknown method 'bm25'"):
        names.column("bm25", "ndcg@10")


def test_the_label_of_each_scorer_kind():
    assert names.scorer_label("pinned") == "pinned"
    assert names.scorer_label("stand-in") == "STAND-IN"
    with pytest.raises(ValueError, match="unknown scorer 'other'"):
        names.scorer_label("other")
