"""The state of the working tree from content, not from ``git status``.

* **changed**: every file of HEAD's tree is compared by its bytes (and executable bit, symlink target) with
  HEAD's blob, hashed here in git's object format; a file missing on disk counts; so does an index entry that
  differs from HEAD (staged, not committed: the method is read from the index's paths);
* **hidden**: index flags that make git itself overlook a change (``skip-worktree``, ``assume-unchanged``);
* **untracked**: a walk of the file system (not git's view, so ``.gitignore`` and ``.git/info/exclude`` hide
  nothing) lists every file that HEAD does not hold, outside the generated folders (``GENERATED`` and the
  configured results/resources folders when they are top-level folders holding no tracked file);
* a tracked **symbolic link** is refused: the seal cannot vouch for what it points to.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..fileio import input_bytes

GENERATED = frozenset({".git", ".venv", "results", "resources", ".snakemake", "build", ".pytest_cache"})


def git(root, *args: str, text: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=text)


def is_repo(root) -> bool:
    top = git(root, "rev-parse", "--show-toplevel")
    return top.returncode == 0 and Path(top.stdout.strip()).resolve() == Path(root).resolve()


def head_commit(root) -> str | None:
    out = git(root, "rev-parse", "--verify", "-q", "HEAD")
    return out.stdout.strip() if out.returncode == 0 else None


def head_entries(root) -> dict[str, tuple[str, str]]:
    """{path: (mode, object id)} of every entry of HEAD's tree (blobs, symlinks, submodules)."""
    out = git(root, "ls-tree", "-r", "-z", "--full-tree", "HEAD", text=False)
    entries = {}
    for rec in out.stdout.split(b"\0"):
        if rec:
            meta, path = rec.split(b"\t", 1)
            mode, _kind, oid = meta.decode().split()
            entries[path.decode("utf-8", "surrogateescape")] = (mode, oid)
    return entries


def blob_id(data: bytes, object_format: str) -> str:
    return hashlib.new(object_format, b"blob %d\0" % len(data) + data).hexdigest()


def _disk_state(path: Path, object_format: str) -> tuple[str, str] | None:
    """(mode, blob id) of a path as git would store it, or None when it is absent."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return "120000", blob_id(os.readlink(path).encode("utf-8", "surrogateescape"), object_format)
    if not stat.S_ISREG(st.st_mode):
        return "040000", ""
    mode = "100755" if st.st_mode & stat.S_IXUSR else "100644"
    return mode, blob_id(input_bytes(path), object_format)  # a regular file, read once


def changed_files(root, entries: dict[str, tuple[str, str]]) -> list[str]:
    """'path (how)' for every file of HEAD whose content on disk differs."""
    fmt = git(root, "rev-parse", "--show-object-format").stdout.strip() or "sha1"
    out = []
    for path, (mode, oid) in sorted(entries.items()):
        if mode == "160000":
            out.append(f"{path} (a submodule: its content cannot be checked)")
            continue
        if mode == "120000":
            out.append(f"{path} (a symbolic link: the seal cannot vouch for its target; commit the "
                       "file itself)")
            continue
        disk = _disk_state(Path(root) / path, fmt)
        if disk is None:
            out.append(f"{path} (deleted)")
        elif disk[1] != oid:
            out.append(f"{path} (changed)")
        elif disk[0] != mode:
            out.append(f"{path} (mode {disk[0]}, committed {mode})")
    return out


def staged_files(root) -> list[str]:
    """'path (staged, not committed)' for every index entry that differs from HEAD."""
    out = git(root, "diff-index", "--cached", "--name-only", "-z", "HEAD", text=False)
    return [f"{p.decode('utf-8', 'surrogateescape')} (staged, not committed)" for p in out.stdout.split(b"\0")
            if p]


def hidden_by_index(root) -> list[str]:
    """Paths whose index flags hide changes from git: skip-worktree ('S') or assume-unchanged (lower case)."""
    out = git(root, "ls-files", "-v", "-z", text=False)
    hidden = []
    for rec in out.stdout.split(b"\0"):
        if len(rec) > 2:
            tag, path = chr(rec[0]), rec[2:].decode("utf-8", "surrogateescape")
            if tag == "S" or tag.islower():
                hidden.append(f"{path} ({'skip-worktree' if tag.upper() == 'S' else 'assume-unchanged'})")
    return hidden


def walk(root, skip: Iterable[str] = ()) -> list[str]:
    """Every file (and symlink) under ``root``, relative posix paths, outside the generated top-level folders
    and the folders ``skip`` names (relative paths)."""
    root = Path(root)
    skip = set(skip)
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        dirnames[:] = [d for d in dirnames if not (rel == Path(".") and d in GENERATED)
                       and (rel / d).as_posix() not in skip]
        links = [d for d in dirnames if (Path(dirpath) / d).is_symlink()]
        dirnames[:] = [d for d in dirnames if d not in links]
        out += [(rel / name).as_posix() for name in filenames + links]
    return sorted(out)


def generated_folders(root, folders: Iterable, tracked: Iterable[str] = ()) -> list[str]:
    """The configured output folders (results, resources) that the walk leaves out: a TOP-LEVEL folder of the
    checkout that holds no tracked file. An output folder anywhere deeper (e.g. results=workflow/<name>, which
    would be importable from every job's path) is not left out: its files are untracked files beside the
    code."""
    tracked = list(tracked)
    out = []
    for f in folders:
        try:
            rel = Path(f).resolve().relative_to(Path(root).resolve()).as_posix()
        except ValueError:
            continue
        if "/" not in rel and rel not in (".", "") and not any(t == rel or t.startswith(rel + "/")
                                                               for t in tracked):
            out.append(rel)
    return out


@dataclass
class TreeState:
    is_repo: bool
    commit: str | None
    changed: list = field(default_factory=list)
    hidden: list = field(default_factory=list)
    untracked: list = field(default_factory=list)

    @property
    def dirty(self) -> list[str]:
        return self.changed + self.hidden + [f"{p} (not committed)" for p in self.untracked]


def tree_state(root, output_folders: Iterable = ()) -> TreeState:
    if not is_repo(root) or head_commit(root) is None:
        return TreeState(False, None)
    entries = head_entries(root)
    untracked = [p for p in walk(root, generated_folders(root, output_folders, entries)) if p not in entries]
    return TreeState(True, head_commit(root), changed_files(root, entries) + staged_files(root),
                     hidden_by_index(root), untracked)
