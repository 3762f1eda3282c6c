"""seal.freeze: a run-file reranker's blind submission. The freeze takes the confirmation queries' run
(checked like the development run, copied into the lock folder; none given, or one given to a cross-encoder
study, is refused), and what it copies and pins is the bytes it checked. The helpers here (a lock folder's
copy, a confirmation run, a frozen protocol) are the other seal tests' too."""

from __future__ import annotations

import csv
import hashlib
import json
import shutil

import pytest
from conftest import STUDY_DIR

from rerank_study.core.errors import SealError
from rerank_study.reranker import reranker_run
from rerank_study.seal import freeze

LOCK = STUDY_DIR / "synthetic" / "lockfiles"


def cfg(kind="run", run_file="") -> dict:
    return {"study": {"name": "blind-test", "reranker_kind": kind}, "candidates": {"depth": 20},
            "run_file": run_file}


def confirmation_run(path, drop=None):
    """A run of the synthetic confirmation queries' candidates (read here with csv), without ``drop`` (q,
    d)."""
    qids = set((LOCK / "splits" / "confirm.txt").read_text().split())
    with open(LOCK / "candidates" / "candidates.tsv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh, delimiter="\t") if r["qid"] in qids]
    path.write_text("".join(f"{r['qid']} Q0 {r['doc_id']} {r['rank']} {1 / int(r['rank'])} sys\n"
                            for r in rows
                            if (r["qid"], r["doc_id"]) != drop))
    return path


def copied_lock(tmp_path):
    """A copy of the synthetic study's lock folder (the freeze and an opening write into it)."""
    dest = tmp_path / "lock"
    shutil.copytree(LOCK, dest)
    return dest


def test_the_freeze_copies_a_complete_confirmation_run(tmp_path):
    lock = copied_lock(tmp_path)
    run = confirmation_run(tmp_path / "confirm.run")
    freeze.submit_confirmation_run(cfg(), lock, run)
    assert (lock / "reranker" / "confirm.trec").read_bytes() == run.read_bytes()


def test_the_freeze_refuses_no_run_an_incomplete_run_and_a_run_for_a_cross_encoder(tmp_path):
    lock = copied_lock(tmp_path)
    with pytest.raises(SealError) as exc:
        freeze.submit_confirmation_run(cfg(), lock, None)
    assert "must be pinned in the protocol NOW, before any opening" in str(exc.value)
    assert "expected: --reranker-run FILE" in str(exc.value) and "found: none" in str(exc.value)
    bad = confirmation_run(tmp_path / "bad.run", drop=("q03", "d030"))
    with pytest.raises(reranker_run.RunFileError) as exc:
        freeze.submit_confirmation_run(cfg(), lock, bad)
    missing = "query q03, document d030 (candidate rank 1): expected one score line, found none"
    assert missing in str(exc.value)
    assert "(nothing was frozen)" in str(exc.value)
    assert not (lock / "reranker" / "confirm.trec").exists()
    with pytest.raises(SealError, match="Drop --reranker-run"):
        freeze.submit_confirmation_run(cfg(kind="cross-encoder"), lock, bad)


def frozen_protocol(lock, run) -> dict:
    """What the protocol pins (hashlib of the submitted bytes), written beside the copy as the freeze does."""
    (lock / "reranker").mkdir(exist_ok=True)
    shutil.copyfile(run, lock / "reranker" / "confirm.trec")
    pin = {"file": "reranker/confirm.trec", "sha256": hashlib.sha256(run.read_bytes()).hexdigest()}
    proto = {"study": {"reranker_kind": "run"}, "model": {"confirmation_run": pin}}
    (lock / "protocol.json").write_text(json.dumps(proto))
    return proto


def test_the_frozen_copy_is_the_checked_bytes_even_when_the_file_is_swapped_after_the_check(tmp_path,
                                                                                           monkeypatch):
    """The red team's freeze attack: the run is swapped for another (here: one line dropped) right after the
    check; the copy and the returned pin are still the checked run's bytes (one read: check, copy, pin)."""
    lock = copied_lock(tmp_path)
    run = confirmation_run(tmp_path / "confirm.run")
    checked_bytes = run.read_bytes()
    real_check = reranker_run.checked_run

    def check_then_swap(*args, **kwargs):
        out = real_check(*args, **kwargs)
        confirmation_run(run, drop=("q03", "d030"))  # what a concurrent writer did between check and copy
        return out

    monkeypatch.setattr(reranker_run, "checked_run", check_then_swap)
    pinned = freeze.submit_confirmation_run(cfg(), lock, run)
    assert run.read_bytes() != checked_bytes
    assert (lock / "reranker" / "confirm.trec").read_bytes() == checked_bytes
    assert pinned == hashlib.sha256(checked_bytes).hexdigest()
