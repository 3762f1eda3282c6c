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
* Snakemake's folder of temporary rule scripts (``.snakemake/scripts``, first on every script job's path)
  holds nothing a job could import;
* this process's module search path and loaded modules come only from the interpreter, the environment and the
  checkout (``interpreter_problems``: run first thing by the Snakefile of an opening, and again once
  everything is imported; the guard's own in-process callers, tests and confirm.py, are not openings), and
  every file of the environment's bin folder is a RECORD's;
* the jobs get an allowlisted environment (``job_environment``: no shell start-up file, no loader variable).
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

from ..errors import MissingInputError, NotRegularFileError
from ..fileio import input_bytes, input_text
from .tree import GENERATED

HOOKS = ("sitecustomize.py", "usercustomize.py")
INSTALLER = "pip"
# interpreter variables an opening's processes may be started with (any other PYTHON* variable, and the
# loader's and the shells' start-up variables, can add code to a process: refused)
PYTHON_VARS_ALLOWED = ("PYTHONPATH", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX",
                       "PYTHONUNBUFFERED", "PYTHONIOENCODING", "PYTHONUTF8", "PYTHONNOUSERSITE")
CODE_VARS = ("LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH", "BASH_ENV", "ENV")
# the environment every job of an opening gets (an allowlist: everything else is removed before any job
# starts)
JOB_ENV = ("HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TMP", "TEMP", "TERM", "PWD",
           "HOSTNAME", "PYTHONPATH", "PYTHONPYCACHEPREFIX", "PYTHONHASHSEED", "PYTHONUNBUFFERED",
           "PYTHONIOENCODING", "TOKENIZERS_PARALLELISM", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE",
           "SSL_CERT_DIR", "CURL_CA_BUNDLE")
JOB_ENV_PREFIXES = ("LC_", "MKL_", "OMP_", "KMP_", "OPENBLAS_", "HF_", "TRANSFORMERS_", "SLURM_",
                    "SNAKEMAKE_")
VENV_OWN = ("python", "python3", "python3.11", "activate", "activate.csh", "activate.fish", "Activate.ps1")
TEMP_SCRIPT = re.compile(r"^tmp[A-Za-z0-9_]+\.[A-Za-z0-9_]+\.py$")  # Snakemake's tmpXXXX.<rule script>.py


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pinned(path: Path) -> dict[str, str]:
    out = {}
    for line in input_text(path).splitlines():
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
    project = re.search(r'(?m)^name = "([^"]+)"\s*\nversion = "([^"]+)"',
                        input_text(Path(root) / "pyproject.toml"))
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
    if re.search(r"(?mi)^include-system-site-packages\s*=\s*true", input_text(cfg)):
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
    out += [f"{name} {v} is in the lock but not installed" for name, v in sorted(lock.items())
            if name not in found]
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
            data = input_bytes(Path(path))
        except (OSError, MissingInputError, NotRegularFileError) as exc:
            what = "is missing" if isinstance(exc, (OSError, MissingInputError)) else "is not a regular file"
            out.append(f"{path} (listed by {dist.metadata['Name']}'s RECORD) {what}")
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
    out = [f"{v}={os.environ[v]!r} is set (it adds code to a process)" for v in sorted(os.environ)
           if (v.startswith("PYTHON") and v not in PYTHON_VARS_ALLOWED) or v in CODE_VARS]
    extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
             if p and Path(p).resolve() != (Path(root) / "workflow").resolve()]
    if extra:
        out.append(f"PYTHONPATH holds {extra} beyond {Path(root) / 'workflow'}")
    return out


