"""The installed libraries an opening runs with: the lock's versions are required, the rest is recorded.

A library version can change a result, so before an opening every distribution of the lock
(``lockfiles/requirements.lock``, ``lockfiles/torch.txt`` and this project's ``pyproject.toml`` version) must
be installed at exactly its version (a local label such as ``+cpu`` allowed, as pip's ``==`` allows it); any
interpreter that has them will do (a virtual environment or not). What the installed files or the process
environment could add beyond that (start-up hooks, ``.pth`` files, ``PYTHON*`` / ``LD_*`` variables, other
installed distributions) is written into the opening's ``started`` ledger line (``environment_record``), not
refused: changing them on purpose is outside the seal's threat model (docs/seal.md).
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import os
import platform
import re
import sys
import sysconfig
from pathlib import Path

from ..core.fileio import input_text

HOOKS = ("sitecustomize.py", "usercustomize.py")
RECORDED_VARIABLES = ("PYTHON", "LD_")  # prefixes of the variables the started line records


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pinned(path: Path) -> dict[str, str]:
    out = {}
    for line in input_text(path).splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-]+)==([^\s;\\]+)", line)
        if m:
            out[normalise(m[1])] = m[2]
    return out


def lock_versions(root) -> dict[str, str]:
    """{distribution: version} the lock asks for (requirements.lock, torch.txt, the project itself)."""
    out = {}
    for name in ("requirements.lock", "torch.txt"):
        out.update(_pinned(Path(root) / "lockfiles" / name))
    project = re.search(r'(?m)^name = "([^"]+)"\s*\nversion = "([^"]+)"',
                        input_text(Path(root) / "pyproject.toml"))
    if project:
        out[normalise(project[1])] = project[2]
    return out


def installed_versions() -> dict[str, str]:
    """{distribution: version} of what this interpreter can import from."""
    out: dict[str, str] = {}
    for d in md.distributions():  # in sys.path order: the first one found is the one imported
        out.setdefault(normalise(d.metadata["Name"]), d.version)
    return out


def version_problems(found: dict[str, str], lock: dict[str, str]) -> list[str]:
    """Every locked distribution missing or at another version (a local label like +cpu allowed)."""
    out = []
    for name, want in sorted(lock.items()):
        have = found.get(name)
        if have is None:
            out.append(f"{name} {want} is in the lock but not installed")
        elif have != want and have.split("+")[0] != want:
            out.append(f"{name} {have} is installed, the lock says {want}")
    return out


def environment_problems(root) -> list[str]:
    """Every way the installed libraries differ from the lock (empty: they are the lock's)."""
    return version_problems(installed_versions(), lock_versions(root))


def _hooks() -> list[str]:
    """Start-up hooks this interpreter runs: sitecustomize / usercustomize modules and .pth files."""
    paths = sysconfig.get_paths()
    folders = sorted({Path(paths[k]) for k in ("stdlib", "purelib", "platlib")})
    out = [str(f / name) for f in folders for name in HOOKS if (f / name).exists()]
    return out + [str(p) for f in folders for p in sorted(f.glob("*.pth"))]


def environment_record(root) -> dict:
    """What the started line records of the environment: the interpreter, a hash of every installed
    distribution, the ones beyond the lock, start-up hooks and the interpreter/loader variables."""
    found, lock = installed_versions(), lock_versions(root)
    listing = "".join(f"{n}=={v}\n" for n, v in sorted(found.items()))
    python = {"executable": str(Path(sys.executable).resolve()), "version": platform.python_version()}
    return {"python": python,
            "distributions_sha256": hashlib.sha256(listing.encode()).hexdigest(),
            "beyond_the_lock": sorted(f"{n}=={v}" for n, v in found.items() if n not in lock),
            "startup_hooks": _hooks(),
            "variables": {k: v for k, v in sorted(os.environ.items()) if k.startswith(RECORDED_VARIABLES)}}
