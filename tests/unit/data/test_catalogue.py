"""The public BEIR catalogue (lockfiles/datasets/beir.json) and the explicit first verified acquisition.

Expected hashes are computed here with hashlib from the bytes put into the zip, never by the code
under test. content_sha256 follows beir.py's documented definition: sha256 of the sorted
``qid\\tdocid\\tscore\\n`` rows.
"""

import datetime
import hashlib
import json
import re
import shutil
import tempfile
import zipfile

import pytest
from conftest import ROOT, serve_folder

from rerank_study.core.errors import (
    ConfigError,
    MalformedInputError,
    MissingInputError,
    PinMismatchError,
    PipelineError,
)
from rerank_study.data import acquire, catalogue
from rerank_study.data.pins import DataPins

CATALOGUE = ROOT / "lockfiles" / "datasets" / "beir.json"
DATA_PINS = ROOT / "lockfiles" / "data_pins.json"

CORPUS = b"".join(json.dumps({"_id": f"d{i}", "title": f"T{i}", "text": f"text {i}"}).encode() + b"\n"
                  for i in range(1, 6))
QUERIES = b"".join(json.dumps({"_id": str(i), "text": f"query {i}", "metadata": {}}).encode() + b"\n"
                   for i in range(1, 5))
TRAIN = b"query-id\tcorpus-id\tscore\n1\td1\t1\n2\td3\t1\n2\td2\t0\n"
TEST = b"query-id\tcorpus-id\tscore\r\n4\td5\t1\r\n3\td4\t2\r\n"  # CRLF: hashed as is
GOOD = {"corpus.jsonl": CORPUS, "queries.jsonl": QUERIES, "qrels/train.tsv": TRAIN, "qrels/test.tsv": TEST}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def content_sha(data: bytes) -> str:
    rows = [line.split("\t") for line in data.decode().splitlines()[1:]]
    return sha("".join(sorted(f"{q}\t{d}\t{int(s)}\n" for q, d, s in rows)).encode())


