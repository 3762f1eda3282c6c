"""seal.method: every file that can change a result (the method folders' tracked files, bytes on disk),
the seal's own records and a frozen run's pinned copy aside."""

from __future__ import annotations

import hashlib

from seal_world import git
from test_freeze import confirmation_run, copied_lock, frozen_protocol
from test_tree import repo_with_a_method

from rerank_study.seal import method


def test_the_method_is_the_method_folders_tracked_files_but_the_seals_own_records(tmp_path):
    repo = repo_with_a_method(tmp_path)
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


def test_the_method_excludes_the_frozen_copy_only_with_its_pinned_bytes(tmp_path):
    lock = copied_lock(tmp_path)
    run = confirmation_run(tmp_path / "confirm.run")
    frozen_protocol(lock, run)
    rel = f"{lock.name}/reranker/confirm.trec"
    assert method.excluded(tmp_path, rel) == "the confirmation run the protocol pins"
    (lock / "reranker" / "confirm.trec").write_bytes(b"edited\n")
    assert method.excluded(tmp_path, rel) is None  # then it is part of the method: a changed method
    (lock / "reranker" / "dev.trec").write_bytes(run.read_bytes())
    assert method.excluded(tmp_path, f"{lock.name}/reranker/dev.trec") is None
