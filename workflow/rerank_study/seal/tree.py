"""The state of the method's files in the working tree, from git's own status (untracked files included).

Only the method counts (``locations.METHOD_PATHS``: the Snakefile, config/, lockfiles/, pyproject.toml,
scripts/, workflow/): a method file that differs from HEAD (changed, deleted, staged but not committed) or an
untracked file inside a method folder is an honest "forgot to commit" and refuses an opening. Byte-code
caches (``__pycache__``, ``*.pyc``) and everything outside the method (README.md, docs/, tests/, a scratch
note at the top) do not. Git's own view is used as it is: ``.gitignore`` and index flags are the
researcher's own choices.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from . import locations as loc

# git status's working-tree letter -> what happened to the file
HOW = {"M": "changed", "D": "deleted", "T": "type changed", "A": "added", "U": "unmerged"}


def git(root, *args: str, text: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=text)


def is_repo(root) -> bool:
    top = git(root, "rev-parse", "--show-toplevel")
    return top.returncode == 0 and Path(top.stdout.strip()).resolve() == Path(root).resolve()


def head_commit(root) -> str | None:
    out = git(root, "rev-parse", "--verify", "-q", "HEAD")
    return out.stdout.strip() if out.returncode == 0 else None


def in_head(root, rel: str) -> bool:
    """Whether HEAD's tree holds the file ``rel``."""
    return git(root, "cat-file", "-e", f"HEAD:{rel}").returncode == 0


def is_bytecode(rel: str) -> bool:
    path = PurePosixPath(rel)
    return "__pycache__" in path.parts or path.suffix in (".pyc", ".pyo")


def describe(xy: str) -> str:
    """What a two-letter porcelain status means for the opening."""
    if xy == "??":
        return "untracked: not committed"
    if xy[1] == " ":
        return "staged, not committed"
    return HOW.get(xy[1], "changed")


def status(root, paths=loc.METHOD_PATHS) -> list[str]:
    """'path (how)' for every file under ``paths`` that git status shows (untracked included), byte-code
    caches aside."""
    out = git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--", *paths,
              text=False)
    rows = []
    for rec in out.stdout.split(b"\0"):
        if rec:
            xy, rel = rec[:2].decode(), rec[3:].decode("utf-8", "surrogateescape")
            if not is_bytecode(rel):
                rows.append(f"{rel} ({describe(xy)})")
    return sorted(rows)


@dataclass
class TreeState:
    is_repo: bool
    commit: str | None
    dirty: list = field(default_factory=list)


def tree_state(root) -> TreeState:
    if not is_repo(root) or head_commit(root) is None:
        return TreeState(False, None)
    return TreeState(True, head_commit(root), status(root))
