"""The guard of the sealed confirmation (rerank_study.seal.guard) on the frozen fixture, before any job: every
refusal leaves no partial output and records no look; the test switches work only with a test-fixture lock
folder and never reach the real sealed judgements; a changed protocol file or pin, uncommitted code (commit,
never stash), an opening under another protocol, an unreadable or unknown ledger line, results the ledger does
not know, a changed method each stop the opening, naming what changed. The guard on a repository's own
lockfiles: test_confirm_genuine_repository.py."""

import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, read_json, run_snakemake
from seal_world import SEALED, TEST_SWITCHES, code_copy, fixture_cfg

from rerank_study.core.errors import SealError
from rerank_study.seal import guard, locations
from rerank_study.seal import ledger as seal_ledger


def _assert_refused(proc, wd, text):
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert text in proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-3000:]
    assert not list((wd / "results").glob("confirm-*")), "a refused opening must leave no partial output"
    assert not (wd / "resources/cache/sealed").exists()
    assert [e["event"] for e in seal_ledger.read_ledger(wd / "lockfiles")] == ["frozen"], ("a refusal "
                                                                                           "records no look")


def test_refusals_leave_no_partial_output(frozen, tmp_path):
    wd, sha = frozen
    on = {**TEST_SWITCHES, "unseal": sha}
    _assert_refused(run_snakemake(wd, "-n", config={**on, "unseal": "ab" * 32}, check=False), wd,
                    "is not the frozen protocol's sha256")
    _assert_refused(run_snakemake(wd, config=TEST_SWITCHES, check=False, targets=("confirm",)), wd,
                    "no unseal token")
    # a protocol setting changed since freezing (the blend constant)
    cfg = tmp_path / "blend.yaml"
    cfg.write_text("blend:\n  k: 61\n")
    _assert_refused(run_snakemake(wd, "-n", "--configfile", str(cfg), config=on, check=False), wd,
                    "changed since the protocol was frozen:\n  blend.k: frozen 60, now 61")
    # the stand-in without the test-only switch
    _assert_refused(run_snakemake(wd, "-n", config={"allow_dirty_for_testing": "true", "unseal": sha},
                                  check=False),
                    wd, "cannot be run with the STAND-IN")
    # re-pinning during an opening, refused at parse time
    _assert_refused(run_snakemake(wd, config={**on, "repin": "candidates"}, check=False,
                                  targets=("confirm",)), wd,
                    "repin=candidates in confirmation mode")
    # a lock folder elsewhere (a fresh protocol and ledger with no trace) - not a test fixture either
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(wd / "lockfiles", elsewhere)
    (elsewhere / locations.TEST_FIXTURE).unlink()
    _assert_refused(run_snakemake(wd, "-n", config={"unseal": sha, "lockdir": str(elsewhere)}, check=False),
                    wd, "only with one of the repository's own tracked lock folders")
    # ... and the test switches there
    _assert_refused(run_snakemake(wd, "-n", config={**on, "lockdir": str(elsewhere)}, check=False), wd,
                    "is for the TEST SUITE's fixture lock folder only")


def _copy_lock(wd, tmp_path) -> Path:
    lock = tmp_path / "lockfiles"
    shutil.copytree(wd / "lockfiles", lock)
    return lock


def test_test_switches_never_reach_the_real_sealed_judgements(frozen, tmp_path):
    """A "fixture" lock folder whose sealed set overlaps the repository's real one is refused: the real file's
    pins, or an edited copy of it (other content, the same sealed queries), each with a consistent record."""
    wd, sha = frozen
    lock = _copy_lock(wd, tmp_path)
    assert guard.check_unseal(fixture_cfg(sha), lock, ROOT)["labels"][0] == seal_ledger.FIXTURE_LABEL
    real_record = read_json(ROOT / "lockfiles/derived_pins.json")["sealed_set"]
    pins, derived = read_json(lock / "data_pins.json"), read_json(lock / "derived_pins.json")
    pins["files"][SEALED] = read_json(ROOT / "lockfiles/data_pins.json")["files"][SEALED]
    (lock / "data_pins.json").write_text(json.dumps(pins))
    derived["sealed_set"] = dict(real_record, corpus_sha256=pins["files"]["corpus.jsonl"]["sha256"])
    (lock / "derived_pins.json").write_text(json.dumps(derived))
    (lock / "splits/confirm.txt").write_text("".join(f"{q}\n" for q in sorted(real_record["queries"],
                                                                              key=int)))
    with pytest.raises(SealError, match="overlap the REAL sealed set"):
        guard.check_unseal(fixture_cfg(sha), lock, ROOT)
    # an edited copy: one judgement changed, so neither the file nor the content hash is the real one
    pins["files"][SEALED].update(sha256="1" * 64, content_sha256="2" * 64)
    (lock / "data_pins.json").write_text(json.dumps(pins))
    derived["sealed_set"].update(file_sha256="1" * 64, content_sha256="2" * 64)
    (lock / "derived_pins.json").write_text(json.dumps(derived))
    with pytest.raises(SealError, match="overlap the REAL sealed set .*a sealed query id of the same corpus"):
        guard.check_unseal(fixture_cfg(sha), lock, ROOT)


