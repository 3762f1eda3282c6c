"""seal.protocol: an opening evaluates exactly the run file the protocol pins (an edited or missing copy, or
another run_file, is refused naming the file and both sha256, computed here with hashlib); the protocol is
written as canonical JSON with its sha256 and note, and parsed from the bytes whose sha256 was checked; the
settings that differ are named by their dotted keys; the commands name another study's file."""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import pytest
from test_freeze import cfg, confirmation_run, copied_lock, frozen_protocol
from test_prereg import PROTOCOL

from rerank_study.core.errors import NotRegularFileError, SealError
from rerank_study.seal import protocol
from rerank_study.seal.prereg import preregistration_note


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


def test_diff_keys_names_each_dotted_key_that_differs_and_setting_changes_leave_the_method_out():
    a = {"x": 1, "y": {"p": 1, "q": [1, 2]}, "only_a": 0}
    b = {"x": 1, "y": {"p": 2, "q": [1, 2], "r": None}, "only_b": 3}
    assert protocol.diff_keys(a, b) == ["only_a", "only_b", "y.p"]  # r: None on both sides
    assert protocol.diff_keys(1, 1) == [] and protocol.diff_keys({"a": 1}, 5) == [""]
    frozen = {"settings": {"k": 60}, "method": {"sha256": "old"}, "frozen_at": "then"}
    assert protocol.setting_changes(frozen, {"settings": {"k": 61}, "method": {"sha256": "new"}}) == \
        ["settings.k"]  # the method is compared file by file elsewhere; keys only the protocol has are not


def test_value_at_follows_a_dotted_key_and_is_none_past_a_leaf():
    tree = {"a": {"b": {"c": 3}}, "s": "text"}
    assert protocol.value_at(tree, "a.b.c") == 3 and protocol.value_at(tree, "a.b") == {"c": 3}
    assert protocol.value_at(tree, "a.x.c") is None and protocol.value_at(tree, "s.t") is None


def test_the_commands_and_sources_name_the_study_file_only_for_another_study():
    assert protocol.unseal_command({}, "lockfiles") == \
        "snakemake confirm --cores 4 --config unseal=$(cut -d' ' -f1 lockfiles/protocol.sha256)"
    study = {"study_file": "config/studies/nf.yaml", "study": {"name": "nf"}}
    assert protocol.unseal_command(study, "lockfiles/studies/nf") == (
        "snakemake confirm --cores 4 --config studies=[config/studies/nf.yaml] unseal=$(cut -d' ' -f1 "
        "lockfiles/studies/nf/protocol.sha256)")
    assert protocol.refreeze_command({}) == \
        'python scripts/confirm.py refreeze --reason "..." --dev-run results/dev'
    assert protocol.refreeze_command(study) == (
        'python scripts/confirm.py refreeze --study config/studies/nf.yaml --reason "..." --dev-run '
        'results/nf/dev')
    assert protocol.settings_sources({}) == "config/config.yaml, --configfile / --config"
    assert protocol.settings_sources(study) == \
        "config/config.yaml, config/studies/nf.yaml, --configfile / --config"


def test_write_protocol_writes_canonical_json_its_sha256_and_the_note(tmp_path):
    sha = protocol.write_protocol(tmp_path, PROTOCOL)
    text = (tmp_path / "protocol.json").read_bytes()
    assert text == (json.dumps(PROTOCOL, sort_keys=True, indent=2, ensure_ascii=True) + "\n").encode()
    assert sha == hashlib.sha256(text).hexdigest()
    assert (tmp_path / "protocol.sha256").read_text() == f"{sha}  protocol.json\n"
    assert (tmp_path / "PREREGISTRATION.md").read_text() == preregistration_note(PROTOCOL, sha)
    assert protocol.verified_protocol(tmp_path, token=sha) == (sha, PROTOCOL)


def test_an_absent_or_changed_protocol_and_a_wrong_token_are_refused(tmp_path):
    with pytest.raises(SealError, match="THE CONFIRMATION IS SEALED: no frozen protocol at"):
        protocol.verified_protocol(tmp_path)
    sha = protocol.write_protocol(tmp_path, PROTOCOL)
    with pytest.raises(SealError, match=f"the unseal token 'abc' is not the frozen protocol's sha256 {sha}"):
        protocol.verified_protocol(tmp_path, token="abc")
    (tmp_path / "protocol.json").write_text("{}")
    with pytest.raises(SealError, match=rf"changed since it was frozen \(sha256 now "
                                        rf"{hashlib.sha256(b'{}').hexdigest()}, recorded {sha}\)"):
        protocol.verified_protocol(tmp_path)


def test_the_freezing_commit_outside_a_repository_is_described(tmp_path):
    assert protocol.freezing_commit(tmp_path / "lock", tmp_path) == "<the commit that froze the protocol>"
