"""Where the seal lives: its file names in a lock folder, the repository's lock folders, test fixtures."""

from __future__ import annotations

from pathlib import Path

from ..core import layout
from ..core.errors import SealError
from ..core.fileio import read_json

PROTOCOL = "protocol.json"
PROTOCOL_SHA = "protocol.sha256"
PREREG = "PREREGISTRATION.md"
LEDGER = "confirmation_ledger.jsonl"
LEDGER_AT_ROOT = "lockfiles/confirmation_ledger.jsonl"  # the default study's ledger
TRACES = ".seal-traces.jsonl"  # a non-repository lock folder's own trace file (test fixtures)
# the seal's own records: not part of the method
SEAL_RECORDS = (PROTOCOL, PROTOCOL_SHA, PREREG, LEDGER, TRACES)
REPO_LOCKDIR = "lockfiles"
# the method: everything that can change a result (code, rules, config, lock pins, the project's pins);
# README, docs/, SOURCE_MAP.md and tests/ cannot (a lint test refuses a Snakefile include outside these)
METHOD_PATHS = ("Snakefile", "config", "lockfiles", "pyproject.toml", "scripts", "workflow")
# compared as settings (the protocol's frozen config), not as bytes: a key that cannot change a result may
# change
SETTINGS_PATHS = ("config",)
# the lock folder's other files are named by the layout
TEST_FIXTURE, STUDY_LOCKDIRS = layout.TEST_FIXTURE, layout.STUDY_LOCKDIRS
# a family of studies confirmed together (seal.family): lockfiles/families/<name>/, its own records (no
# study's method: each study's protocol is pinned there by its sha256)
FAMILY_LOCKDIRS = "lockfiles/families"
FAMILY_PROTOCOL, FAMILY_SHA = "family_protocol.json", "family_protocol.sha256"
FAMILY_LEDGER = "family_ledger.jsonl"
DATA_PINS, DERIVED_PINS, CONFIRM_SPLIT = layout.DATA_PINS, layout.DERIVED_PINS, layout.SPLIT_CONFIRM


def repository_lockdir(root) -> Path:
    return Path(root) / REPO_LOCKDIR


def repository_lockdirs(root) -> list[Path]:
    """The repository's own lock folders: lockfiles/ (the default study) and lockfiles/studies/<study>/."""
    studies = Path(root) / STUDY_LOCKDIRS
    return [repository_lockdir(root)] + (sorted(p for p in studies.iterdir() if p.is_dir())
                                         if studies.is_dir() else [])


def is_repository_lockdir(lockdir, root) -> bool:
    lockdir = Path(lockdir).resolve()
    return lockdir == repository_lockdir(root).resolve() or lockdir.parent == \
        (Path(root) / STUDY_LOCKDIRS).resolve()


def is_test_fixture(lockdir, root) -> bool:
    """A test-suite lock folder: it holds TEST_FIXTURE and is not one of the repository's own lock folders."""
    lockdir = Path(lockdir)
    return (lockdir / TEST_FIXTURE).is_file() and not is_repository_lockdir(lockdir, root)


def pinned_with_role(lockdir, role: str) -> str:
    """The name of the data file a lock folder pins with ``role`` (qrels_dev, qrels_confirm): exactly one."""
    path = Path(lockdir) / DATA_PINS
    names = [n for n, p in read_json(path)["files"].items() if p.get("role") == role]
    if len(names) != 1:
        raise SealError(f"{path} must pin exactly one file with role {role!r}; it pins {names}. Restore "
                        "it from git.")
    return names[0]


def sealed_name(lockdir) -> str:
    """The sealed confirmation judgements' file name (role qrels_confirm, marked "sealed")."""
    name = pinned_with_role(lockdir, "qrels_confirm")
    if not read_json(Path(lockdir) / DATA_PINS)["files"][name].get("sealed"):
        raise SealError(f"{Path(lockdir) / DATA_PINS}: {name} (role qrels_confirm) is not marked sealed.")
    return name


def sealed_pin(lockdir) -> dict:
    return read_json(Path(lockdir) / DATA_PINS)["files"][sealed_name(lockdir)]


def relative(path, root) -> str:
    """``path`` relative to ``root`` when inside it (posix), else the absolute path."""
    path, root = Path(path).resolve(), Path(root).resolve()
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)