def test_refusal_when_protocol_file_or_a_pin_changed(frozen, tmp_path):
    wd, sha = frozen
    lock = _copy_lock(wd, tmp_path)
    cfg = fixture_cfg(sha)
    assert guard.check_unseal(cfg, lock, ROOT)["opening"] == 1
    pins = read_json(lock / "derived_pins.json")
    pins["candidates"]["sha256"] = "f" * 64
    (lock / "derived_pins.json").write_text(json.dumps(pins))
    with pytest.raises(SealError, match=r"frozen:\n  candidates.sha256: frozen "):
        guard.check_unseal(cfg, lock, ROOT)
    shutil.copy(wd / "lockfiles/derived_pins.json", lock / "derived_pins.json")
    (lock / "candidates/candidates.tsv").write_text("qid\trank\tdoc_id\n")  # the committed table itself
    with pytest.raises(SealError, match="candidates.file_sha256"):
        guard.check_unseal(cfg, lock, ROOT)
    shutil.copy(wd / "lockfiles/candidates/candidates.tsv", lock / "candidates/candidates.tsv")
    (lock / "protocol.json").write_text((lock / "protocol.json").read_text().replace('"B": 1000',
                                                                                     '"B": 999'))
    with pytest.raises(SealError, match="changed since it was frozen"):
        guard.check_unseal(cfg, lock, ROOT)


def test_refusal_on_uncommitted_code_says_commit_not_stash(frozen, tmp_path):
    wd, sha = frozen
    repo = code_copy(tmp_path / "repo", with_git=True)
    cfg = fixture_cfg(sha, allow_dirty_for_testing=False)
    u = guard.check_unseal(cfg, wd / "lockfiles", repo)
    assert u["labels"] == [seal_ledger.FIXTURE_LABEL, seal_ledger.PROTOCOL_LABEL,
                           seal_ledger.STANDIN_RUN_LABEL]
    assert u["git"]["commit"] and u["git"]["dirty"] == []
    # untracked inside a method folder ("forgot to commit"): refused, with a fix that works
    (repo / "scripts/notes.py").write_text("print(2)\n")
    with pytest.raises(SealError) as err:
        guard.check_unseal(cfg, wd / "lockfiles", repo)
    assert "has method files that differ from its last commit: scripts/notes.py (untracked: not " \
        "committed)" in str(err.value)
    assert "restore scripts/notes.py to the committed method" in str(err.value)
    assert "or stash" not in str(err.value) and "Never discard lockfiles/" in str(err.value)
    cfg["allow_dirty_for_testing"] = True
    assert seal_ledger.DIRTY_LABEL in guard.check_unseal(cfg, wd / "lockfiles", repo)["labels"]
    cfg["allow_dirty_for_testing"] = False
    with pytest.raises(SealError, match="is not a git checkout"):
        guard.check_unseal(cfg, wd / "lockfiles", code_copy(tmp_path / "not-a-repo"))


def test_refusal_after_an_opening_under_another_protocol(frozen, tmp_path):
    wd, sha = frozen
    lock = _copy_lock(wd, tmp_path)
    seal_ledger.append_ledger(lock, {"event": "started", "protocol_sha256": "e" * 64, "opening": 1,
                                  "run": "confirm-eeeeeeeeeeee-test-1",
                                     "labels": [seal_ledger.FIXTURE_LABEL]})
    with pytest.raises(SealError, match="line 2 records opening 1 of this sealed set .* under a "
                                        "different protocol"):
        guard.check_unseal(fixture_cfg(sha), lock, ROOT)


def test_an_unreadable_or_unknown_ledger_line_stops_the_opening(frozen, tmp_path):
    wd, sha = frozen
    lock = _copy_lock(wd, tmp_path)
    ledger = lock / locations.LEDGER
    good = ledger.read_text()
    ledger.write_text(good + '{"event": "started", "protocol_sha256": "e"\n')
    with pytest.raises(SealError, match="UNREADABLE LEDGER .* line 2"):
        guard.check_unseal(fixture_cfg(sha), lock, ROOT)
    ledger.write_text(good + json.dumps({"event": "peeked", "protocol_sha256": sha}) + "\n")
    with pytest.raises(SealError, match="line 2: unknown event 'peeked'"):
        guard.check_unseal(fixture_cfg(sha), lock, ROOT)
    ledger.write_text(good + '{"event": "started"')  # a truncated last line: nothing is appended after it
    with pytest.raises(SealError, match="last line is unterminated"):
        seal_ledger.append_ledger(lock, {"event": "completed"})


def test_results_the_ledger_does_not_know_are_refused(frozen, tmp_path):
    wd, sha = frozen
    lock = _copy_lock(wd, tmp_path)
    (tmp_path / "results" / f"confirm-{sha[:12]}-test-1").mkdir(parents=True)
    with pytest.raises(SealError, match=f"confirm-{sha[:12]}-test-1 is a confirmation results folder "
                                        "that no ledger"):
        guard.check_unseal(dict(fixture_cfg(sha), results=str(tmp_path / "results")), lock, ROOT)


def test_changed_method_stops_the_opening_and_names_the_files(frozen, tmp_path):
    wd, sha = frozen
    repo = code_copy(tmp_path / "repo")
    assert guard.check_unseal(fixture_cfg(sha), wd / "lockfiles", repo)["opening"] == 1
    metrics = repo / "workflow/rerank_study/stats/metrics.py"
    metrics.write_text(metrics.read_text().replace("log2(i + 2)", "log2(i + 3)") + "\n")
    (repo / "workflow/scripts/extra.py").write_text("# a new rule script\n")
    (repo / "lockfiles/torch.txt").write_text("torch==2.14.0\n")
    with pytest.raises(SealError) as err:
        guard.check_unseal(fixture_cfg(sha), wd / "lockfiles", repo)
    msg = str(err.value)
    assert "the method changed since the protocol was frozen" in msg and "refreeze" in msg
    for part in ("workflow/rerank_study/stats/metrics.py (changed)", "workflow/scripts/extra.py (added)",
                 "lockfiles/torch.txt (changed)"):
        assert part in msg, msg
