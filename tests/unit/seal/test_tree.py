"""seal.tree: the method's files in git status (changed, staged, deleted, untracked), nothing outside them."""

from __future__ import annotations

import os
import subprocess

from seal_world import commit_all, git

from rerank_study.seal import tree


def repo_with_a_method(tmp_path):
    """A git repository with one method file, a doc, another study's pins, an empty ledger and a script."""
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
    repo = repo_with_a_method(tmp_path)
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
