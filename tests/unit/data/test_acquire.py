"""Pinned acquisition of the dataset files: from a mirror, a local zip or a download (a local HTTP server),
each verified against its sha256 pin before use; a verified cache is never overwritten; the pins of the
committed fixture; the full SciFact mirror (../shared/data/scifact) against the repository's pins, skipped,
saying why, when it is absent (CI clones have only the committed fixture)."""

import hashlib
import json
import shutil
import zipfile
from pathlib import Path

import pytest
from conftest import DATA, FIXTURE, ROOT, full_mirror, serve_folder

from rerank_study.core.errors import MissingInputError, PinMismatchError
from rerank_study.data import acquire, beir
from rerank_study.data.pins import DataPins

NAMES = ["corpus.jsonl", "queries.jsonl", "qrels/train.tsv", "qrels/test.tsv"]


def sha(p):
    return hashlib.sha256(Path(p).read_bytes()).hexdigest()


@pytest.fixture
def pins():
    return DataPins.load(DATA / "lockfiles" / "data_pins.json")


def test_lockfile_guard_fixture_pins_are_its_sha256sums(pins):
    """Guards an edit of the fixture or its pins (not code): pins == SHA256SUMS == hashlib of the files."""
    sums = dict(reversed(l.split("  ")) for l in (FIXTURE / "SHA256SUMS").read_text().splitlines())
    for name in NAMES:
        assert pins.pin(name)["sha256"] == sums[name] == sha(FIXTURE / name)


def test_acquire_from_mirror_then_cache(tmp_path, pins):
    cache = tmp_path / "cache"
    prov = acquire.acquire(NAMES[:3], pins, cache, mirror=FIXTURE)
    assert {v["source"].split()[0] for v in prov.values()} == {"mirror"}
    assert sha(cache / "corpus.jsonl") == pins.pin("corpus.jsonl")["sha256"]
    prov2 = acquire.acquire(NAMES[:3], pins, cache, mirror=None)  # no source needed any more
    assert {v["source"] for v in prov2.values()} == {"cache"}


def test_wrong_hash_in_mirror_names_file_hashes_and_source(tmp_path, pins):
    mirror = tmp_path / "mirror"
    shutil.copytree(FIXTURE, mirror)
    bad = mirror / "queries.jsonl"
    bad.write_bytes(bad.read_bytes().replace(b"0-dimensional", b"1-dimensional"))
    with pytest.raises(PinMismatchError) as exc:
        acquire.acquire(["queries.jsonl"], pins, tmp_path / "cache", mirror=mirror)
    msg = str(exc.value)
    assert "queries.jsonl" in msg and pins.pin("queries.jsonl")["sha256"] in msg and sha(bad) in msg
    assert f"mirror {bad}" in msg
    assert not (tmp_path / "cache" / "queries.jsonl").exists()


def test_truncated_file_is_rejected_by_hash(tmp_path, pins):
    mirror = tmp_path / "mirror"
    shutil.copytree(FIXTURE, mirror)
    p = mirror / "corpus.jsonl"
    p.write_bytes(p.read_bytes()[:-100])
    with pytest.raises(PinMismatchError, match="corpus.jsonl"):
        acquire.acquire(["corpus.jsonl"], pins, tmp_path / "cache", mirror=mirror)


def test_missing_everything_says_how_to_supply_it(tmp_path, pins):
    with pytest.raises(MissingInputError) as exc:
        acquire.acquire(["corpus.jsonl"], pins, tmp_path / "cache", mirror=tmp_path / "empty", url=None)
    msg = str(exc.value)
    assert "corpus.jsonl" in msg and "data_mirror=" in msg and pins.url in msg


def test_verified_cache_is_never_overwritten(tmp_path, pins):
    cache = tmp_path / "cache"
    acquire.acquire(["queries.jsonl"], pins, cache, mirror=FIXTURE)
    (cache / "queries.jsonl").write_bytes(b"tampered\n")
    with pytest.raises(PinMismatchError, match="changed after it was verified"):
        acquire.acquire(["queries.jsonl"], pins, cache, mirror=FIXTURE)
    assert (cache / "queries.jsonl").read_bytes() == b"tampered\n"  # left for inspection, not replaced


