"""A run-file reranker's blind submission (rerank_study.seal): the freeze takes the confirmation queries' run
(checked like the development run, copied into the lock folder; none given, or one given to a cross-encoder
study, is refused); an opening evaluates exactly the file the protocol pins (an edited or missing copy, or
another run_file, is refused naming the file and both sha256, computed here with hashlib); the seal's method
excludes the frozen copy only while its bytes are the pinned ones."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil

import pytest
from conftest import STUDY_DIR

from rerank_study.core.errors import NotRegularFileError, SealError
from rerank_study.reranker import reranker_run
from rerank_study.seal import freeze, method, protocol

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


@pytest.fixture
def lock(tmp_path):
    dest = tmp_path / "lock"
    shutil.copytree(LOCK, dest)
    return dest


def test_the_freeze_copies_a_complete_confirmation_run(tmp_path, lock):
    run = confirmation_run(tmp_path / "confirm.run")
    freeze.submit_confirmation_run(cfg(), lock, run)
    assert (lock / "reranker" / "confirm.trec").read_bytes() == run.read_bytes()


def test_the_freeze_refuses_no_run_an_incomplete_run_and_a_run_for_a_cross_encoder(tmp_path, lock):
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


def test_an_opening_evaluates_exactly_the_frozen_file(tmp_path, lock):
    run = confirmation_run(tmp_path / "confirm.run")
    proto = frozen_protocol(lock, run)
    protocol.check_frozen_run_file(cfg(), lock, proto)  # the frozen bytes: accepted
    # the same bytes given again: accepted
    protocol.check_frozen_run_file(cfg(run_file=str(run)), lock, proto)
    copy = lock / "reranker" / "confirm.trec"
    copy.write_bytes(run.read_bytes() + b"q03 Q0 d001 21 0.0 sys\n")
    with pytest.raises(SealError) as exc:
        protocol.check_frozen_run_file(cfg(), lock, proto)
    msg = str(exc.value)
    assert (f"file: {copy}" in msg
            and f"expected sha256: {proto['model']['confirmation_run']['sha256']}" in msg)
    assert f"found: {hashlib.sha256(copy.read_bytes()).hexdigest()}" in msg and "Nothing was opened" in msg
    copy.unlink()
    with pytest.raises(SealError, match="found: missing"):
        protocol.check_frozen_run_file(cfg(), lock, proto)
    shutil.copyfile(run, copy)
    other = tmp_path / "other.run"
    other.write_bytes(run.read_bytes().replace(b" sys\n", b" sys2\n"))
    with pytest.raises(SealError) as exc:
        protocol.check_frozen_run_file(cfg(run_file=str(other)), lock, proto)
    assert f"run_file={other} is not the run frozen in the protocol" in str(exc.value)
    assert f"found: {hashlib.sha256(other.read_bytes()).hexdigest()}" in str(exc.value)


def test_a_cross_encoder_protocol_pins_no_run(lock):
    protocol.check_frozen_run_file(cfg(kind="cross-encoder"), lock,
                                   {"study": {"reranker_kind": "cross-encoder"}})


def test_the_method_excludes_the_frozen_copy_only_with_its_pinned_bytes(tmp_path, lock):
    run = confirmation_run(tmp_path / "confirm.run")
    frozen_protocol(lock, run)
    rel = f"{lock.name}/reranker/confirm.trec"
    assert method.excluded(tmp_path, rel) == "the confirmation run the protocol pins"
    (lock / "reranker" / "confirm.trec").write_bytes(b"edited\n")
    assert method.excluded(tmp_path, rel) is None  # then it is part of the method: a changed method
    (lock / "reranker" / "dev.trec").write_bytes(run.read_bytes())
    assert method.excluded(tmp_path, f"{lock.name}/reranker/dev.trec") is None


def test_the_frozen_copy_is_the_checked_bytes_even_when_the_file_is_swapped_after_the_check(tmp_path, lock,
                                                                                           monkeypatch):
    """The red team's freeze attack: the run is swapped for another (here: one line dropped) right after the
    check; the copy and the returned pin are still the checked run's bytes (one read: check, copy, pin)."""
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


def test_the_protocol_is_parsed_from_the_bytes_whose_sha256_was_checked(tmp_path, monkeypatch):
    """The red team's opening attack: while the guard read protocol.sha256 (a FIFO that blocked),
    protocol.json was replaced by another protocol; the guard then parsed the replacement. Now the file is
    read once, and a FIFO in place of protocol.sha256 is refused without blocking."""
    lockdir = tmp_path / "lock"
    lockdir.mkdir()
    frozen = json.dumps({"model": {"confirmation_run": {"sha256": "a" * 64}}}, sort_keys=True) + "\n"
    (lockdir / "protocol.json").write_text(frozen)
    sha = hashlib.sha256(frozen.encode()).hexdigest()
    (lockdir / "protocol.sha256").write_text(f"{sha}  protocol.json\n")
    real_text = protocol.input_text

    def swap_while_reading_the_sha(path):
        if path.name == "protocol.sha256":
            (lockdir / "protocol.json").write_text(json.dumps({"model": {"confirmation_run": {"sha256":
                                                                                              "b" * 64}}}))
        return real_text(path)

    monkeypatch.setattr(protocol, "input_text", swap_while_reading_the_sha)
    got_sha, got = protocol.verified_protocol(lockdir)
    assert got_sha == sha and got["model"]["confirmation_run"]["sha256"] == "a" * 64
    monkeypatch.undo()
    (lockdir / "protocol.json").write_text(frozen)
    (lockdir / "protocol.sha256").unlink()
    os.mkfifo(lockdir / "protocol.sha256")
    with pytest.raises(NotRegularFileError, match="protocol.sha256 is a FIFO"):
        protocol.verified_protocol(lockdir)
