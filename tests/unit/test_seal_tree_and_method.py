"""seal.tree (the tree's state from content) and seal.method (every file that can run)."""

from __future__ import annotations

import hashlib
import os
import subprocess

from rerank_study.seal import method, tree
from seal_world import commit_all, git


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


def test_blob_ids_are_gits_own(tmp_path):
    repo = _repo(tmp_path)
    out = git(repo, "hash-object", "workflow/a.py").stdout.strip()
    assert tree.blob_id(b"a = 1\n", "sha1") == out == hashlib.sha1(b"blob 6\0a = 1\n").hexdigest()


def test_a_clean_tree_and_each_way_of_not_being_one(tmp_path):
    repo = _repo(tmp_path)
    assert tree.tree_state(repo).dirty == []
    os.chmod(repo / "run.sh", 0o644)
    assert tree.tree_state(repo).dirty == ["run.sh (mode 100644, committed 100755)"]
    os.chmod(repo / "run.sh", 0o755)
    (repo / "workflow/a.py").unlink()
    assert tree.tree_state(repo).dirty == ["workflow/a.py (deleted)"]
    git(repo, "checkout", "--", "workflow/a.py")
    (repo / "results").mkdir()
    (repo / "results/x").write_text("generated\n")
    (repo / "out").mkdir()
    (repo / "out/y").write_text("configured output folder\n")
    assert tree.tree_state(repo, output_folders=[repo / "out"]).dirty == []
    assert tree.tree_state(repo).dirty == ["out/y (not committed)"]


def test_not_a_repository(tmp_path):
    assert tree.tree_state(tmp_path).is_repo is False


def test_the_method_is_every_tracked_file_but_docs_seal_records_and_other_studies(tmp_path):
    repo = _repo(tmp_path)
    files = method.method_files(repo)
    assert sorted(files) == ["run.sh", "workflow/a.py"]
    assert files["workflow/a.py"] == hashlib.sha256(b"a = 1\n").hexdigest()
    # a study's own lock folder is part of ITS method; an untracked file is not (the opening refuses it)
    assert "lockfiles/studies/other/pins.json" in method.method_files(repo, lockdir=repo / "lockfiles/studies/other")
    (repo / "workflow/b.py").write_text("b = 2\n")
    assert "workflow/b.py" not in method.method_files(repo)
    git(repo, "add", "workflow/b.py")  # staged: tracked
    assert "workflow/b.py" in method.method_files(repo)
    # the bytes on disk, not the commit
    (repo / "workflow/a.py").write_text("a = 2\n")
    assert method.method_files(repo)["workflow/a.py"] == hashlib.sha256(b"a = 2\n").hexdigest()


def test_a_copy_without_git_walks_the_files(tmp_path):
    (tmp_path / "c/workflow/__pycache__").mkdir(parents=True)
    (tmp_path / "c/workflow/a.py").write_text("a\n")
    (tmp_path / "c/workflow/__pycache__/a.pyc").write_bytes(b"x")
    (tmp_path / "c/.venv").mkdir()
    (tmp_path / "c/.venv/x.py").write_text("x\n")
    assert sorted(method.method_files(tmp_path / "c")) == ["workflow/a.py"]


def test_method_changes_name_each_file():
    assert method.method_changes({"a": "1", "b": "2"}, {"a": "1", "b": "3", "c": "4"}) == ["b (changed)", "c (added)"]
    assert method.method_changes({"a": "1"}, {}) == ["a (removed)"]
