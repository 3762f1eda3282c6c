"""The frozen method: every file of the checkout that can run, hashed from the bytes on disk.

The method is every tracked file of the repository (its index; in a copy that is not a git checkout, every
file the file-system walk finds outside the generated folders), read from disk, except a
short list that cannot execute and changes without changing a result:

* documentation: ``*.md`` files (README, SOURCE_MAP, docs/, provenance notes, the preregistration text);
* the seal's own records in any lock folder (protocol, its sha256, the ledger, a fixture's trace file);
* byte-code caches (``__pycache__``): never read by an opening (every job runs with a fresh cache folder), and
  refused beside the code before one (``tree``);
* other studies' lock folders and study files: another experiment's data, read only when that study is named
  (the seal registry reads their pins for the seal itself).

So the library, rule scripts, rules, Snakefile, schema, config, user tools (the audit among them), the lock
files, the reference results, the tests and their data are all part of it: a change anywhere is named.
"""

from __future__ import annotations

import hashlib
from pathlib import Path, PurePosixPath

from . import locations as loc
from . import tree

DOC_SUFFIX = ".md"
STUDY_FILES = "config/studies"


def _other_study(rel: str, own: set[str]) -> bool:
    """A path inside another study's lock folder or another study's file."""
    p = PurePosixPath(rel)
    for folder in (loc.STUDY_LOCKDIRS, STUDY_FILES):
        base = PurePosixPath(folder)
        if base in p.parents:
            top = (base / p.relative_to(base).parts[0]).as_posix()
            return top not in own
    return False


def excluded(rel: str, own: set[str]) -> str | None:
    """Why a path is not part of the method (None: it is)."""
    p = PurePosixPath(rel)
    if p.suffix == DOC_SUFFIX:
        return "documentation"
    if p.name in loc.SEAL_RECORDS:
        return "a seal record"
    if "__pycache__" in p.parts:
        return "byte-code cache"
    if _other_study(rel, own):
        return "another study"
    return None


def own_paths(root, lockdir=None, study_file=None) -> set[str]:
    """The study's own lock folder and study file, relative to ``root`` (kept when they are other studies')."""
    own = set()
    for p in (lockdir, study_file):
        if p:
            own.add(loc.relative(p, root))
    return own


def candidate_paths(root, output_folders=()) -> list[str]:
    """The tracked paths of a git checkout (its index: what the next commit holds), else every file the walk
    finds. (Before an opening the index must equal HEAD and the disk must equal both: ``tree``.)"""
    if tree.is_repo(root):
        listed = tree.git(root, "ls-files", "-z", "--cached", text=False).stdout.split(b"\0")
        return sorted({p.decode("utf-8", "surrogateescape") for p in listed if p})
    return tree.walk(root, tree.generated_folders(root, output_folders))


def method_files(root, lockdir=None, study_file=None, output_folders=()) -> dict[str, str]:
    """{relative path: sha256 of the bytes on disk} of every method file, sorted ("missing" for a tracked
    file deleted from disk)."""
    root = Path(root)
    own = own_paths(root, lockdir, study_file)
    out = {}
    for rel in candidate_paths(root, output_folders):
        if excluded(rel, own) is None:
            path = root / rel
            if path.is_file():  # (a symbolic link: the bytes it points to; the opening refuses the link itself)
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                out[rel] = "missing"
    return out


def combined_sha256(named_hashes: dict[str, str]) -> str:
    h = hashlib.sha256()
    for name, digest in sorted(named_hashes.items()):
        h.update(f"{name}\0{digest}\n".encode())
    return h.hexdigest()


def method_sha256(root, lockdir=None, study_file=None, output_folders=()) -> tuple[str, dict[str, str]]:
    """(combined sha256, per-file sha256) of the method."""
    files = method_files(root, lockdir, study_file, output_folders)
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


COVERS = ("every tracked file of the repository (a copy without git: every file outside "
          + ", ".join(sorted(tree.GENERATED)) + " and the output folders), from the bytes on disk, except *.md documentation, the seal's records (" + ", ".join(loc.SEAL_RECORDS) + "), __pycache__, and "
          f"other studies' folders under {loc.STUDY_LOCKDIRS}/ and {STUDY_FILES}/")