def test_content_hash_hint_for_reordered_qrels(tmp_path, pins):
    mirror = tmp_path / "mirror"
    shutil.copytree(FIXTURE, mirror)
    p = mirror / "qrels/train.tsv"
    lines = p.read_bytes().split(b"\r\n")
    p.write_bytes(b"\r\n".join([lines[0]] + list(reversed([l for l in lines[1:] if l]))) + b"\r\n")
    with pytest.raises(PinMismatchError, match="judgements are IDENTICAL"):
        acquire.acquire(["qrels/train.tsv"], pins, tmp_path / "cache", mirror=mirror)


def _fixture_zip(tmp_path):
    zpath = tmp_path / "scifact.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        for n in NAMES:
            zf.write(FIXTURE / n, f"scifact/{n}")
    raw = json.loads((DATA / "lockfiles" / "data_pins.json").read_text())
    raw["zip"].update({"sha256": sha(zpath), "md5": hashlib.md5(zpath.read_bytes()).hexdigest(),
                       "bytes": zpath.stat().st_size})
    pin_path = tmp_path / "pins.json"
    pin_path.write_text(json.dumps(raw))
    return zpath, DataPins.load(pin_path)


def test_acquire_from_local_zip_verifies_zip_and_members(tmp_path):
    zpath, zpins = _fixture_zip(tmp_path)
    prov = acquire.acquire(NAMES[:3], zpins, tmp_path / "cache", zip_path=zpath)
    assert all(v["source"].startswith(f"zip {zpath}") for v in prov.values())
    # a zip with the right size but a wrong md5/sha256 is refused before extraction
    bad = tmp_path / "bad.zip"
    data = bytearray(zpath.read_bytes())
    data[100] ^= 1
    bad.write_bytes(bytes(data))
    with pytest.raises(PinMismatchError, match="scifact.zip"):
        acquire.acquire(["corpus.jsonl"], zpins, tmp_path / "cache2", zip_path=bad)
    assert not (tmp_path / "cache2" / "corpus.jsonl").exists()


def test_download_path_with_a_local_http_server(tmp_path):
    """The real download code (urllib) against a local server standing in for the BEIR host."""
    zpath, zpins = _fixture_zip(tmp_path)
    serve = tmp_path / "www"
    serve.mkdir()
    shutil.copy(zpath, serve / "scifact.zip")
    (serve / "broken.zip").write_bytes(zpath.read_bytes()[:-10])

    with serve_folder(serve) as base:
        dl = tmp_path / "dl"
        with pytest.raises(PinMismatchError, match="size"):
            acquire.acquire(["corpus.jsonl"], zpins, tmp_path / "c1", url=f"{base}/broken.zip",
                            download_dir=dl)
        assert not (dl / "scifact.zip").exists()  # never renamed into place
        prov = acquire.acquire(NAMES[:3], zpins, tmp_path / "c2", url=f"{base}/scifact.zip", download_dir=dl)
        assert (dl / "scifact.zip").exists()
        assert all("downloaded" in v["source"] for v in prov.values())


# ----------------------------------- on the full SciFact mirror (skips, saying why, when it is absent) --
@pytest.mark.full_data
def test_full_mirror_matches_every_pin(tmp_path):
    mirror = full_mirror()
    pins = DataPins.load(ROOT / "lockfiles" / "data_pins.json")
    prov = acquire.acquire(["corpus.jsonl", "queries.jsonl", "qrels/train.tsv"], pins, tmp_path,
                           mirror=mirror)
    assert all(v["verified_by"] == "sha256" for v in prov.values())
    assert len(beir.read_corpus(tmp_path / "corpus.jsonl")) == 5183
    assert len(beir.read_queries(tmp_path / "queries.jsonl")) == 1109
    qrels = beir.read_qrels(tmp_path / "qrels/train.tsv")
    assert len(qrels) == 809 and sum(len(v) for v in qrels.values()) == 919
    assert beir.qrels_content_sha256(qrels) == pins.pin("qrels/train.tsv")["content_sha256"]