def make_zip(tmp_path, files=GOOD, name="toyset"):
    zpath = tmp_path / f"{name}.zip"
    with zipfile.ZipFile(zpath, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel, data in files.items():
            zf.writestr(f"{name}/{rel}", data)
    return zpath


def entry_for(zpath, **over):
    data = zpath.read_bytes()
    entry = {"name": "toyset", "url": "https://example.invalid/beir/toyset.zip",
             "md5": hashlib.md5(data).hexdigest(), "bytes": len(data), "zip_top_folder": "toyset",
             "qrels_splits": ["train", "test"], "sha256": None, "note": "test archive"}
    entry.update(over)
    return entry


def pin(entry, pins_path, zpath, **kw):
    kw.setdefault("confirm_qrels", "test")
    return catalogue.pin_first_acquisition(entry, pins_path, dev_qrels="train", zip_path=zpath, **kw)


def key_shape(obj):
    """The nested key structure of a pins file (values dropped)."""
    return {k: key_shape(v) for k, v in obj.items()} if isinstance(obj, dict) else type(obj).__name__


# ------------------------------------------------------------------------- good pin --
def test_good_pin_writes_data_pins_format_with_independent_hashes(tmp_path):
    zpath = make_zip(tmp_path)
    zbytes = zpath.read_bytes()
    pins_path = tmp_path / "lock" / "pins.json"
    written = pin(entry_for(zpath), pins_path, zpath)

    text = pins_path.read_text()
    assert json.loads(text) == written
    assert text == json.dumps(written, sort_keys=True, indent=2, ensure_ascii=True) + "\n"
    # exactly the structure of the project's SciFact pins
    # (plus the sealed file's query ids: the confirmation split, pinned without reading a judgement later)
    assert written["files"]["qrels/test.tsv"].pop("queries") == sorted({l.split(b"\t")[0].decode()
                                                                       for l in TEST.splitlines()[1:]})
    assert key_shape(written) == key_shape(json.loads(DATA_PINS.read_text()))
    assert written["dataset"] == "toyset"
    assert written["zip"] == {"bytes": len(zbytes), "md5": hashlib.md5(zbytes).hexdigest(),
                              "sha256": sha(zbytes), "top_folder": "toyset",
                              "url": "https://example.invalid/beir/toyset.zip"}
    roles = {"corpus.jsonl": "corpus", "queries.jsonl": "queries", "qrels/train.tsv": "qrels_dev",
             "qrels/test.tsv": "qrels_confirm"}
    for rel, data in GOOD.items():
        f = written["files"][rel]
        assert (f["sha256"], f["bytes"], f["lines"], f["role"]) == (sha(data), len(data),
                                                                    data.count(b"\n"), roles[rel])
    assert written["files"]["qrels/train.tsv"]["content_sha256"] == content_sha(TRAIN)
    assert written["files"]["qrels/test.tsv"]["content_sha256"] == content_sha(TEST)
    assert written["files"]["qrels/test.tsv"]["sealed"] is True
    assert "sealed" not in written["files"]["qrels/train.tsv"]
    today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    assert "first verified acquisition" in written["_comment"] and today in written["_comment"]
    assert f"local archive {zpath}" in written["_comment"]


def test_written_pins_drive_the_pinned_acquisition(tmp_path):
    zpath = make_zip(tmp_path)
    pin(entry_for(zpath), tmp_path / "pins.json", zpath)
    pins = DataPins.load(tmp_path / "pins.json")
    prov = acquire.acquire(list(GOOD), pins, tmp_path / "cache", zip_path=zpath)
    assert {k: v["sha256"] for k, v in prov.items()} == {k: sha(v) for k, v in GOOD.items()}


def test_download_with_a_local_http_server(tmp_path):
    zpath = make_zip(tmp_path)
    serve = tmp_path / "www"
    serve.mkdir()
    shutil.copy(zpath, serve / "toyset.zip")

    with serve_folder(serve) as base:
        url = f"{base}/toyset.zip"
        written = catalogue.pin_first_acquisition(entry_for(zpath), tmp_path / "pins.json", dev_qrels="train",
                                                  confirm_qrels=None, url=url)
    assert f"download {url}" in written["_comment"]
    assert written["zip"]["sha256"] == sha(zpath.read_bytes())
    assert sorted(written["files"]) == ["corpus.jsonl", "qrels/train.tsv", "queries.jsonl"]


# ------------------------------------------------------------------------- refusals --
def test_wrong_md5_names_both_values_and_writes_nothing(tmp_path, monkeypatch):
    zpath = make_zip(tmp_path)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # where the code under test makes its work folder
    good = entry_for(zpath)
    bad_md5 = "0" * 32
    with pytest.raises(PinMismatchError) as exc:
        pin(dict(good, md5=bad_md5), tmp_path / "pins.json", zpath)
    msg = str(exc.value)
    assert bad_md5 in msg and good["md5"] in msg and "toyset.zip" in msg and "md5" in msg
    assert not (tmp_path / "pins.json").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scratch", "toyset.zip"]
    assert list(scratch.iterdir()) == []  # its temporary work folder is gone too


def test_wrong_size_is_refused_before_the_md5(tmp_path):
    zpath = make_zip(tmp_path)
    good = entry_for(zpath)
    with pytest.raises(PinMismatchError, match=r"size \(bytes\)") as exc:
        pin(dict(good, bytes=good["bytes"] + 1), tmp_path / "pins.json", zpath)
    assert str(good["bytes"] + 1) in str(exc.value) and str(good["bytes"]) in str(exc.value)
    assert not (tmp_path / "pins.json").exists()


def test_catalogued_sha256_must_match_too(tmp_path):
    zpath = make_zip(tmp_path)
    with pytest.raises(PinMismatchError, match="sha256"):
        pin(entry_for(zpath, sha256="f" * 64), tmp_path / "pins.json", zpath)
    assert not (tmp_path / "pins.json").exists()


def test_missing_qrels_member_is_named(tmp_path):
    files = {k: v for k, v in GOOD.items() if k != "qrels/test.tsv"}
    zpath = make_zip(tmp_path, files)
    with pytest.raises(MissingInputError, match=re.escape("toyset/qrels/test.tsv")) as exc:
        pin(entry_for(zpath), tmp_path / "pins.json", zpath)
    assert str(zpath) in str(exc.value)
    assert not (tmp_path / "pins.json").exists()


def test_judged_query_absent_from_queries_is_refused(tmp_path):
    zpath = make_zip(tmp_path, dict(GOOD, **{"qrels/train.tsv": TRAIN + b"99\td1\t1\n"}))
    with pytest.raises(PipelineError, match="absent from") as exc:
        pin(entry_for(zpath), tmp_path / "pins.json", zpath)
    assert "toyset/qrels/train.tsv" in str(exc.value) and "'99'" in str(exc.value)
    assert not (tmp_path / "pins.json").exists()


def test_malformed_member_is_refused_by_the_strict_reader(tmp_path):
    zpath = make_zip(tmp_path, dict(GOOD, **{"corpus.jsonl": CORPUS + b'{"_id": "d9", "title": "x"\n'}))
    with pytest.raises(MalformedInputError, match="line 6"):
        pin(entry_for(zpath), tmp_path / "pins.json", zpath)
    assert not (tmp_path / "pins.json").exists()


def test_existing_pins_file_is_never_replaced(tmp_path):
    zpath = make_zip(tmp_path)
    pins_path = tmp_path / "pins.json"
    pins_path.write_text("{}\n")
    with pytest.raises(PipelineError, match="already pinned"):
        pin(entry_for(zpath), pins_path, zpath)
    assert pins_path.read_text() == "{}\n"


def test_split_not_in_the_entry_and_same_split_twice_are_refused(tmp_path):
    zpath = make_zip(tmp_path)
    with pytest.raises(ConfigError, match="'dev'"):
        catalogue.pin_first_acquisition(entry_for(zpath), tmp_path / "p.json", dev_qrels="dev",
                                        confirm_qrels=None, zip_path=zpath)
    with pytest.raises(ConfigError, match="another split"):
        catalogue.pin_first_acquisition(entry_for(zpath), tmp_path / "p.json", dev_qrels="train",
                                        confirm_qrels="train", zip_path=zpath)


# ------------------------------------------------------------------------ catalogue --
def test_unknown_dataset_lists_known_names_and_how_to_add(tmp_path):
    with pytest.raises(ConfigError) as exc:
        catalogue.load_entry(CATALOGUE, "scifakt")
    msg = str(exc.value)
    assert "scifakt" in msg and str(CATALOGUE) in msg and "scifact" in msg and "nfcorpus" in msg
    assert "To add one" in msg


def test_load_entry_returns_the_entry_with_its_name():
    entry = catalogue.load_entry(CATALOGUE, "scifact")
    raw = json.loads(CATALOGUE.read_text())["datasets"]["scifact"]
    assert entry == dict(raw, name="scifact")


def test_every_catalogue_entry_is_well_formed():
    raw = json.loads(CATALOGUE.read_text())
    assert CATALOGUE.read_text() == json.dumps(raw, indent=1, sort_keys=True) + "\n"
    datasets = raw["datasets"]
    assert len(datasets) == 15
    for name, e in datasets.items():
        assert re.fullmatch(r"[0-9a-f]{32}", e["md5"]), name
        assert e["url"].startswith("https://") and e["url"].endswith(f"/{name}.zip"), name
        assert isinstance(e["bytes"], int) and e["bytes"] > 0, name
        assert e["sha256"] is None, name
        assert e["zip_top_folder"] == name and e["qrels_splits"], name
    assert "NOT USABLE AS ONE BEIR FOLDER" in datasets["cqadupstack"]["note"]
    assert "12 sub-forum" in datasets["cqadupstack"]["note"]
    z = json.loads(DATA_PINS.read_text())["zip"]
    assert (datasets["scifact"]["md5"], datasets["scifact"]["bytes"], datasets["scifact"]["url"]) == (
        z["md5"], z["bytes"], z["url"])
