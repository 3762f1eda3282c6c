"""Reading pins and checking files against them (rerank_study.data.pins). Hashes are computed here with
hashlib; the archives are small files written by the test; a download is a file:// URL (no network)."""

import hashlib
import json
import logging

import pytest

from rerank_study.core.errors import MalformedInputError, MissingInputError, PinMismatchError
from rerank_study.data import pins

SHA_OF = {b"abc": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}  # FIPS 180-2 example


def test_data_pins_load_a_zip_pinned_dataset(tmp_path):
    path = tmp_path / "data_pins.json"
    z = {"url": "https://x/nfcorpus.zip", "sha256": "s", "md5": "m", "bytes": "123", "top_folder": "nf"}
    path.write_text(json.dumps({"dataset": "nfcorpus", "zip": z,
                                "files": {"corpus.jsonl": {"sha256": "c", "bytes": 4}}}))
    dp = pins.DataPins.load(path)
    assert (dp.url, dp.zip_sha256, dp.zip_md5, dp.zip_bytes, dp.zip_top) == ("https://x/nfcorpus.zip", "s",
                                                                           "m", 123, "nf")
    assert dp.zip_name == "nfcorpus.zip"
    assert dp.pin("corpus.jsonl") == {"sha256": "c", "bytes": 4}


def test_data_pins_of_a_local_only_dataset_have_no_zip_and_default_to_scifact(tmp_path):
    path = tmp_path / "data_pins.json"
    path.write_text(json.dumps({"files": {}}))
    dp = pins.DataPins.load(path)
    assert (dp.url, dp.zip_sha256, dp.zip_md5, dp.zip_bytes, dp.zip_top) == (None,) * 5
    assert dp.dataset == "scifact" and dp.zip_name == "scifact.zip"


def test_a_file_without_a_pin_is_named_with_the_pinned_ones(tmp_path):
    dp = pins.DataPins(None, None, None, None, None, {"queries.jsonl": {}, "corpus.jsonl": {}})
    with pytest.raises(KeyError, match=r"'qrels/test.tsv' has no pin in the data lockfile \(pinned: "
                                       r"\['corpus.jsonl', 'queries.jsonl'\]\)"):
        dp.pin("qrels/test.tsv")


def test_data_pins_refuse_a_repeated_key(tmp_path):
    path = tmp_path / "data_pins.json"
    path.write_text('{"files": {}, "files": {}}')
    with pytest.raises(MalformedInputError, match="repeated"):
        pins.DataPins.load(path)


def test_model_pins_are_read_from_the_lock_folder(tmp_path):
    (tmp_path / "model_pins.json").write_text('{"reranker": {"revision": "abc"}}')
    assert pins.load_model_pins(tmp_path) == {"reranker": {"revision": "abc"}}


def test_derived_pins_start_empty_and_set_pin_writes_canonical_json(tmp_path):
    assert pins.derived_path(tmp_path) == tmp_path / "derived_pins.json"
    assert pins.load_derived(tmp_path) == {} and pins.get_pin(tmp_path, "splits") is None
    pins.set_pin(tmp_path, "splits", {"sha256": "x", "n": 2})
    pins.set_pin(tmp_path, "candidates", {"sha256": "y"})
    assert pins.get_pin(tmp_path, "splits") == {"sha256": "x", "n": 2}
    assert (tmp_path / "derived_pins.json").read_text() == json.dumps(
        {"candidates": {"sha256": "y"}, "splits": {"n": 2, "sha256": "x"}}, sort_keys=True, indent=2) + "\n"


def test_a_changed_pin_is_rewritten_with_a_warning_an_equal_one_silently(tmp_path, caplog):
    pins.set_pin(tmp_path, "splits", {"sha256": "x"})
    with caplog.at_level(logging.WARNING, logger="rerank_study.data.pins"):
        pins.set_pin(tmp_path, "splits", {"sha256": "x"})
        assert not caplog.records
        pins.set_pin(tmp_path, "splits", {"sha256": "z"})
    assert "RE-PINNING splits" in caplog.text and '"x"' in caplog.text and '"z"' in caplog.text
    assert pins.get_pin(tmp_path, "splits") == {"sha256": "z"}


