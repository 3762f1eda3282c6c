"""repin=data from a local BEIR-layout folder outside the catalogue
(rerank_study.data.catalogue.pin_local_dataset): the pins of the synthetic dataset equal the committed
hand-written
ones (tests/data/studies/synthetic/lockfiles/ data_pins.json) but for the free-text `_comment` and one added
field, the sealed file's query ids (the confirmation split; sorted here from the file with csv); every sha256
is computed here with hashlib. A missing file, a qrels row of an unknown query, a malformed line and existing
pins stop with nothing written."""

from __future__ import annotations

import csv
import hashlib
import shutil

import pytest
from conftest import STUDY_DIR, SYNTH, read_json

from rerank_study.core.errors import MalformedInputError, MissingInputError, PipelineError
from rerank_study.data import catalogue

COMMITTED = STUDY_DIR / "synthetic" / "lockfiles" / "data_pins.json"


def pin(folder, pins_path, **kw):
    return catalogue.pin_local_dataset(folder, "synthetic-beir", pins_path, dev_qrels="dev",
                                       confirm_qrels="test", **kw)


def copy_of_synthetic(tmp_path):
    folder = tmp_path / "beir"
    shutil.copytree(SYNTH, folder)
    return folder


def test_the_pins_equal_the_committed_ones_plus_the_sealed_files_queries(tmp_path):
    pins = pin(SYNTH, tmp_path / "data_pins.json")
    assert read_json(tmp_path / "data_pins.json") == pins and "zip" not in pins
    committed = read_json(COMMITTED)
    with open(SYNTH / "qrels" / "test.tsv", newline="") as fh:
        sealed_ids = sorted({row["query-id"] for row in csv.DictReader(fh, delimiter="\t")})
    assert pins["files"]["qrels/test.tsv"].pop("queries") == sealed_ids  # the added field
    assert pins["files"] == committed["files"] and pins["dataset"] == committed["dataset"]
    for rel in ("corpus.jsonl", "queries.jsonl", "qrels/dev.tsv", "qrels/test.tsv"):
        assert pins["files"][rel]["sha256"] == hashlib.sha256((SYNTH / rel).read_bytes()).hexdigest(), rel
    assert "the local folder" in pins["_comment"] and "no archive" in pins["_comment"]


def test_a_missing_file_stops_naming_it_and_what_the_folder_holds(tmp_path):
    folder = copy_of_synthetic(tmp_path)
    (folder / "qrels" / "test.tsv").unlink()
    with pytest.raises(MissingInputError) as exc:
        pin(folder, tmp_path / "data_pins.json")
    msg = str(exc.value)
    assert f"MISSING FILE in data_dir {folder}: qrels/test.tsv" in msg
    assert "expected: corpus.jsonl, queries.jsonl, qrels/dev.tsv, qrels/test.tsv (BEIR layout)" in msg
    assert "found: ['corpus.jsonl', 'qrels/dev.tsv', 'queries.jsonl']" in msg
    assert "fix: give the folder" in msg
    assert not (tmp_path / "data_pins.json").exists()


def test_a_qrels_row_of_an_unknown_query_stops_naming_it(tmp_path):
    folder = copy_of_synthetic(tmp_path)
    with open(folder / "qrels" / "dev.tsv", "a") as fh:
        fh.write("q99\td001\t1\n")
    with pytest.raises(PipelineError) as exc:
        pin(folder, tmp_path / "data_pins.json")
    msg = str(exc.value)
    assert (f"INCONSISTENT DATA: qrels/dev.tsv of {folder} judges 1 query id(s) absent from queries.jsonl "
            f"of {folder}") in msg
    assert "expected: every judged query id in queries.jsonl" in msg and "found: ['q99'] absent" in msg
    assert "fix: use another split" in msg and not (tmp_path / "data_pins.json").exists()


def test_a_malformed_corpus_line_and_existing_pins_write_nothing(tmp_path):
    folder = copy_of_synthetic(tmp_path)
    with open(folder / "corpus.jsonl", "a") as fh:
        fh.write('{"_id": "d999", "title": "t"\n')
    with pytest.raises(MalformedInputError, match=r"corpus.jsonl, line 81"):
        pin(folder, tmp_path / "data_pins.json")
    assert not (tmp_path / "data_pins.json").exists()
    (tmp_path / "data_pins.json").write_text("{}")
    with pytest.raises(PipelineError, match="ALREADY PINNED"):
        pin(SYNTH, tmp_path / "data_pins.json")
    assert (tmp_path / "data_pins.json").read_text() == "{}"
