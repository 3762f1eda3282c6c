"""The sealed set is its content, and every look at it stays counted: a set whose pins were edited, a study
folder deleted after its opening, a copy of the sealed judgements under another name (exact, or with the query
texts differing only in case and whitespace), a fresh clone. (Same world as test_seal_mistakes.py: a git
checkout of this code whose own lockfiles/ is a genuine lock folder of the fixture data.)"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import FIXTURE, read_json, run_snakemake
from seal_world import commit_all, constructed_freeze, genuine_repo, git, look_at_sealed_file, repo_config

from rerank_study.core.errors import SealError
from rerank_study.core.fileio import write_json
from rerank_study.data import beir
from rerank_study.seal import freeze as seal_freeze
from rerank_study.seal import guard, locations, registry, tree

pytestmark = pytest.mark.slow  # runs snakemake


def _frozen(tmp_path):
    repo = genuine_repo(tmp_path / "w")
    cfg = repo_config(repo)
    return repo, dict(cfg, unseal=constructed_freeze(repo, cfg, repo / "lockfiles"))


def test_an_edited_content_hash_neither_renames_the_sealed_set_nor_frees_it_for_a_new_protocol(tmp_path):
    repo, cfg = _frozen(tmp_path)
    look_at_sealed_file(repo, cfg["unseal"], 1)
    commit_all(repo, "opening 1 started")
    lock = repo / "lockfiles"
    pins, derived = read_json(lock / "data_pins.json"), read_json(lock / "derived_pins.json")
    pins["files"]["qrels/test.tsv"]["content_sha256"] = "f" * 64
    derived["sealed_set"]["content_sha256"] = "f" * 64
    write_json(lock / "data_pins.json", pins)
    write_json(lock / "derived_pins.json", derived)
    for name in (locations.PROTOCOL, locations.PROTOCOL_SHA, locations.PREREG):
        (lock / name).unlink()
    commit_all(repo, "a new preregistration, edited pins")
    retuned = dict(repo_config(repo), blend={"k": 20}, threshold=0.005,
                   resources=str(tmp_path / "fresh-resources"))
    with pytest.raises(SealError, match=r"REFUSED to freeze a protocol: .* records 1 opening\(s\) of "
                                        r"this sealed set"):
        seal_freeze.freeze(retuned, lock, tmp_path / "no-run", repo)
    sha2 = constructed_freeze(repo, retuned, lock)
    with pytest.raises(SealError, match="under a different protocol"):
        guard.check_unseal(dict(retuned, unseal=sha2), lock, repo)


def test_a_pinned_content_hash_is_checked_against_the_verified_bytes(tmp_path):
    """Every verification of a qrels file checks its content hash too: an edited content_sha256 cannot ride on
    a correct file sha256."""
    from rerank_study.core.errors import PinMismatchError
    from rerank_study.data.acquire import check_file
    from rerank_study.data.pins import DataPins

    pins_path = tmp_path / "pins.json"
    pins = read_json(FIXTURE.parent / "lockfiles/data_pins.json")
    write_json(pins_path, pins)
    checked = check_file(FIXTURE / "qrels/test.tsv", "qrels/test.tsv", DataPins.load(pins_path), "fixture")
    assert checked.data == (FIXTURE / "qrels/test.tsv").read_bytes()  # the checked bytes, for the reader
    pins["files"]["qrels/test.tsv"]["content_sha256"] = "f" * 64
    write_json(pins_path, pins)
    with pytest.raises(PinMismatchError, match="content_sha256"):
        check_file(FIXTURE / "qrels/test.tsv", "qrels/test.tsv", DataPins.load(pins_path), "fixture")


def test_a_look_through_a_study_folder_deleted_later_still_counts_in_a_fresh_clone(tmp_path):
    repo = genuine_repo(tmp_path / "w")
    y = repo / "lockfiles/studies/y"
    shutil.copytree(repo / "lockfiles", y, ignore=shutil.ignore_patterns("studies", *locations.SEAL_RECORDS))
    study = repo / "config/studies/y.yaml"
    study.write_text("study:\n  name: y\n  dataset: scifact\n  qrels_dev: qrels/train.tsv\n  qrels_confirm: "
                     "qrels/test.tsv\n  reranker: cross-encoder/ms-marco-MiniLM-L6-v2\n  label_index: null\n"
                     "  candidates: frozen\nlockdir: ../../lockfiles/studies/y\n")
    commit_all(repo, "study y")
    from rerank_study.settings import studies

    ycfg = studies.study_config(repo_config(repo), study)
    sha_y = constructed_freeze(repo, ycfg, y)
    run_snakemake(repo, config={"studies": f"[{study}]", "unseal": sha_y, "scorer": "pinned"},
                  snakefile=repo / "Snakefile",
                  targets=(f"{repo}/results/y/confirm-{sha_y[:12]}-1/sealed/qrels/test.tsv",))
    commit_all(repo, "y opened")
    git(repo, "rm", "-rq", "lockfiles/studies/y", "config/studies/y.yaml")
    commit_all(repo, "drop study y")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    ccfg = dict(repo_config(clone), threshold=0.005)
    with pytest.raises(SealError, match=r"REFUSED to freeze a protocol: [0-9a-f]{12}:lockfiles/studies/y/"
                                        r"confirmation_ledger.jsonl records 1 opening"):
        seal_freeze.freeze(ccfg, clone / "lockfiles", tmp_path / "no-run", clone)


def test_a_look_is_committed_at_once_so_a_fresh_clone_counts_it(tmp_path):
    repo, cfg = _frozen(tmp_path)
    look_at_sealed_file(repo, cfg["unseal"], 1)
    # nothing left to commit by hand
    assert tree.tree_state(repo).dirty == []
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    ccfg = dict(repo_config(clone), unseal=cfg["unseal"])
    assert guard.check_unseal(ccfg, clone / "lockfiles", clone)["opening"] == 2


def _copy_dataset(tmp: Path) -> Path:
    """The fixture's data as another dataset: each sealed query's text upper-cased with its spaces doubled,
    the sealed judgements copied byte for byte as development judgements."""
    data = tmp / "copydata"
    shutil.copytree(FIXTURE, data)
    sealed = set(beir.read_qrels(FIXTURE / "qrels/test.tsv"))
    lines = []
    for line in (FIXTURE / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        if q["_id"] in sealed:
            q["text"] = "  ".join(q["text"].upper().split(" ")) + "\t"
        lines.append(json.dumps(q))
    (data / "queries.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    shutil.copy(FIXTURE / "qrels/test.tsv", data / "qrels/dev.tsv")
    return data


def test_a_copy_of_the_sealed_set_under_another_name_is_recognised(tmp_path):
    repo = genuine_repo(tmp_path / "w")
    real = registry.load_sealed_set(repo / "lockfiles")
    data = _copy_dataset(tmp_path)
    queries = beir.read_queries(data / "queries.jsonl")
    # case and whitespace fold away: every sealed text is recognised
    assert {registry.text_sha256(queries[q]) for q in real.query_ids} == set(real.text_sha256)
    dev = hashlib.sha256((data / "qrels/dev.tsv").read_bytes()).hexdigest()
    side = registry.DevelopmentSide(tmp_path / "copy-lock", "scifactcopy", "another corpus",
                                    files={"qrels/dev.tsv": {"sha256": dev}},
                                    query_ids={"development split": set(real.query_ids)})
    registry.add_texts(side, queries)
    found = registry.conflicts(side, [real])
    assert any("qrels/dev.tsv" in f and "holds exactly the sealed set" in f for f in found), found
    assert any("have the text of a sealed query" in f for f in found), found
