"""seal.protocol: an opening evaluates exactly the run file the protocol pins (an edited or missing copy, or
another run_file, is refused naming the file and both sha256, computed here with hashlib), and the protocol is
parsed from the bytes whose sha256 was checked."""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import pytest
from test_freeze import cfg, confirmation_run, copied_lock, frozen_protocol

from rerank_study.core.errors import NotRegularFileError, SealError
from rerank_study.seal import protocol


def test_an_opening_evaluates_exactly_the_frozen_file(tmp_path):
    lock = copied_lock(tmp_path)
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


def test_a_cross_encoder_protocol_pins_no_run(tmp_path):
    lock = copied_lock(tmp_path)
    protocol.check_frozen_run_file(cfg(kind="cross-encoder"), lock,
                                   {"study": {"reranker_kind": "cross-encoder"}})


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