def job_environment(environ: dict) -> tuple[dict, list[str]]:
    """The environment of an opening's jobs: only the allowlisted variables, PATH the interpreter's folder and
    the system's; returns it and the names removed (recorded in the started line)."""
    keep = {k: v for k, v in environ.items() if k in JOB_ENV or k.startswith(JOB_ENV_PREFIXES)}
    keep["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    return keep, sorted(set(environ) - set(keep) - {"PATH"})


def _pth_paths(site: Path) -> set[Path]:
    """The folders the .pth files of site-packages add to sys.path (their plain-path lines)."""
    out = set()
    for pth in site.glob("*.pth"):
        for line in input_bytes(pth).decode("utf-8", errors="replace").splitlines():
            if line.strip() and not line.startswith(("#", "import ", "import\t")):
                out.add(Path(line.strip()).resolve())
    return out


def allowed_path_entries(root) -> set[Path]:
    paths = sysconfig.get_paths()
    site = Path(paths["purelib"])
    allowed = {Path(paths[k]).resolve() for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    allowed |= {Path(paths["stdlib"]).resolve() / "lib-dynload", Path(root).resolve(),
                (Path(root) / "workflow").resolve(), Path(sys.executable).parent.resolve(),
                Path(paths["stdlib"]).resolve().parent / "python311.zip"}
    return allowed | _pth_paths(site)


def _in_checkout(path: Path, root) -> bool:
    """A folder of the checkout outside its generated folders: every file there is tracked, or refused by the
    tree check (Snakemake puts the folders of the Snakefile and the included rule files on the path)."""
    root = Path(root).resolve()
    return path.is_relative_to(root) and (path == root or path.relative_to(root).parts[0] not in GENERATED)


def interpreter_problems(root) -> list[str]:
    """This process's module search path and the modules it has loaded: nothing from outside the interpreter's
    library, the environment and the checkout (a folder ``python -m`` or a launcher put first on the path
    would shadow the standard library for the guard itself)."""
    allowed = allowed_path_entries(root)
    out = [f"sys.path holds {p!r}: a folder outside the interpreter, the environment and the checkout"
           for p in sys.path if p and Path(p).exists() and Path(p).resolve() not in allowed
           and not _in_checkout(Path(p).resolve(), root)
           and not (Path(p).name == "pip-deployments" and not any(Path(p).iterdir()))]
    out += [f"sys.path holds {p!r} (the current folder)" for p in sys.path if p == ""]
    roots = [a for a in allowed if a.is_dir()]
    for name, mod in sorted(sys.modules.items()):
        f = getattr(mod, "__file__", None)
        if f and not any(Path(f).resolve().is_relative_to(r) for r in roots) \
                and not _in_checkout(Path(f).resolve(), root):
            out.append(f"module {name} was loaded from {f}, outside the interpreter, the environment and "
                       "the checkout")
    return out


def _bin_problems(listed: set) -> list[str]:
    """The environment's own bin folder (first on a console script's path): every file a RECORD lists, or the
    interpreter and activation scripts venv made."""
    folder = Path(sys.executable).parent
    return [f"{p} is in the environment's bin folder but no RECORD lists it" for p in sorted(folder.iterdir())
            if p.is_file() and os.path.normpath(p) not in listed and p.name not in VENV_OWN]


def _script_folder_problems(root) -> list[str]:
    """Snakemake's folder of temporary rule scripts in the working folder (first on every script job's path)
    and in the repository: nothing importable in either."""
    out = []
    for folder in sorted({Path(root).resolve() / ".snakemake" / "scripts",
                          Path.cwd().resolve() / ".snakemake" / "scripts"}):
        if folder.is_dir():
            out += [f"{p} is importable by every script job (it is first on their path)"
                    for p in sorted(folder.iterdir())
                    if not (p.is_file() and TEMP_SCRIPT.match(p.name))]
    return out


@functools.cache
def _installed_problems(root: str) -> tuple[str, ...]:
    """The installed distributions against the lock and their RECORDs: hashed once per process (~4 s)."""
    site = site_packages()
    dists = list(md.distributions(path=[str(site)]))
    listed: set = set()
    out = _venv_problems() + _version_problems(dists, lock_versions(root), optional_versions(root))
    for d in dists:
        out += _record_problems(d, site, listed)
    return tuple(out + _unlisted(site, listed) + _bin_problems(listed))


def environment_problems(root) -> list[str]:
    """Every way the running environment differs from the lock (empty: it is the lock)."""
    return (list(_installed_problems(str(Path(root).resolve()))) + _hook_problems(root)
            + _variable_problems(root)
            + _script_folder_problems(root))
