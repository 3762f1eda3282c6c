"""The guard of a genuine opening, in process: a git copy of this checkout whose own lockfiles/ hold a frozen,
committed protocol (its sealed set: the fixture's). Every started line of the sealed set counts, labelled or
not; the test switches are refused there; only the repository's tracked, committed, append-only ledger; no
results the ledger does not know, no untracked protocol; no repin in confirmation mode; committed code changed
after freezing stops the opening. No pinned model exists offline: these tests stop at the guard, which runs
before any job."""

import shutil

import pytest
from seal_world import commit_all, constructed_freeze, genuine_repo, git, repo_config

from rerank_study.core.errors import SealError
from rerank_study.seal import guard, locations, tree
from rerank_study.seal import ledger as seal_ledger


@pytest.fixture
def genuine(tmp_path):
    """A git checkout of this code whose own lockfiles/ hold a frozen, committed protocol for the
    pinned model. No pinned model exists offline, so the evidence and power blocks are a harness
    (the real ones are tested on the fixture); these tests stop at the guard, before any job."""
    repo = genuine_repo(tmp_path / "repo")
    cfg = repo_config(repo)
    sha = constructed_freeze(repo, cfg, repo / "lockfiles")
    cfg["unseal"] = sha
    return repo, cfg, sha


def test_every_started_line_of_the_sealed_set_counts_labelled_or_not(genuine):
    """A look is a look: a line labelled TEST-ONLY in the repository's own ledger (the switches are refused
    there, so only a hand-written or legacy line can be one) counts like any other for the sealed set it
    names."""
    repo, cfg, sha = genuine
    lock = repo / "lockfiles"
    u = guard.check_unseal(dict(cfg, results=str(repo / "results")), lock, repo)
    assert (u["opening"], u["labels"], u["run"], u["test_fixture"]) == (1, [], f"confirm-{sha[:12]}-1", False)
    # the switches themselves are refused on the repository's lockfiles
    with pytest.raises(SealError, match="is for the TEST SUITE's fixture lock folder only"):
        guard.check_unseal(dict(cfg, allow_standin_for_testing=True), lock, repo)
    # a labelled started + completed line of THIS protocol: opening 1 is taken, the next is 2, and it is
    # compared with it
    labelled = [{"event": "started", "protocol_sha256": sha, "opening": 1, "run": f"confirm-{sha[:12]}-1",
                 "labels": ["TEST-ONLY STAND-IN"]},
                {"event": "completed", "protocol_sha256": sha, "opening": 1, "run": f"confirm-{sha[:12]}-1",
                 "labels": ["TEST-ONLY STAND-IN"], "artefacts_sha256": {"summary": "1" * 64}}]
    for e in labelled:
        seal_ledger.append_ledger(lock, e)
    commit_all(repo, "labelled lines")
    u = guard.check_unseal(dict(cfg, results=str(repo / "results")), lock, repo)
    assert u["opening"] == 2 and [p["opening"] for p in u["previous"]] == [1]
    # ... and a labelled opening under ANOTHER protocol blocks this one, like any look
    seal_ledger.append_ledger(lock, {"protocol_sha256": "e" * 64, "opening": 1,
                                     "labels": ["TEST-ONLY UNCOMMITTED CODE"]})
    commit_all(repo, "another protocol's labelled opening")
    with pytest.raises(SealError, match="line 4 records opening 1 of this sealed set .* under a "
                                        "different protocol"):
        guard.check_unseal(cfg, lock, repo)


def test_a_genuine_opening_needs_the_tracked_append_only_ledger_of_the_repository(genuine, tmp_path):
    repo, cfg, sha = genuine
    lock = repo / "lockfiles"
    # a lock folder elsewhere: a fresh protocol and ledger there would leave no trace
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(lock, elsewhere)
    with pytest.raises(SealError, match="only with one of the repository's own tracked lock folders"):
        guard.check_unseal(cfg, elsewhere, repo)
    # an uncommitted ledger line: commit it (never stash it away)
    seal_ledger.append_ledger(lock, {"event": "started", "protocol_sha256": sha, "opening": 1,
                                  "run": f"confirm-{sha[:12]}-1", "labels": []})
    with pytest.raises(SealError, match=r"differ from its last commit: lockfiles/confirmation_ledger.jsonl "
                                        r"\(changed\).*Fix: commit lockfiles/confirmation_ledger.jsonl"):
        guard.check_unseal(cfg, lock, repo)
    commit_all(repo, "opening 1 started")
    u = guard.check_unseal(cfg, lock, repo)
    assert u["opening"] == 2 and u["unfinished"][0]["opening"] == 1 and u["previous"] == []
    # a committed rewrite that drops the line: the history shows it
    lines = (lock / locations.LEDGER).read_text().splitlines(keepends=True)
    (lock / locations.LEDGER).write_text(lines[0])
    commit_all(repo, "tidy the ledger")
    with pytest.raises(SealError, match="the ledger lockfiles/confirmation_ledger.jsonl was "
                                        "rewritten: commit"):
        guard.check_unseal(cfg, lock, repo)
    (lock / locations.LEDGER).write_text("".join(lines))
    commit_all(repo, "restore the ledger")
    assert guard.check_unseal(cfg, lock, repo)["opening"] == 2
    # results the ledger does not know
    (repo / "results" / f"confirm-{sha[:12]}-7").mkdir(parents=True)
    with pytest.raises(SealError, match=f"confirm-{sha[:12]}-7 is a confirmation results folder that no "
                                        "ledger records"):
        guard.check_unseal(dict(cfg, results=str(repo / "results")), lock, repo)
    # an untracked protocol file: named, and the fix is to commit it
    git(repo, "rm", "-q", "--cached", "lockfiles/protocol.json")
    git(repo, "commit", "-qm", "untrack the protocol")
    assert tree.tree_state(repo).dirty == ["lockfiles/protocol.json (untracked: not committed)"]
    with pytest.raises(SealError, match=r"differ from its last commit: lockfiles/protocol.json "
                                        r"\(untracked: not committed\).*Fix: commit lockfiles/protocol.json"):
        guard.check_unseal(cfg, lock, repo)
    # ... and an uncommitted protocol is named even where a tree check is not reached first
    with pytest.raises(SealError, match="lockfiles/protocol.json not committed"):
        guard._committed_records(lock, repo)


def test_a_genuine_opening_refuses_repin_and_changed_committed_code(genuine):
    repo, cfg, sha = genuine
    with pytest.raises(SealError, match="repin=candidates in confirmation mode"):
        guard.check_unseal(dict(cfg, repin="candidates"), repo / "lockfiles", repo)
    ranking = repo / "workflow/rerank_study/rankings/ranking.py"
    ranking.write_text(ranking.read_text() + "\n# a committed change after freezing\n")
    commit_all(repo, "change after freezing")
    with pytest.raises(SealError,
                       match=r"method changed .*workflow/rerank_study/rankings/ranking.py \(changed\)"):
        guard.check_unseal(cfg, repo / "lockfiles", repo)
