"""The frozen method: every file that can change a result, hashed from the bytes on disk.

The method is the tracked files of ``locations.METHOD_PATHS`` (the Snakefile, config/, lockfiles/,
pyproject.toml, scripts/, workflow/; in a copy that is not a git checkout, every file there but byte-code
caches), read from disk; config/ is compared as the protocol's frozen settings
(``config.result_settings``), not as bytes, so a key that cannot change a result (``ce.threads``) may
change. A study's lock folder (lockfiles/studies/<study>/) is not hashed either: its pins are frozen by
value in that study's protocol, so one study's new pins never change another's method; nor is a family's
lock folder (lockfiles/families/<name>/, ``seal.family``: it pins each study's protocol by its sha256, so
freezing a family after its studies froze changes no study's method). README.md, docs/,
SOURCE_MAP.md and tests/ are not part of it: they cannot change a result (a lint test refuses a Snakefile
``include:`` of a file outside the method). The seal's own records in
lockfiles/ are left out by what they are, so that writing them does not change the method:

* a ledger (``confirmation_ledger.jsonl``) or a fixture's trace file whose every line is a JSON object;
* a protocol (``protocol.json``) that is one JSON object, and its ``protocol.sha256`` line;
* a preregistration note (``PREREGISTRATION.md``) that is exactly the note its lock folder's protocol
  generates (``prereg.preregistration_note``);
* a run-file reranker's confirmation run (``reranker/confirm.trec``) whose sha256 is the one its lock
  folder's protocol froze (it is pinned there, as data; the opening refuses any other bytes).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path, PurePosixPath

from ..core.errors import PipelineError
from ..core.fileio import input_bytes, input_text
from . import locations as loc
from . import tree
from .prereg import preregistration_note

HASHED = tuple(p for p in loc.METHOD_PATHS if p not in loc.SETTINGS_PATHS)
SHA_LINE = re.compile(r"^[0-9a-f]{64}  protocol\.json\n$")


def _json_lines(path: Path) -> bool:
    try:
        return all(isinstance(json.loads(line), dict)
                   for line in input_text(path).splitlines()
                   if line.strip())
    except (OSError, ValueError, PipelineError):
        return False


def _json_object(path: Path):
    try:
        value = json.loads(input_text(path))
    except (OSError, ValueError, PipelineError):
        return None
    return value if isinstance(value, dict) else None


def _generated_note(path: Path) -> bool:
    """The preregistration note is the one its protocol generates (so it carries nothing else)."""
    protocol = _json_object(path.parent / loc.PROTOCOL)
    sha_file = path.parent / loc.PROTOCOL_SHA
    if protocol is None or not sha_file.is_file():
        return False
    try:
        return input_text(path) == preregistration_note(protocol, input_text(sha_file).split()[0])
    except (KeyError, TypeError, IndexError, ValueError, PipelineError):
        return False


def _frozen_run(path: Path) -> bool:
    """A confirmation run the sibling protocol pins (model.confirmation_run.sha256 = its bytes' sha256)."""
    if path.parent.name != "reranker" or path.name != "confirm.trec":
        return False
    protocol = _json_object(path.parent.parent / loc.PROTOCOL) or {}
    pinned = ((protocol.get("model") or {}).get("confirmation_run") or {}).get("sha256")
    return pinned is not None and pinned == hashlib.sha256(input_bytes(path)).hexdigest()


def excluded(root, rel: str) -> str | None:
    """Why a path is not part of the method (None: it is): a seal record in its record's format."""
    name, path = PurePosixPath(rel).name, Path(root) / rel
    if not path.is_file() or path.is_symlink():
        return None
    if name in (loc.LEDGER, loc.TRACES) and _json_lines(path):
        return "a ledger of JSON lines"
    if name == loc.PROTOCOL and _json_object(path) is not None:
        return "a protocol (one JSON object)"
    if name == loc.PROTOCOL_SHA and SHA_LINE.match(input_bytes(path).decode("utf-8", errors="replace")):
        return "the protocol's sha256 line"
    if name == loc.PREREG and _generated_note(path):
        return "the note the protocol generates"
    if _frozen_run(path):
        return "the confirmation run the protocol pins"
    return None


def study_pins(rel: str) -> bool:
    """A file of a study's lock folder (lockfiles/studies/<study>/): frozen by value in that study's own
    protocol (its pin and model blocks), so it is no other study's method; or of a family's lock folder
    (lockfiles/families/<name>/: the family's own records)."""
    return rel.startswith((loc.STUDY_LOCKDIRS + "/", loc.FAMILY_LOCKDIRS + "/"))


def candidate_paths(root) -> list[str]:
    """The tracked method paths of a git checkout (its index: what the next commit holds), else every file
    under the method paths but byte-code caches; the studies' lock folders aside (``study_pins``)."""
    root = Path(root)
    if tree.is_repo(root):
        listed = tree.git(root, "ls-files", "-z", "--cached", "--", *HASHED, text=False).stdout.split(b"\0")
        out = [p.decode("utf-8", "surrogateescape") for p in listed if p]
    else:
        out = []
        for top in HASHED:
            path = root / top
            found = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
            out += [p.relative_to(root).as_posix() for p in found if not tree.is_bytecode(p.as_posix())]
    return sorted({p for p in out if not study_pins(p)})


def method_files(root) -> dict[str, str]:
    """{relative path: sha256 of the bytes on disk} of every method file, sorted ("missing" for a tracked file
    deleted from disk). The method is the same for every study."""
    root = Path(root)
    out = {}
    for rel in candidate_paths(root):
        if excluded(root, rel) is None:
            path = root / rel
            if path.is_file():
                out[rel] = hashlib.sha256(input_bytes(path)).hexdigest()
            else:
                out[rel] = "missing"
    return out


def combined_sha256(named_hashes: dict[str, str]) -> str:
    h = hashlib.sha256()
    for name, digest in sorted(named_hashes.items()):
        h.update(f"{name}\0{digest}\n".encode())
    return h.hexdigest()


def method_sha256(root) -> tuple[str, dict[str, str]]:
    """(combined sha256, per-file sha256) of the method."""
    files = method_files(root)
    return combined_sha256(files), files


def method_changes(frozen_files: dict, current_files: dict) -> list[str]:
    """'path (changed|added|removed)' for every method file that differs from the frozen one."""
    out = []
    for path in sorted(set(frozen_files) | set(current_files)):
        if path not in current_files:
            out.append(f"{path} (removed)")
        elif path not in frozen_files:
            out.append(f"{path} (added)")
        elif frozen_files[path] != current_files[path]:
            out.append(f"{path} (changed)")
    return out


COVERS = ("the tracked files of " + ", ".join(HASHED) + " (a copy without git: every file "
          "there but byte-code caches), from the bytes on disk, except the studies' lock folders "
          f"({loc.STUDY_LOCKDIRS}/: each frozen by value in its own protocol), the families' lock folders "
          f"({loc.FAMILY_LOCKDIRS}/: their own records) and the seal's own records in "
          "their record format (ledgers and traces of JSON lines, a protocol JSON object and its sha256 "
          "line, the preregistration note its protocol generates, a run-file reranker's confirmation run "
          "with the sha256 its protocol pins)")
