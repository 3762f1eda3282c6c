"""seal.guard: the checks before an opening, each on its own: the labels of a test opening, the test switches
and lock folders refused, a fixture whose sealed set overlaps the repository's, another study's files left
out of the method, the fix named for each kind of uncommitted file, openings under another protocol, a
rewritten ledger, and an opening asked for without a token or with a repin."""

from __future__ import annotations

import pytest
from conftest import make_lockdir
from seal_world import commit_all, git
from test_registry import sealed_set

from rerank_study.core.errors import SealError
from rerank_study.seal import guard, ledger, registry

FIXTURE, PROTO, STANDIN = ledger.FIXTURE_LABEL, ledger.PROTOCOL_LABEL, ledger.STANDIN_RUN_LABEL


def test_a_test_opening_carries_one_label_per_reason():
    standin = {"scorer": "stand-in", "allow_standin_for_testing": True}
    assert guard.labels_for(standin, {"test_only": True}, fixture=True) == [FIXTURE, PROTO, STANDIN]
    assert guard.labels_for({"scorer": "pinned"}, {}, fixture=True) == [FIXTURE]
    assert guard.labels_for({"scorer": "pinned"}, {"test_only": False}, fixture=False) == []


def test_a_test_only_protocol_outside_a_fixture_and_the_standin_without_its_switch_are_refused():
    with pytest.raises(SealError, match="the frozen protocol is TEST-ONLY"):
        guard.labels_for({"scorer": "pinned"}, {"test_only": True}, fixture=False)
    with pytest.raises(SealError, match="cannot be run with the STAND-IN scorer"):
        guard.labels_for({"scorer": "stand-in"}, {}, fixture=True)


def test_test_switches_and_a_foreign_lock_folder_are_refused(tmp_path):
    (tmp_path / "lockfiles").mkdir()
    with pytest.raises(SealError, match="allow_dirty_for_testing is for the TEST SUITE's fixture lock"):
        guard.check_lock_location({"allow_dirty_for_testing": True}, tmp_path / "lockfiles", tmp_path, [])
    with pytest.raises(SealError, match=r"lockdir=.*elsewhere is another folder"):
        guard.check_lock_location({}, tmp_path / "elsewhere", tmp_path, [])
    assert guard.check_lock_location({}, tmp_path / "lockfiles", tmp_path, []) is False


def test_a_fixture_is_refused_when_its_sealed_set_overlaps_the_repositorys(tmp_path):
    fixture = make_lockdir(tmp_path / "fixture")
    mine = registry.load_sealed_set(fixture)
    assert guard.check_lock_location({}, fixture, tmp_path, [mine]) is True
    real = make_lockdir(tmp_path / "lockfiles")  # the same sealed judgements in the repository's lockfiles/
    with pytest.raises(SealError, match="overlap the REAL sealed set of"):
        guard.check_lock_location({}, fixture, tmp_path, [mine, registry.load_sealed_set(real)])


def test_another_studys_and_a_familys_files_are_not_this_openings_method(tmp_path):
    lock = tmp_path / "lockfiles/studies/mine"
    cfg = {"study_file": str(tmp_path / "config/studies/mine.yaml")}
    assert guard.another_studys("lockfiles/families/f/family_ledger.jsonl", lock, tmp_path, cfg)
    assert guard.another_studys("lockfiles/studies/other/data_pins.json", lock, tmp_path, cfg)
    assert not guard.another_studys("lockfiles/studies/mine/data_pins.json", lock, tmp_path, cfg)
    assert guard.another_studys("config/studies/other.yaml", lock, tmp_path, cfg)
    assert not guard.another_studys("config/studies/mine.yaml", lock, tmp_path, cfg)
    assert not guard.another_studys("workflow/a.py", lock, tmp_path, cfg)


def test_the_fix_of_uncommitted_files_commits_records_and_settings_and_restores_code(tmp_path):
    dirty = ["lockfiles/protocol.json (changed)", "config/config.yaml (changed)", "workflow/a.py (changed)"]
    fix = guard.dirty_fix(dirty, tmp_path / "lockfiles", tmp_path, {})
    assert fix.startswith("commit lockfiles/protocol.json config/config.yaml (git add <these> && git ")
    assert "; restore workflow/a.py to the committed method (a changed file: git restore <path>;" in fix
    assert 'python scripts/confirm.py refreeze --reason "..." --dev-run results/dev' in fix


def test_a_ledger_that_lost_committed_lines_is_named_and_its_restore_comes_first(tmp_path):
    (tmp_path / "lockfiles").mkdir()
    book = tmp_path / "lockfiles/confirmation_ledger.jsonl"
    book.write_text('{"event": "frozen"}\n{"event": "started"}\n')
    git(tmp_path, "init", "-q")
    commit_all(tmp_path, "ledger")
    book.write_text('{"event": "frozen"}\n')
    [problem] = guard.ledger_history_problems(tmp_path, "lockfiles/confirmation_ledger.jsonl")
    assert problem.endswith("holds 2 ledger lines that the current lockfiles/confirmation_ledger.jsonl does "
                            "not begin with")
    fix = guard.dirty_fix([f"{book.relative_to(tmp_path)} (changed)"], tmp_path / "lockfiles", tmp_path, {})
    assert fix == ("restore the ledger's committed lines (git checkout HEAD -- lockfiles/confirmation_ledger"
                   ".jsonl): it is append-only and lost lines since its last commit")
    book.write_text('{"event": "frozen"}\n{"event": "started"}\n{"event": "completed"}\n')  # appended: fine
    assert guard.ledger_history_problems(tmp_path, "lockfiles/confirmation_ledger.jsonl") == []


def test_an_opening_of_the_set_under_another_protocol_is_refused():
    mine = sealed_set()
    line = ledger.Line("x/ledger", 3, {"event": "started", "protocol_sha256": "P", "opening": 1, "run": "r"},
                       mine.key)
    assert [r["run"] for r in guard.check_openings(mine, [mine], "P", [line])] == ["r"]
    with pytest.raises(SealError, match=r"x/ledger line 3 records opening 1 of this sealed set .* under a "
                                        r"different protocol \(P\)"):
        guard.check_openings(mine, [mine], "Q", [line])


def test_an_opening_without_a_token_or_with_a_repin_is_refused_before_anything_is_read(tmp_path):
    with pytest.raises(SealError, match="THE CONFIRMATION IS SEALED: no unseal token. Unseal with: snake"):
        guard.check_unseal({"unseal": " "}, tmp_path, tmp_path)
    with pytest.raises(SealError, match="repin=splits in confirmation mode"):
        guard.check_unseal({"repin": "splits", "unseal": "x"}, tmp_path, tmp_path)
