"""Local traces of a look, and the ledgers of every local branch: what the current ledgers must know.

A look leaves traces outside the ledger file, so discarding the ledger (``git checkout --``, ``git stash``,
a reset) does not make a look unrecorded:

* the **trace file**: the opening rule appends its ``started`` line there too, before it copies a sealed byte;
  for the repository's lock folders it lives in the git directory (``<git common dir>/rerank-study/``: no
  checkout, stash or reset of the work tree touches it), for any other lock folder (a test fixture) in the
  folder itself;
* the **verified sealed copy** in the sealed cache (``resources/cache/sealed``) and its ``acquisition.json``;
* a **confirmation results folder** (``results/confirm-*``);
* a ``started`` line in the ledger of **any local branch** (and the stash).

Every one of them must be matched by a ``started`` line of the current ledgers, else the next opening or
freeze stops, saying how to restore the line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from ..fileio import sha256_file
from . import ledger as led
from . import locations as loc
from . import tree
from .registry import SealedSet

TRACE_FOLDER = "rerank-study"
TRACE_FILE = "seal-traces.jsonl"


def trace_path(root, lockdir) -> Path:
    """Where a lock folder's opening traces go (see the module docstring)."""
    if loc.is_repository_lockdir(lockdir, root) and tree.is_repo(root):
        common = tree.git(root, "rev-parse", "--path-format=absolute", "--git-common-dir").stdout.strip()
        return Path(common) / TRACE_FOLDER / TRACE_FILE
    return Path(lockdir) / loc.TRACES


def write_trace(root, lockdir, entry: dict) -> Path:
    path = trace_path(root, lockdir)
    path.parent.mkdir(parents=True, exist_ok=True)
    led.append_locked(path, dict(entry, lockdir=loc.relative(lockdir, root)))
    return path


def trace_lines(root, folders: Iterable) -> list[led.Line]:
    """Every trace line of the repository and of the given lock folders (their set keys are in the lines)."""
    paths = {trace_path(root, f) for f in folders}
    out = []
    for p in sorted(paths):
        if p.is_file():
            out += led.lines_of(str(p), led.parse(p.read_text(encoding="utf-8"), p), None)
    return out


def branch_lines(root, sets: Iterable[SealedSet]) -> list[led.Line]:
    """The ledger lines of every local branch and the stash, for each repository lock folder of the registry."""
    if not tree.is_repo(root):
        return []
    refs = tree.git(root, "for-each-ref", "--format=%(refname)", "refs/heads", "refs/stash").stdout.split()
    out = []
    for s in sets:
        if not loc.is_repository_lockdir(s.lockdir, root):
            continue
        rel = f"{loc.relative(s.lockdir, root)}/{loc.LEDGER}"
        for ref in refs:
            shown = tree.git(root, "show", f"{ref}:{rel}")
            if shown.returncode == 0:
                out += led.lines_of(f"{ref}:{rel}", led.parse(shown.stdout, f"{ref}:{rel}"), s.key)
    return out


def _unknown_started(candidates: Iterable[led.Line], current: list[led.Line]) -> list[led.Line]:
    known = [ln.entry for ln in current if ln.event == led.STARTED]
    return [ln for ln in candidates if ln.event == led.STARTED and not any(led.same_opening(ln.entry, k) for k in known)]


def _sealed_copies(caches: Iterable, sets: Iterable[SealedSet]) -> list[tuple[Path, SealedSet]]:
    by_sha = {s.file_sha256: s for s in sets}
    out = []
    for cache in caches:
        for p in sorted(Path(cache).rglob("*")) if Path(cache).is_dir() else []:
            if p.is_file() and p.name != "acquisition.json":
                s = by_sha.get(sha256_file(p))
                if s is not None:
                    out.append((p, s))
    return out


def trace_problems(root, sets: list[SealedSet], current: list[led.Line], caches: Iterable = (),
                   results: Iterable = ()) -> list[str]:
    """What the current ledgers do not know: trace lines, branch lines, sealed copies, results folders."""
    out = []
    for ln in _unknown_started(trace_lines(root, [s.lockdir for s in sets]), current):
        out.append(f"{ln.source} line {ln.number} records a look that no ledger holds; append this line to "
                   f"{ln.entry.get('lockdir')}/{loc.LEDGER} exactly as it is and commit it:\n    "
                   + json.dumps({k: v for k, v in ln.entry.items() if k != "lockdir"}, sort_keys=True,
                                ensure_ascii=True))
    for ln in _unknown_started(branch_lines(root, sets), current):
        out.append(f"{ln.source} line {ln.number} records opening {ln.entry.get('opening')} of protocol "
                   f"{str(ln.entry.get('protocol_sha256'))[:12]}, which the current ledger does not hold: merge that "
                   "branch's ledger (git checkout <branch> -- <the ledger>) and commit it")
    started = {ln.set_key for ln in current if ln.event == led.STARTED}
    for path, s in _sealed_copies(caches, sets):
        if s.key not in started:
            out.append(f"{path} is a verified copy of the sealed judgements of {s.lockdir} ({s.file}), but no ledger "
                       "records a started opening of that set: restore the ledger line of that look from git (or "
                       "from the trace above); a copy made by hand must be removed by hand")
    known_runs = {ln.entry.get("run") for ln in current}
    for folder in results:
        for p in sorted(Path(folder).glob("confirm-*")) if Path(folder).is_dir() else []:
            if p.is_dir() and p.name not in known_runs:
                out.append(f"{p} is a confirmation results folder that no ledger records: restore the ledger from "
                           "git; a folder made by hand must be removed by hand")
    return out
