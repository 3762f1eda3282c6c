"""Shared test fixtures. The fixture dataset (tests/data/scifact_fixture) is a real SciFact subset
committed with the tests, so the suite needs neither ../shared nor the network. Tests that need
the full mirror look for it at ../shared/data/scifact and skip with a reason when it is absent."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
FIXTURE = DATA / "scifact_fixture"
SHARED = (ROOT.parent / "shared" / "data" / "scifact").resolve()
SNAKEMAKE = Path(sys.executable).parent / "snakemake"
AUDIT = ROOT / "scripts" / "audit"  # the standard-library audit: run it as python -I -S <this folder>

sys.path.insert(0, str(ROOT / "workflow"))
# The scoring contract's numeric mode (oneMKL strict CNR) for every process the tests start and for
# in-process scoring: MKL reads it at its first call, so it is set before any test imports torch.
from rerank_study.reranker.numerics import CNR_ENV  # noqa: E402  (imports no torch)

os.environ.update(CNR_ENV)
# Speed only (the scores are the same bits at any thread count and wait policy): the two pytest-xdist workers
# each run torch on 2 threads, 4 threads on the 2 cores; OpenMP's threads spin while they wait, and measured
# here the same inference then cost ~45 % more CPU than on 1 thread. Passive waiting gives that CPU back.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def full_mirror() -> Path:
    if not (SHARED / "corpus.jsonl").exists():
        pytest.skip(f"full SciFact mirror not found at {SHARED} (this test needs the real "
                    "5183-document corpus)")
    return SHARED


def audit_module(name: str):
    """One module of the standard-library audit by its dotted name (``checks.columns``:
    ``scripts/audit/checks/columns.py``), imported as the audit itself imports its modules: the audit's folder
    first on sys.path, the module by its room and name. The one way tests reach inside the audit (everything
    else runs it: ``python -I -S scripts/audit``)."""
    if str(AUDIT) not in sys.path:
        sys.path.insert(0, str(AUDIT))
    return importlib.import_module(name)


def make_lockdir(dest: Path, frozen: bool = True) -> Path:
    """A fresh lockfile folder for the fixture: its TEST_FIXTURE marker, the fixture's committed pins
    (data; with ``frozen`` also its split lists and frozen candidates) + the project's real model pins."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(DATA / "lockfiles" / "TEST_FIXTURE", dest / "TEST_FIXTURE")  # test switches work only here
    shutil.copy(DATA / "lockfiles" / "data_pins.json", dest / "data_pins.json")
    shutil.copy(ROOT / "lockfiles" / "model_pins.json", dest / "model_pins.json")
    if frozen:
        shutil.copy(DATA / "lockfiles" / "derived_pins.json", dest / "derived_pins.json")
        for sub in ("splits", "candidates"):
            shutil.copytree(DATA / "lockfiles" / sub, dest / sub)
    return dest


def run_snakemake(workdir: Path, *args: str, config: dict | None = None, check: bool = True,
                  targets: tuple[str, ...] = (), fixture: bool = True, snakefile: Path = ROOT / "Snakefile",
                  launcher: tuple = (), env: dict | None = None, cwd=None) -> subprocess.CompletedProcess:
    """Snakemake on the committed fixture (its config overrides and data), or with ``fixture=False``
    on the project's own config (the caller then names the data and the lockfiles); ``snakefile``:
    another checkout's code; ``launcher``: another way to start snakemake (e.g. python -m snakemake); ``env``:
    variables added to the environment; ``cwd``: the folder it is started from."""
    cfg = {"resources": str(workdir / "resources"), "results": str(workdir / "results"),
           "lockdir": str(workdir / "lockfiles"), "scorer": "stand-in"}
    if fixture:
        cfg["data_mirror"] = str(FIXTURE)
    cfg.update(config or {})
    cmd = [*(launcher or [str(SNAKEMAKE)]), "-s", str(snakefile), "--directory", str(workdir), "--cores", "2",
           *(["--configfile", str(DATA / "fixture_config.yaml")] if fixture else []), *args,
           "--config", *[f"{k}={v}" for k, v in cfg.items()]]
    if targets:
        cmd += ["--", *targets]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONHASHSEED="0", **(env or {}))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    if check and proc.returncode != 0:
        raise AssertionError("snakemake failed "
                             f"({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}")
    return proc


