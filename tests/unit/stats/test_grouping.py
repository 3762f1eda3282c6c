"""Evidence groups on hand-built graphs."""

import re

import pytest

from rerank_study.stats import grouping


def test_chain_star_isolated():
    qrels = {
        "a": {"d1": 1}, "b": {"d1": 1, "d2": 1}, "c": {"d2": 1},          # chain a-b-c
        "s": {"x1": 1, "x2": 1, "x3": 1}, "l1": {"x1": 1}, "l2": {"x2": 1}, "l3": {"x3": 1},  # star
        "i": {"solo": 1},                                                  # isolated
        "z": {"d1": 0, "other": 1},                                        # shares only a non-relevant doc
    }
    order = ["a", "s", "i", "b", "l1", "z", "c", "l2", "l3"]
    groups = grouping.evidence_groups(order, qrels)
    assert groups == [["a", "b", "c"], ["s", "l1", "l2", "l3"], ["i"], ["z"]]
    assert grouping.group_ids(groups) == ["G001", "G002", "G003", "G004"]
    assert grouping.size_histogram(groups) == {1: 2, 3: 1, 4: 1}


def test_chain_joined_late_merges_components():
    # q1-q3 share d13, q2-q4 share d24, q3-q4 share d34 -> one component, found in any order
    qrels = {"q1": {"d13": 1}, "q2": {"d24": 1}, "q3": {"d13": 1, "d34": 1}, "q4": {"d24": 1, "d34": 1}}
    assert grouping.evidence_groups(["q1", "q2", "q3", "q4"], qrels) == [["q1", "q2", "q3", "q4"]]


def test_only_analysed_queries_count():
    qrels = {"a": {"d": 1}, "b": {"e": 1}, "outside": {"d": 1, "e": 1}}
    assert grouping.evidence_groups(["a", "b"], qrels) == [["a"], ["b"]]


def test_missing_judgements_refused():
    with pytest.raises(ValueError, match="without judgements"):
        grouping.evidence_groups(["a"], {})


def _exact(message):
    """A pytest.raises pattern that matches the whole message and nothing else."""
    return "^" + re.escape(message) + "$"


def test_late_query_joins_two_earlier_groups_under_the_earliest():
    # q3 shares d1 with q1 and d2 with q2: processing q3's d2 merges q2's root into the group
    # whose root is already q1 (the earlier query) -> one group in query order; q4 stays alone
    qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d1": 1, "d2": 1}, "q4": {"d4": 1}}
    assert grouping.evidence_groups(["q1", "q2", "q3", "q4"], qrels) == [["q1", "q2", "q3"], ["q4"]]


def test_a_non_relevant_judgement_does_not_hide_the_relevant_ones_after_it():
    # a's first judgement is non-relevant; its relevant "s" (listed after it) is shared with b
    qrels = {"a": {"n": 0, "s": 1}, "b": {"s": 1}, "c": {"n": 0}}
    # c has no relevant doc at all: a group of its own (it shares only a non-relevant doc)
    assert grouping.evidence_groups(["a", "b", "c"], qrels) == [["a", "b"], ["c"]]


def test_duplicate_query_ids_refused():
    with pytest.raises(ValueError, match=_exact("duplicate query ids in the analysed set")):
        grouping.evidence_groups(["a", "b", "a"], {"a": {"d": 1}, "b": {"e": 1}})


def test_missing_judgements_error_lists_the_first_ten():
    ids = [f"q{i:02d}" for i in range(12)]
    first_ten = ids[1:11]  # q00 is judged; q01..q11 are not, and the message names q01..q10
    with pytest.raises(ValueError, match=_exact(f"analysed queries without judgements: {first_ten}")):
        grouping.evidence_groups(ids, {"q00": {"d": 1}})
