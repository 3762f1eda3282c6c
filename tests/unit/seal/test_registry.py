"""seal.registry: a sealed set is its content; the development side may hold none of any set's data."""

from __future__ import annotations

import hashlib
import shutil

import pytest
from conftest import DATA, FIXTURE, ROOT, make_lockdir, read_json

from rerank_study.core.errors import SealError
from rerank_study.core.fileio import write_json
from rerank_study.data import beir
from rerank_study.seal import registry


def test_text_hash_normalises_case_and_whitespace_only():
    # by hand: case, a tab, runs of spaces and the ends fold away: " A  b\tC. " -> "a b c."
    assert registry.text_sha256(" A  b\tC. ") == hashlib.sha256(b"a b c.").hexdigest()
    assert registry.text_sha256("a b c") != registry.text_sha256("a b c.")


def test_the_repository_lock_folders_carry_a_record_of_their_sealed_set_that_matches_their_pins():
    s = registry.load_sealed_set(ROOT / "lockfiles")
    pins = read_json(ROOT / "lockfiles/data_pins.json")["files"]
    assert (s.file, s.file_sha256, s.content_sha256) == ("qrels/test.tsv", pins["qrels/test.tsv"]["sha256"],
                                                         pins["qrels/test.tsv"]["content_sha256"])
    assert s.query_ids == frozenset((ROOT / "lockfiles/splits/confirm.txt").read_text().split()) \
        and len(s.query_ids) == 300
    assert s.key == hashlib.sha256(f"{s.content_sha256}\n{s.corpus_sha256}".encode()).hexdigest()
    for lock in (DATA / "lockfiles", DATA / "studies/synthetic/lockfiles"):
        assert registry.load_sealed_set(lock).query_ids == \
            frozenset((lock / "splits/confirm.txt").read_text().split())


def test_the_fixture_seals_no_real_sealed_query():
    """The test fixture's own sealed set is made of BEIR-train claims: it shares no id, text or content with
    the repository's real sealed set, and the registry says so."""
    real, fixture = registry.load_sealed_set(ROOT / "lockfiles"), registry.load_sealed_set(DATA / "lockfiles")
    assert real.same_corpus(fixture.dataset, fixture.corpus_sha256)  # both are "scifact"
    assert not real.overlaps(fixture) and not (real.query_ids & fixture.query_ids)


def test_a_missing_or_stale_record_fails_closed(tmp_path):
    lock = make_lockdir(tmp_path / "lock")
    derived = read_json(lock / "derived_pins.json")
    rec = derived.pop("sealed_set")
    write_json(lock / "derived_pins.json", derived)
    with pytest.raises(SealError, match="has no sealed_set record.*repin=splits"):
        registry.load_sealed_set(lock)
    derived["sealed_set"] = dict(rec, content_sha256="0" * 64)
    write_json(lock / "derived_pins.json", derived)
    with pytest.raises(SealError, match="differs from .*data_pins.json in content_sha256"):
        registry.load_sealed_set(lock)
    derived["sealed_set"] = dict(rec, queries={**rec["queries"], "999": "0" * 64})
    write_json(lock / "derived_pins.json", derived)
    with pytest.raises(SealError, match="names other queries than .*splits/confirm.txt"):
        registry.load_sealed_set(lock)


def sealed_set(lockdir="x", dataset="d", corpus="c", content="h", ids=("1",), texts=("t1",)):
    return registry.SealedSet(lockdir, dataset, corpus, "qrels/test.tsv", "f" + content, content,
                              frozenset(ids), frozenset(texts))


def test_overlap_by_content_by_id_on_the_same_corpus_and_by_text_on_any_corpus():
    a = sealed_set()
    # content
    assert a.overlaps(sealed_set(content="h", ids=("9",), texts=("t9",), corpus="other", dataset="other"))
    # id, same name
    assert a.overlaps(sealed_set(content="z", ids=("1",), texts=("t9",), dataset="d", corpus="other"))
    # id, same corpus
    assert a.overlaps(sealed_set(content="z", ids=("1",), texts=("t9",), dataset="e", corpus="c"))
    # id elsewhere
    assert not a.overlaps(sealed_set(content="z", ids=("1",), texts=("t9",), dataset="e", corpus="other"))
    # text anywhere
    assert a.overlaps(sealed_set(content="z", ids=("9",), texts=("t1",), dataset="e", corpus="other"))


def test_conflicts_name_each_source_and_both_folders():
    s = sealed_set(lockdir="/sealed/folder", ids=("1", "2"), texts=(registry.text_sha256("Sealed claim."),))
    side = registry.DevelopmentSide("/dev/folder", "d", "c", files={"qrels/x.tsv": {"content_sha256": "h"}},
                                    query_ids={"development split": {"2", "3"}},
                                    texts={"7": registry.text_sha256("sealed  CLAIM.")})
    found = registry.conflicts(side, [s])
    assert len(found) == 3
    assert ("development file qrels/x.tsv of /dev/folder holds exactly the sealed set of "
            "/sealed/folder") in found[0]
    assert "development split of /dev/folder holds 1 sealed query id(s)" in found[1] and "['2']" in found[1]
    assert "1 development query(ies) of /dev/folder have the text of a sealed query" in found[2]
    side.dataset, side.corpus_sha256 = "other", "other"  # another corpus: the ids are another namespace
    assert len(registry.conflicts(side, [s])) == 2


def test_the_development_side_of_a_lock_folder_reads_its_split_candidates_and_verified_data(tmp_path):
    lock = make_lockdir(tmp_path / "lock")
    side = registry.development_side(lock, FIXTURE)
    dev = set((lock / "splits/dev.txt").read_text().split())
    assert side.query_ids["development split"] == dev == side.query_ids["development candidates"]
    assert side.query_ids["development qrels"] == set(beir.read_qrels(FIXTURE / "qrels/train.tsv"))
    assert set(side.texts) == dev
    # an unverified data folder is not read (the job that verifies it runs the same check)
    bad = tmp_path / "bad"
    shutil.copytree(FIXTURE, bad)
    (bad / "queries.jsonl").write_text("{}\n")
    assert "development qrels" in registry.development_side(lock, bad).query_ids
    assert registry.development_side(lock, bad).texts == {}


def test_scifacts_own_text_twins_are_outside_the_development_split():
    """SciFact holds two claims twice, once per split, with the same cited document: 870/871 and 1291/1292.
    The committed development split holds neither twin; had the draw picked one, the text rule would refuse
    it."""
    real = registry.load_sealed_set(ROOT / "lockfiles")
    dev = set((ROOT / "lockfiles/splits/dev.txt").read_text().split())
    assert {"870", "1292"} <= real.query_ids and not {"871", "1291"} & dev
