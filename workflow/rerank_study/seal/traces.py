"""Local traces of a look, and the ledgers of every local branch: what the current ledgers must know.

A look leaves traces outside the ledger file, so discarding the ledger (``git checkout --``, ``git stash``,
a reset) does not make a look unrecorded:

* the **trace file**: the opening rule appends its ``started`` line there too, before it copies a sealed byte;
  for the repository's lock folders it lives in the git directory (``<git common dir>/rerank-study/``: no
  checkout, stash or reset of the work tree touches it), for any other lock folder (a test fixture) in the
  folder itself;
* the **verified sealed copy** in the sealed cache (``resources/cache/sealed``) and its ``acquisition.json``;
* a **confirmation results folder** (``results/confirm-*``);
* a ``started`` line in any version of a ledger in the git history of **any ref** (``history_lines``).

Every one of them must be matched by a ``started`` line of the current ledgers, else the next opening or
freeze stops, saying how to restore the line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from ..core.fileio import input_text, sha256_file
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
            out += led.lines_of(str(p), led.parse(input_text(p), p), None)
    return out


LEDGERS = ":(glob)lockfiles/**/" + loc.LEDGER  # every lock folder's ledger, at any depth


def history_lines(root) -> list[led.Line]:
    """Every line of every version of every ledger of the repository in the git history of every ref
    (branches, tags, remote-tracking branches, the stash): a look stays counted when its ledger line was
    rewritten away, its branch abandoned, or its study folder deleted in a later commit."""
    if not tree.is_repo(root):
        return []
    commits = tree.git(root, "log", "--all", "--format=%H", "--", LEDGERS, loc.LEDGER_AT_ROOT).stdout.split()
    out, seen = [], set()
    for commit in commits:
        names = tree.git(root, "show", "--name-only", "--format=", commit, "--", LEDGERS).stdout.split()
        for rel in names:
            shown = tree.git(root, "show", f"{commit}:{rel}")
            if shown.returncode != 0:
                continue  # the commit deleted it
            for ln in led.lines_of(f"{commit[:12]}:{rel}", led.parse(shown.stdout, f"{commit[:12]}:{rel}"),
                                   None):
                mark = (rel, json.dumps(ln.entry, sort_keys=True))
                if mark not in seen:
                    seen.add(mark)
                    out.append(ln)
    return out


def _unknown_started(candidates: Iterable[led.Line], current: list[led.Line]) -> list[led.Line]:
    known = [ln.entry for ln in current if ln.event == led.STARTED]
    return [ln for ln in candidates if ln.event == led.STARTED and not any(led.same_opening(ln.entry, k)
                                                                           for k in known)]


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


def _history_problems(root, lines: list[led.Line], current: list[led.Line]) -> list[str]:
    """Started lines of a ledger that still exists, which that ledger no longer holds (rewritten or on another
    branch). A ledger whose folder was deleted is history: its lines count, nothing is to be restored."""
    out = []
    for ln in _unknown_started(lines, current):
        rel = ln.source.split(":", 1)[1]
        if (Path(root) / rel).exists():
            out.append(f"{ln.source} line {ln.number} records opening {ln.entry.get('opening')} of protocol "
                       f"{str(ln.entry.get('protocol_sha256'))[:12]}, which the current {rel} does not hold: "
                       "restore it from that commit (git checkout <branch or commit> -- the ledger) "
                       "and commit it")
    return out


def trace_problems(root, sets: list[SealedSet], current: list[led.Line], caches: Iterable = (),
                   results: Iterable = ()) -> list[str]:
    """What the current ledgers do not know: trace lines, history lines, sealed copies, results folders."""
    out = []
    for ln in _unknown_started(trace_lines(root, [s.lockdir for s in sets]), current):
        out.append(f"{ln.source} line {ln.number} records a look that no ledger holds; append this line to "
                   f"{ln.entry.get('lockdir')}/{loc.LEDGER} exactly as it is and commit it:\n    "
                   + json.dumps({k: v for k, v in ln.entry.items() if k != "lockdir"}, sort_keys=True,
                                ensure_ascii=True))
    out += _history_problems(root, history_lines(root), current)
    for path, s in _sealed_copies(caches, sets):
        if not any(ln.event == led.STARTED and s.recorded_in(ln.entry) for ln in current):
            out.append(f"{path} is a verified copy of the sealed judgements of {s.lockdir} ({s.file}), but "
                       "no ledger records a started opening of that set: restore the ledger line of that "
                       "look from git (or from the trace above); a copy made by hand must be removed by hand")
    known_runs = {ln.entry.get("run") for ln in current}
    for folder in results:
        for p in sorted(Path(folder).glob("confirm-*")) if Path(folder).is_dir() else []:
            if p.is_dir() and p.name not in known_runs:
                out.append(f"{p} is a confirmation results folder that no ledger records: restore the ledger "
                           "from git; a folder made by hand must be removed by hand")
    return out
