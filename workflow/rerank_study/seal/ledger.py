"""The append-only ledger of a lock folder, and the openings of a sealed set counted across every ledger.

``<lockdir>/confirmation_ledger.jsonl``: one JSON line per event, appended under an exclusive lock, flushed
and fsynced, never rewritten. ``frozen`` / ``re-frozen`` / ``registered`` by ``confirm.py``; ``started`` by
the rule that copies the sealed judgements, BEFORE it copies them; ``completed`` after the audit passed.

Openings belong to the sealed set, not to a folder: the number of an opening is 1 + the largest number any
ledger (the registry's on disk, every version of every ledger in the git history of every ref, a local trace)
holds for the same set, so no protocol and no lock folder can claim "opening 1" twice. A ``started`` line
names its set by its identity (``registry.SealedSet.identity``: key, file and content sha256, corpus, sealed
query ids and texts), so a later set that is the same or overlaps it is matched with it even when its pins
were edited; a line without it (written by hand in a test) belongs to the set of the folder whose ledger holds
it.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import SealError
from ..core.fileio import input_text
from .locations import LEDGER

FROZEN, REFROZEN, STARTED, COMPLETED = "frozen", "re-frozen", "started", "completed"
REGISTERED = "registered"  # the protocol's sha256 registered outside (OSF, AsPredicted): where
OPENING_EVENTS = (STARTED, COMPLETED)
EVENTS = (FROZEN, REFROZEN, REGISTERED, STARTED, COMPLETED)
FIXTURE_LABEL = "TEST-ONLY FIXTURE LOCKFILES"
PROTOCOL_LABEL = "TEST-ONLY PROTOCOL"
STANDIN_RUN_LABEL = "TEST-ONLY STAND-IN"
DIRTY_LABEL = "TEST-ONLY UNCOMMITTED CODE"


@dataclass(frozen=True)
class Line:
    """One ledger line: where it is (``source``: a ledger path, or ``<ref>:<path>`` of a git branch), its
    1-based number, the entry, and the key of the sealed set it belongs to."""

    source: str
    number: int
    entry: dict
    set_key: str | None

    @property
    def event(self) -> str:
        return event_of(self.entry)


def event_of(entry: dict) -> str:
    """A line's event; lines written before events existed recorded completed openings."""
    return entry.get("event", COMPLETED)


def is_labelled(entry: dict) -> bool:
    return bool(entry.get("labels"))


def parse(text: str, path) -> list[tuple[int, dict]]:
    """(line number, entry) of every line; an unreadable line stops (fail closed)."""
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SealError(f"UNREADABLE LEDGER {path} line {n}: {exc.msg}. The ledger is append-only: "
                            "restore it from git (git checkout -- the ledger), never edit it.") from None
        if not isinstance(entry, dict):
            raise SealError(f"UNREADABLE LEDGER {path} line {n}: not a JSON object. Restore it from git.")
        if entry.get("event", COMPLETED) not in EVENTS:
            raise SealError(f"UNREADABLE LEDGER {path} line {n}: unknown event {entry['event']!r} (known: "
                            f"{', '.join(EVENTS)}). Restore the ledger from git.")
        out.append((n, entry))
    return out


def ledger_lines(lockdir) -> list[tuple[int, dict]]:
    p = Path(lockdir) / LEDGER
    return parse(input_text(p), p) if p.exists() else []


def read_ledger(lockdir) -> list[dict]:
    return [e for _, e in ledger_lines(lockdir)]


def lines_of(source: str, parsed: Iterable[tuple[int, dict]], folder_key: str | None) -> list[Line]:
    return [Line(source, n, e, e.get("sealed_set") or folder_key) for n, e in parsed]


def same_opening(a: dict, b: dict) -> bool:
    return all(a.get(k) == b.get(k) for k in ("protocol_sha256", "opening", "run"))


