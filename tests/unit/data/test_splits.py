"""Split drawing is deterministic, canonical and validated; the split file format is strict; the repository's
pinned splits are consistent with the full SciFact mirror (../shared/data/scifact) and reproducible from it
(skipped, saying why, when the mirror is absent)."""

import hashlib
import json

import pytest
from conftest import FIXTURE, ROOT, full_mirror

from rerank_study.core.errors import MalformedInputError
from rerank_study.data import beir, splits

LOCK = ROOT / "lockfiles"


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


# ----------------------------------- on the full SciFact mirror (skips, saying why, when it is absent) --
@pytest.mark.full_data
def test_pinned_splits_are_consistent_with_the_data_and_reproducible():
    mirror = full_mirror()
    derived = json.loads((LOCK / "derived_pins.json").read_text())["splits"]
    dev = splits.read_split(LOCK / derived["dev"]["path"])
    confirm = splits.read_split(LOCK / derived["confirm"]["path"])
    for name, ids in (("dev", dev), ("confirm", confirm)):
        assert hashlib.sha256(splits.split_text(ids).encode()).hexdigest() == derived[name]["sha256"]
    train = beir.read_qrels(mirror / "qrels/train.tsv")  # the development judgements only
    queries = beir.read_queries(mirror / "queries.jsonl")
    assert len(dev) == 100 and set(dev) <= set(train)
    assert confirm == splits.confirmation_ids(queries, train) and len(confirm) == 300
    # drawing again with the pinned seed gives the pinned list (the pipeline never redraws; this proves it
    # could)
    assert splits.draw_dev_split(train, derived["dev_size"], derived["seed"]) == dev
