"""seal.tree (the method's files in git status) and seal.method (every file that can change a result)."""

from __future__ import annotations

import hashlib
import os
import subprocess

from seal_world import commit_all, git

from rerank_study.seal import method, tree


def _repo(tmp_path):
    repo = tmp_path / "r"
    (repo / "workflow").mkdir(parents=True)
    (repo / "workflow/a.py").write_text("a = 1\n")
    (repo / "README.md").write_text("# doc\n")
    (repo / "lockfiles/studies/other").mkdir(parents=True)
    (repo / "lockfiles/studies/other/pins.json").write_text("{}\n")
    (repo / "lockfiles/confirmation_ledger.jsonl").write_text("")
    (repo / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(repo / "run.sh", 0o755)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    commit_all(repo, "init")
    return repo


def test_a_clean_tree_and_each_way_of_not_being_one(tmp_path):
    repo = _repo(tmp_path)
    assert tree.tree_state(repo).dirty == []
    (repo / "workflow/a.py").write_text("a = 2\n")
    assert tree.tree_state(repo).dirty == ["workflow/a.py (changed)"]
    git(repo, "add", "workflow/a.py")
    assert tree.tree_state(repo).dirty == ["workflow/a.py (staged, not committed)"]
    git(repo, "reset", "-q", "HEAD", "--", "workflow/a.py")
    git(repo, "checkout", "--", "workflow/a.py")
    (repo / "workflow/a.py").unlink()
    assert tree.tree_state(repo).dirty == ["workflow/a.py (deleted)"]
    git(repo, "checkout", "--", "workflow/a.py")
    # an untracked file inside a method folder: "forgot to commit"; byte-code caches aside
    (repo / "workflow/b.py").write_text("b = 1\n")
    (repo / "workflow/__pycache__").mkdir()
    (repo / "workflow/__pycache__/a.cpython-311.pyc").write_bytes(b"\0")
    assert tree.tree_state(repo).dirty == ["workflow/b.py (untracked: not committed)"]
    (repo / "workflow/b.py").unlink()
    # outside the method: documentation, tests, scratch notes, generated folders count for nothing
    (repo / "README.md").write_text("# a typo fixed\n")
    (repo / "notes.txt").write_text("scratch\n")
    (repo / "results").mkdir()
    (repo / "results/x").write_text("generated\n")
    assert tree.tree_state(repo).dirty == []


def test_not_a_repository(tmp_path):
    assert tree.tree_state(tmp_path).is_repo is False


def test_the_method_is_the_method_folders_tracked_files_but_the_seals_own_records(tmp_path):
    repo = _repo(tmp_path)
    files = method.method_files(repo)
    # README.md and run.sh lie outside the method folders; the empty ledger (JSON lines) is a seal record; a
    # study's lock folder is frozen by value in its own protocol, not as method
    assert sorted(files) == ["workflow/a.py"]
    assert files["workflow/a.py"] == hashlib.sha256(b"a = 1\n").hexdigest()
    # a "ledger" that is not JSON lines can carry code: it is part of the method
    (repo / "lockfiles/confirmation_ledger.jsonl").write_text("import os\n")
    assert "lockfiles/confirmation_ledger.jsonl" in method.method_files(repo)
    (repo / "lockfiles/confirmation_ledger.jsonl").write_text('{"event": "frozen"}\n')
    assert "lockfiles/confirmation_ledger.jsonl" not in method.method_files(repo)
    # a preregistration note is left out only when it is exactly the note its protocol generates
    (repo / "lockfiles/PREREGISTRATION.md").write_text("include this\n")
    git(repo, "add", "lockfiles/PREREGISTRATION.md")
    assert "lockfiles/PREREGISTRATION.md" in method.method_files(repo)
    # an untracked file is not part of it (the opening refuses it); a staged one is
    (repo / "workflow/b.py").write_text("b = 2\n")
    assert "workflow/b.py" not in method.method_files(repo)
    git(repo, "add", "workflow/b.py")
    assert "workflow/b.py" in method.method_files(repo)
    # the bytes on disk, not the commit
    (repo / "workflow/a.py").write_text("a = 2\n")
    assert method.method_files(repo)["workflow/a.py"] == hashlib.sha256(b"a = 2\n").hexdigest()


def test_a_copy_without_git_walks_the_files(tmp_path):
    (tmp_path / "c/workflow").mkdir(parents=True)
    (tmp_path / "c/workflow/a.py").write_text("a\n")
    (tmp_path / "c/workflow/__pycache__").mkdir()
    (tmp_path / "c/workflow/__pycache__/a.pyc").write_text("x\n")
    (tmp_path / "c/docs").mkdir()
    (tmp_path / "c/docs/x.md").write_text("x\n")
    assert sorted(method.method_files(tmp_path / "c")) == ["workflow/a.py"]


def test_method_changes_name_each_file():
    assert method.method_changes({"a": "1", "b": "2"}, {"a": "1", "b": "3", "c": "4"}) == ["b (changed)",
                                                                                           "c (added)"]
    assert method.method_changes({"a": "1"}, {}) == ["a (removed)"]