# ------------------------------------------------------ session worlds: built once per test run, shared --
def _shared_root(tmp_path_factory) -> Path:
    """The folder every pytest-xdist worker of this test run sees (without xdist: the session's base
    folder)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def world_lock(folder: Path) -> FileLock:
    """The file lock of a shared world (``folder``: the world's folder, e.g. ``fixture_workdir``): held while
    one of its runs is built in it, and by whoever copies the whole folder (so that no copy catches a run
    half-built)."""
    return FileLock(str(folder.parent / f"{folder.name}.world.lock"))


def _snapshot(folders) -> dict[str, list[int]]:
    """Every file under ``folders`` (symbolic links not followed): its size and modification time in
    nanoseconds, to show that no test wrote into a shared world."""
    return {str(p): [p.lstat().st_size, p.lstat().st_mtime_ns]
            for f in folders for p in sorted(Path(f).rglob("*")) if p.is_symlink() or not p.is_dir()}


@contextlib.contextmanager
def shared_world(tmp_path_factory, name: str, folder: str, build):
    """``build(root / folder)`` once per test run, by whichever pytest-xdist worker asks first; the others
    wait for it (``world_lock``: the worlds built in one folder share its lock), then reuse the folder
    READ-ONLY (a test that changes a world works on a copy of it). ``build`` returns the world's JSON-able
    value and the folders no test may write into (their files' sizes and times are recorded, and compared
    again when the worker's session ends). A failed build is recorded too: the other workers fail at once
    with its message instead of building it again."""
    root = _shared_root(tmp_path_factory)
    record = root / f"{name}.world.json"
    with world_lock(root / folder):
        if not record.exists():
            try:
                value, untouched = build(root / folder)
            except Exception as exc:
                record.write_text(json.dumps({"failed": f"{type(exc).__name__}: {exc}"}), encoding="utf-8")
                raise
            record.write_text(json.dumps({"value": value, "untouched": [str(f) for f in untouched],
                                          "snapshot": _snapshot(untouched)}), encoding="utf-8")
    got = json.loads(record.read_text(encoding="utf-8"))
    if "failed" in got:
        pytest.fail(f"the shared {name} failed to build (in another worker):\n{got['failed'][-8000:]}",
                    pytrace=False)
    yield got["value"]
    now = _snapshot(got["untouched"])
    changed = sorted(k for k in set(now) | set(got["snapshot"]) if now.get(k) != got["snapshot"].get(k))
    assert not changed, f"a test wrote into the shared {name} (a test that changes it must copy it): " \
                        f"{changed[:20]}"


def _make_workdir(wd: Path):
    make_lockdir(wd / "lockfiles")
    return str(wd), [wd / "lockfiles"]


@pytest.fixture(scope="session")
def fixture_workdir(tmp_path_factory) -> Path:
    """A work folder with the fixture's committed pins (splits and frozen candidates), as a clone has them;
    the fixture runs are made in it. Shared by every worker: read it; copy it whole under ``world_lock``."""
    with shared_world(tmp_path_factory, "fixture_workdir", "pipeline", _make_workdir) as wd:
        yield Path(wd)


def _build_run(wd: Path, name: str, config: dict):
    proc = run_snakemake(wd, config=config)
    rundir = wd / "results" / name
    assert (rundir / "audit.json").exists(), proc.stderr[-3000:]
    return str(rundir), [rundir]


@pytest.fixture(scope="session")
def smoke_run(fixture_workdir, tmp_path_factory) -> Path:
    """The smoke DAG (5 queries x 10 candidates, stand-in) run to the end, audit included."""
    with shared_world(tmp_path_factory, "smoke_run", "pipeline",
                      lambda wd: _build_run(wd, "smoke-standin", {"smoke": "true"})) as rundir:
        yield Path(rundir)


@pytest.fixture(scope="session")
def dev_run(fixture_workdir, tmp_path_factory) -> Path:
    """The full development DAG on the fixture (8 queries x 50 candidates, stand-in), audit included."""
    with shared_world(tmp_path_factory, "dev_run", "pipeline",
                      lambda wd: _build_run(wd, "dev-standin", {})) as rundir:
        yield Path(rundir)


# ----------------------------------------- the sealed confirmation: freezing a protocol on the fixture --
def freeze_cmd(wd, *extra, command="freeze", dev_run=None):
    return [sys.executable, str(ROOT / "scripts/confirm.py"), command, "--dev-run",
            str(dev_run or wd / "results/dev-standin"), "--configfile", str(DATA / "fixture_config.yaml"),
            "--lockdir", str(wd / "lockfiles"), "--results", str(wd / "results"), "--resources",
            str(wd / "resources"), *extra]


def run_freeze(wd, *extra, dev_run=None):
    """``scripts/confirm.py freeze`` on a fixture work folder (its development run by default)."""
    return subprocess.run(freeze_cmd(wd, *extra, dev_run=dev_run), capture_output=True, text=True)


def _freeze_world(fixture_workdir: Path, wd: Path):
    with world_lock(fixture_workdir):
        for sub in ("lockfiles", "resources", "results"):
            shutil.copytree(fixture_workdir / sub, wd / sub, symlinks=True)
    out = run_freeze(wd, "--allow-standin-for-testing")
    assert out.returncode == 0, out.stderr
    sha = (wd / "lockfiles/protocol.sha256").read_text().split()[0]
    return [str(wd), sha], [wd / sub for sub in ("lockfiles", "resources", "results")]


@pytest.fixture(scope="session")
def frozen(dev_run, fixture_workdir, tmp_path_factory):
    """A copy of the fixture work folder (dev run done) with a TEST-ONLY protocol frozen, once per test run
    (shared by every worker). Its users read it as freshly frozen; a test that opens the sealed judgements
    or changes the world does so in a copy of it."""
    with shared_world(tmp_path_factory, "frozen", "confirm",
                      lambda wd: _freeze_world(fixture_workdir, wd)) as (wd, sha):
        yield Path(wd), sha


@pytest.fixture(scope="session")
def openings(frozen, tmp_path_factory):
    """The frozen world opened: a look at opening 1, opening 2, the re-opening 3 (tests/seal_world.py
    ``build_openings``), once per test run, shared by every worker: (work folder, sha256, what was seen)."""
    from seal_world import build_openings

    src, sha = frozen
    with shared_world(tmp_path_factory, "openings", "openings",
                      lambda wd: build_openings(src, sha, wd)) as value:
        yield value


def read_json(p: Path):
    return json.loads(Path(p).read_text(encoding="utf-8"))


DAG_FIXTURES = {"fixture_workdir", "smoke_run", "dev_run", "copy_of", "frozen", "openings", "real_smoke"}


# the test files that take longest (worker-seconds measured in a full run, their own DAG runs included), run
# first so that pytest-xdist's workers finish together; the rest keep their order
LONGEST_FIRST = ("test_your_reranker_doc.py", "test_confirm_openings.py", "test_audit_report.py",
                 "test_studies_dag.py", "test_slurm.py", "test_pipeline.py", "test_audit_branches_dag.py",
                 "test_studies_repin_data.py")


def pytest_collection_modifyitems(config, items):
    """``slow`` = runs the Snakemake DAG: every test that uses a DAG fixture (modules that call snakemake
    directly mark themselves). ``-m "not slow"`` gives the quick unit tests. The longest files first."""
    for item in items:
        if DAG_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


@contextlib.contextmanager
def serve_folder(folder: Path):
    """A local HTTP server for ``folder`` standing in for a download host; yields its base URL."""
    import http.server
    import threading

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **k):
            super().__init__(*a, directory=str(folder), **k)

        def log_message(self, *a):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}"
    finally:
        httpd.shutdown()


# ------------------------------------------- studies: the synthetic second study (tests/data/studies) --
STUDY_DIR = DATA / "studies"
SYNTH = DATA / "synthetic_beir"
TINY_REPO = "rerank-study/tiny-bert-ce-2x128"


def load_data_module(name):
    """A builder script of the test data (``tests/data/<name>.py``), imported from its file."""
    spec = importlib.util.spec_from_file_location(name, DATA / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _yaml_lines(data: dict, indent: int = 0) -> list[str]:
    """Block mappings, flow lists, JSON-quoted strings: the subset config.yaml is written in."""
    out = []
    for key, val in data.items():
        pad = " " * indent
        if isinstance(val, dict):
            out += [f"{pad}{key}:"] + _yaml_lines(val, indent + 2)
        else:
            out.append(f"{pad}{key}: {json.dumps(val)}")
    return out


def write_yaml(path: Path, data: dict) -> Path:
    path.write_text("\n".join(_yaml_lines(data)) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory) -> dict[int, Path]:
    """The seeded tiny rerankers (1 and 3 output logits), built once; their bytes equal the committed pins."""
    root = tmp_path_factory.mktemp("tiny")
    mod = load_data_module("make_tiny_reranker")
    return {n: Path(mod.build(root / f"labels{n}", num_labels=n)["out_dir"]) for n in (1, 3)}


def synthetic_study(tmp: Path, model_dir: Path, **overrides) -> Path:
    """A writable copy of the synthetic study's lock folder and its study file (paths made absolute)."""
    lock = tmp / "synthetic-lock"
    if not lock.exists():
        shutil.copytree(STUDY_DIR / "synthetic" / "lockfiles", lock)
    import yaml

    data = yaml.safe_load((STUDY_DIR / "synthetic.yaml").read_text(encoding="utf-8"))
    data.update({"lockdir": str(lock), "data_mirror": str(SYNTH), "model_dir": str(model_dir)})
    for key, val in overrides.items():
        if val is None:  # the study file does not set it (a command-line value then applies)
            data.pop(key, None)
        elif isinstance(val, dict):
            data.setdefault(key, {}).update(val)
        else:
            data[key] = val
    return write_yaml(tmp / f"{data['study']['name']}.yaml", data)


def studies_arg(*files: Path) -> str:
    return "[" + ",".join(str(f) for f in files) + "]"


@pytest.fixture
def copy_of(tmp_path, fixture_workdir, request):
    """make('smoke' | 'dev'): a copy of that finished fixture run to corrupt (the audit tests); only the run
    asked for is made (``smoke_run`` or ``dev_run``, requested on first use)."""
    def make(which="smoke"):
        """A copy of the run folder; the inputs it names (../../resources, ../../lockfiles) are linked."""
        src = request.getfixturevalue("smoke_run" if which == "smoke" else "dev_run")
        base = tmp_path / which
        (base / "results").mkdir(parents=True)
        for sub in ("resources", "lockfiles"):
            (base / sub).symlink_to(fixture_workdir / sub)
        dst = base / "results" / src.name
        shutil.copytree(src, dst)
        return dst
    make.lockdir = fixture_workdir / "lockfiles"
    return make