def openings(lines: Iterable[Line], belongs: Callable[[Line], bool]) -> list[dict]:
    """Openings (started or completed) recorded by the lines that ``belongs`` says are of the sealed set in
    question, in order of appearance, each once (a line seen in several places, e.g. a ledger and its history,
    is one opening): [{"protocol_sha256", "opening", "run", "source", "line", "started", "completed",
    "labels"}]."""
    table: dict[tuple, dict] = {}
    for ln in lines:
        if ln.event not in OPENING_EVENTS or not belongs(ln):
            continue
        e = ln.entry
        row = table.setdefault((e.get("protocol_sha256"), e.get("opening"), e.get("run")),
                               {"protocol_sha256": e.get("protocol_sha256"), "opening": e.get("opening"),
                                "run": e.get("run"), "source": ln.source, "line": ln.number, "started": None,
                                "completed": None, "labels": e.get("labels") or []})
        if row[ln.event] is None:
            row[ln.event] = e
    return list(table.values())


def next_opening(rows: Iterable[dict]) -> int:
    return max([r["opening"] for r in rows if isinstance(r["opening"], int)] + [0]) + 1


def opening_run_name(sha: str, opening: int, labelled: bool) -> str:
    return f"confirm-{sha[:12]}-{'test-' if labelled else ''}{opening}"


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def append_locked(path: Path, entry: dict, check: Callable | None = None) -> int:
    """Append one JSON line under an exclusive lock, flushed and fsynced; ``check(parsed lines)`` may refuse
    first. Return the new line's number."""
    line = json.dumps(entry, sort_keys=True, ensure_ascii=True) + "\n"
    created = not path.exists()
    with open(path, "a+", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.seek(0)
        text = fh.read()
        if text and not text.endswith("\n"):
            raise SealError(f"UNREADABLE LEDGER {path}: its last line is unterminated (truncated?). Restore "
                            "it from git.")
        parsed = parse(text, path)
        if check is not None:
            check(parsed)
        fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())
    if created:
        _fsync_dir(path.parent)
    return len(text.splitlines()) + 1


def append_ledger(lockdir, entry: dict) -> int:
    """Append one JSON line (never rewrites earlier lines); return its line number."""
    return append_locked(Path(lockdir) / LEDGER, entry)


def record_start(lockdir, entry: dict, other_lines: Callable[[], list[Line]],
                 belongs: Callable[[Line], bool]) -> int:
    """Record that an opening starts, BEFORE any sealed judgement is copied. Refuses when this opening number
    of the sealed set is already taken in any ledger (a concurrent opening, or a replayed job)."""
    def check(parsed):
        rows = openings(lines_of(str(Path(lockdir) / LEDGER), parsed, entry["sealed_set"]) + other_lines(),
                        belongs)
        expected = next_opening([r for r in rows if r["protocol_sha256"] == entry["protocol_sha256"]])
        if entry["opening"] != expected:
            raise SealError(f"REFUSED: opening {entry['opening']} of the sealed set "
                            f"{entry['sealed_set'][:12]} is already started (see {Path(lockdir) / LEDGER}; "
                            f"the next opening is number {expected}). Each look is recorded once: start a "
                            "new opening with snakemake confirm.")
    return append_locked(Path(lockdir) / LEDGER, entry, check)


FALLBACK_IDENTITY = ("-c", "user.name=rerank-study seal", "-c", "user.email=seal@rerank-study.invalid")


def commit_ledger(root, lockdir, message: str) -> str | None:
    """Commit the ledger of a repository lock folder at once (only that file), so a look is in the history -
    and in every later clone - before a sealed byte is copied. Returns the commit (None: not a repository lock
    folder, e.g. a test fixture). A failed commit stops: the look stays recorded in the ledger file and the
    trace."""
    from . import locations as loc
    from . import tree

    if not (loc.is_repository_lockdir(lockdir, root) and tree.is_repo(root)):
        return None
    rel = f"{loc.relative(lockdir, root)}/{LEDGER}"
    who = () if tree.git(root, "config", "user.email").stdout.strip() else FALLBACK_IDENTITY
    for args in (("add", "--", rel), (*who, "commit", "--quiet", "--no-verify", "-m", message, "--only", "--",
                                      rel)):
        done = tree.git(root, *args)
        if done.returncode != 0:
            raise SealError(f"REFUSED: the ledger line could not be committed ({' '.join(args[:1])}: "
                            f"{done.stderr.strip()[-300:]}); it stays in {Path(root) / rel} and the trace "
                            "file. Fix the repository (git status), then commit the ledger by hand.")
    return tree.head_commit(root)
