"""The installed environment an opening runs in must be the lock, file for file.

* a virtual environment that does not see the system's site-packages (``pyvenv.cfg``);
* its distributions are exactly the lock's: every ``name==version`` of ``lockfiles/requirements.lock`` and
  ``lockfiles/torch.txt`` (a local version label such as ``+cpu`` allowed, as pip's ``==`` allows it), this
  project (``pyproject.toml``'s version) and the installer ``pip``; the hash-locked developer tools of
  ``lockfiles/requirements-dev.lock`` may be installed too, at exactly their pinned versions; nothing else;
* every file of every distribution's ``RECORD`` has its recorded hash, and every file in site-packages is
  listed by some ``RECORD`` (a planted ``sitecustomize.py`` or ``.pth`` is not);
* no ``sitecustomize`` / ``usercustomize`` module and no ``.pth`` file elsewhere on a job's path (the
  interpreter's own library folders, the project's ``workflow/``), and no interpreter variable that would add
  code to a job (``PYTHONPATH`` beyond ``workflow/``, ``PYTHONHOME``, ``PYTHONSTARTUP``, ``PYTHONUSERBASE``,
  ``LD_PRELOAD``);
* Snakemake's folder of temporary rule scripts (``.snakemake/scripts``, first on every script job's path) holds
  nothing a job could import.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib.metadata as md
import os
import re
import sys
import sysconfig
from pathlib import Path

HOOKS = ("sitecustomize.py", "usercustomize.py")
INSTALLER = "pip"
PYTHON_VARS = ("PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "LD_PRELOAD")
TEMP_SCRIPT = re.compile(r"^tmp[A-Za-z0-9_]+\.[A-Za-z0-9_]+\.py$")  # Snakemake's tmpXXXX.<rule script>.py


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pinned(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-]+)==([^\s;\\]+)", line)
        if m:
            out[normalise(m[1])] = m[2]
    return out


def optional_versions(root) -> dict[str, str]:
    """{distribution: version} of the hash-locked developer tools, which may be installed beside the lock."""
    dev = Path(root) / "lockfiles" / "requirements-dev.lock"
    return _pinned(dev) if dev.is_file() else {}


def lock_versions(root) -> dict[str, str]:
    """{distribution: version} the lock asks for (requirements.lock, torch.txt, the project itself)."""
    out = {}
    for name in ("requirements.lock", "torch.txt"):
        out.update(_pinned(Path(root) / "lockfiles" / name))
    project = re.search(r'(?m)^name = "([^"]+)"\s*\nversion = "([^"]+)"', (Path(root) / "pyproject.toml").read_text())
    if project:
        out[normalise(project[1])] = project[2]
    return out


def site_packages() -> Path:
    return Path(sysconfig.get_paths()["purelib"])


def _venv_problems() -> list[str]:
    cfg = Path(sys.prefix) / "pyvenv.cfg"
    if sys.prefix == sys.base_prefix or not cfg.is_file():
        return [f"{sys.executable} is not a virtual environment: an opening runs in the project's .venv "
                "(python3.11 scripts/setup_env.py)"]
    if re.search(r"(?mi)^include-system-site-packages\s*=\s*true", cfg.read_text()):
        return [f"{cfg}: include-system-site-packages = true (the system's packages would be importable)"]
    return []


def _version_problems(dists, lock: dict[str, str], optional: dict[str, str] | None = None) -> list[str]:
    found = {normalise(d.metadata["Name"]): d.version for d in dists}
    out = []
    for name, version in sorted(found.items()):
        want = lock.get(name) or (optional or {}).get(name)
        if name == INSTALLER:
            continue
        if want is None:
            out.append(f"{name} {version} is installed but not in the lock")
        elif version != want and version.split("+")[0] != want:
            out.append(f"{name} {version} is installed, the lock says {want}")
    out += [f"{name} {v} is in the lock but not installed" for name, v in sorted(lock.items()) if name not in found]
    return out


def _record_problems(dist, site: Path, listed: set) -> list[str]:
    out = []
    for row in (dist.read_text("RECORD") or "").splitlines():
        parts = row.rsplit(",", 2)
        if len(parts) != 3:
            continue
        path = os.path.normpath(site / parts[0])
        listed.add(path)
        if not parts[1]:
            continue
        algo, want = parts[1].split("=", 1)
        try:
            data = Path(path).read_bytes()
        except OSError:
            out.append(f"{path} (listed by {dist.metadata['Name']}'s RECORD) is missing")
            continue
        if base64.urlsafe_b64encode(hashlib.new(algo, data).digest()).rstrip(b"=").decode() != want:
            out.append(f"{path} differs from {dist.metadata['Name']}'s RECORD")
    return out


def _unlisted(site: Path, listed: set) -> list[str]:
    out = []
    for dirpath, _dirs, files in os.walk(site):
        for f in files:
            path = os.path.normpath(os.path.join(dirpath, f))
            if path not in listed:
                out.append(f"{path} is in site-packages but no distribution's RECORD lists it")
    return out


def _hook_problems(root) -> list[str]:
    """sitecustomize / usercustomize / .pth outside site-packages (where RECORD accounts for them)."""
    folders = {Path(sysconfig.get_paths()[k]) for k in ("stdlib", "platstdlib")} | {Path(root) / "workflow"}
    out = []
    for folder in sorted(folders):
        for name in HOOKS:
            if (folder / name).exists():
                out.append(f"{folder / name} runs at every interpreter start")
        out += [f"{p} runs at every interpreter start" for p in sorted(folder.glob("*.pth"))]
    return out


def _variable_problems(root) -> list[str]:
    out = [f"{v}={os.environ[v]!r} is set (it adds code to every job)" for v in PYTHON_VARS if os.environ.get(v)]
    extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
             if p and Path(p).resolve() != (Path(root) / "workflow").resolve()]
    if extra:
        out.append(f"PYTHONPATH holds {extra} beyond {Path(root) / 'workflow'}")
    return out


def _script_folder_problems(root) -> list[str]:
    """Snakemake's folder of temporary rule scripts in the working folder (first on every script job's path) and
    in the repository: nothing importable in either."""
    out = []
    for folder in sorted({Path(root).resolve() / ".snakemake" / "scripts", Path.cwd().resolve() / ".snakemake" / "scripts"}):
        if folder.is_dir():
            out += [f"{p} is importable by every script job (it is first on their path)" for p in sorted(folder.iterdir())
                    if not (p.is_file() and TEMP_SCRIPT.match(p.name))]
    return out


@functools.lru_cache(maxsize=None)
def _installed_problems(root: str) -> tuple[str, ...]:
    """The installed distributions against the lock and their RECORDs: hashed once per process (~4 s)."""
    site = site_packages()
    dists = list(md.distributions(path=[str(site)]))
    listed: set = set()
    out = _venv_problems() + _version_problems(dists, lock_versions(root), optional_versions(root))
    for d in dists:
        out += _record_problems(d, site, listed)
    return tuple(out + _unlisted(site, listed))


def environment_problems(root) -> list[str]:
    """Every way the running environment differs from the lock (empty: it is the lock)."""
    return (list(_installed_problems(str(Path(root).resolve()))) + _hook_problems(root) + _variable_problems(root)
            + _script_folder_problems(root))
