"""Split drawing is deterministic, canonical and validated; the split file format is strict."""

import pytest

from conftest import FIXTURE
from rerank_study import beir, splits
from rerank_study.errors import MalformedInputError


def test_canonical_order_is_numeric_for_integer_ids():
    assert splits.canonical_order(["10", "9", "100", "1"]) == ["1", "9", "10", "100"]
    assert splits.canonical_order(["b", "2", "a"]) == ["2", "a", "b"]


def test_draw_is_deterministic_and_seed_dependent():
    train = beir.read_qrels(FIXTURE / "qrels/train.tsv")
    a = splits.draw_dev_split(train, 8, 110)
    assert a == splits.draw_dev_split(list(reversed(list(train))), 8, 110)  # input order does not matter
    assert a == splits.canonical_order(a) and len(set(a)) == 8 and set(a) <= set(train)
    assert a != splits.draw_dev_split(train, 8, 111)
    with pytest.raises(ValueError, match="dev_size"):
        splits.draw_dev_split(train, 13, 110)


def test_confirmation_ids_need_no_confirmation_qrels():
    queries = beir.read_queries(FIXTURE / "queries.jsonl")
    train = beir.read_qrels(FIXTURE / "qrels/train.tsv")
    assert splits.confirmation_ids(queries, train) == ["17", "41", "105", "176", "209", "418"]


@pytest.mark.parametrize("text,match", [("2\n1\n", "canonical order"), ("1\n1\n", "duplicate"),
                                        ("1\n2", "not terminated"), ("1\n \n", "bad query id")])
def test_split_file_errors(tmp_path, text, match):
    p = tmp_path / "s.txt"
    p.write_text(text)
    with pytest.raises(MalformedInputError, match=match):
        splits.read_split(p)