def test_verify_against_gives_the_checked_bytes_or_names_both_hashes(tmp_path):
    path = tmp_path / "dev.txt"
    path.write_bytes(b"abc")
    checked = pins.verify_against(path, SHA_OF[b"abc"], "dev split list", "restore it from git")
    assert checked.data == b"abc" and checked.path == path
    with pytest.raises(PinMismatchError) as info:
        pins.verify_against(path, "0" * 64, "dev split list", "restore it from git")
    msg = str(info.value)
    assert msg.startswith(f"PIN MISMATCH for dev split list: {path}")
    assert f"sha256 expected: {'0' * 64}" in msg and f"sha256 actual:   {SHA_OF[b'abc']}" in msg
    assert msg.endswith("restore it from git")


def test_frozen_candidates_are_checked_against_their_pin(tmp_path):
    table = tmp_path / "candidates.tsv"
    table.write_bytes(b"abc")
    derived = tmp_path / "derived_pins.json"
    derived.write_text(json.dumps({"candidates": {"sha256": SHA_OF[b"abc"], "rows": 1}}))
    pin, checked = pins.verify_frozen_candidates(derived, table)
    assert pin == {"sha256": SHA_OF[b"abc"], "rows": 1} and checked.data == b"abc"
    table.write_bytes(b"abd")
    with pytest.raises(PinMismatchError, match=r"(?s)frozen candidate table.*git checkout -- lockfiles/cand"):
        pins.verify_frozen_candidates(derived, table)


def test_frozen_candidates_without_a_pin_say_how_to_restore_or_freeze(tmp_path):
    derived = tmp_path / "derived_pins.json"
    derived.write_text("{}")
    with pytest.raises(MissingInputError, match=r"NO CANDIDATE PIN in .*derived_pins\.json.*repin=cand"):
        pins.verify_frozen_candidates(derived, tmp_path / "candidates.tsv")


def archive(tmp_path, data=b"PK fake archive"):
    path = tmp_path / "scifact.zip"
    path.write_bytes(data)
    return path, {"bytes": len(data), "md5": hashlib.md5(data).hexdigest(),
                  "sha256": hashlib.sha256(data).hexdigest()}


def test_verify_archive_returns_size_md5_and_sha256(tmp_path):
    path, good = archive(tmp_path)
    assert pins.verify_archive(path, "scifact.zip", good, "https://x") == good
    # a catalogue entry has size and md5 only
    assert pins.verify_archive(path, "scifact.zip", {"bytes": good["bytes"], "md5": good["md5"]}, "u") == good


@pytest.mark.parametrize("field, algo", [("bytes", "size (bytes)"), ("md5", "md5"), ("sha256", "sha256")])
def test_verify_archive_names_the_first_value_that_differs(tmp_path, field, algo):
    path, good = archive(tmp_path)
    bad = dict(good, **{field: good[field] + 1 if field == "bytes" else "f" * len(good[field])})
    with pytest.raises(PinMismatchError) as info:
        pins.verify_archive(path, "scifact.zip", bad, "https://x/scifact.zip")
    exc = info.value
    assert (exc.algo, exc.expected, exc.actual, exc.source) == (algo, bad[field], good[field],
                                                                "https://x/scifact.zip")
    assert str(exc).endswith(pins.ARCHIVE_FIX)


def test_download_copies_the_bytes_or_names_the_url_and_the_way_around(tmp_path):
    src = tmp_path / "src.zip"
    src.write_bytes(b"abc")
    dest = tmp_path / "dest.zip"
    pins.download(src.as_uri(), dest, timeout=5)
    assert dest.read_bytes() == b"abc"
    missing = (tmp_path / "absent.zip").as_uri()
    with pytest.raises(MissingInputError, match=rf"DOWNLOAD FAILED: {missing}: .*data_zip=\.\.\."):
        pins.download(missing, tmp_path / "d2.zip", timeout=5)
