"""Worlds for the seal's tests: copies of this checkout as git repositories, their lock folders, and protocols
constructed as a freeze would write them (no pinned model exists offline, so a genuine freeze from a pinned
development run cannot happen here; the evidence and power blocks are a harness, the guards are real)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from conftest import DATA, FIXTURE, ROOT, freeze_cmd, make_lockdir, run_freeze, run_snakemake, world_lock

from rerank_study.seal import ledger, locations
from rerank_study.seal import protocol as seal_protocol
from rerank_study.settings.config import load_config

GIT = ["git", "-c", "user.email=t@t", "-c", "user.name=t", "-c", "commit.gpgsign=false"]
# the fixture runs' overrides (tests/data/fixture_config.yaml, which the DAG runs of the tests are given):
# the fixture's split sizes and the calibration's small sizes
FIXTURE_SPLITS = yaml.safe_load((DATA / "fixture_config.yaml").read_text(encoding="utf-8"))
HARNESS_POWER = {"alpha": 0.05, "power": 0.8, "n_development": 100, "n_confirmation": 300, "sd_eff": 0.17,
                 "grouped_variance_of_mean": 0.000289, "mde_confirmation": 0.0275, "formula": "harness"}
HARNESS_EVIDENCE = {"run": "dev", "scorer": "pinned", "manifest_sha256": "0" * 64, "artefacts_sha256": {}}
SEALED = "qrels/test.tsv"  # the fixture's (and SciFact's) sealed file: study.qrels_confirm
TEST_SWITCHES = {"allow_standin_for_testing": "true", "allow_dirty_for_testing": "true"}


def git(repo, *args):
    return subprocess.run(GIT + ["-C", str(repo), *args], check=True, capture_output=True, text=True)


def commit_all(repo, msg="x"):
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", msg, "--allow-empty")


def code_copy(dest: Path, with_git: bool = False) -> Path:
    """A copy of this checkout as a clone of its current state would hold it: every tracked file and every
    untracked file git does not ignore, from the working tree (what the method hash covers, and what runs the
    DAG)."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"],
                            capture_output=True, check=True).stdout.split(b"\0")
    dest.mkdir(parents=True)
    for rel in sorted({p.decode() for p in listed if p}):
        src = ROOT / rel
        if src.is_file() and "__pycache__" not in Path(rel).parts:
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    if with_git:
        subprocess.run(["git", "init", "-q", str(dest)], check=True)
        commit_all(dest, "code")
    return dest


def genuine_repo(dest: Path) -> Path:
    """A git checkout of this code whose own lockfiles/ is a genuine (not a test fixture) lock folder of the
    fixture data: the repository's sealed set is the fixture's qrels/test.tsv."""
    repo = code_copy(dest)
    keep = {name: (repo / "lockfiles" / name).read_bytes()  # the environment's locks (the seal checks them)
            for name in ("requirements.lock", "requirements-dev.lock", "torch.txt")}
    shutil.rmtree(repo / "lockfiles")
    make_lockdir(repo / "lockfiles")
    (repo / "lockfiles" / locations.TEST_FIXTURE).unlink()
    for name, data in keep.items():
        (repo / "lockfiles" / name).write_bytes(data)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    commit_all(repo, "code and lock folder")
    return repo


def repo_config(repo: Path, lockdir: Path | None = None, **extra) -> dict:
    return load_config(repo / "config/config.yaml", {**FIXTURE_SPLITS, "scorer": "pinned",
                                                    "lockdir": str(lockdir or repo / "lockfiles"),
                                                    "results": str(repo / "results"),
                                                    "resources": str(repo / "resources"), **extra})


def constructed_freeze(repo: Path, cfg: dict, lockdir: Path, commit: bool = True) -> str:
    """A protocol frozen into ``lockdir`` as freeze writes it (harness evidence), with its ledger line."""
    p = seal_protocol.build_protocol(cfg, lockdir, repo, HARNESS_EVIDENCE, HARNESS_POWER, test_only=False,
                                     now="2026-12-01T00:00:00+00:00")
    sha = seal_protocol.write_protocol(lockdir, p)
    ledger.append_ledger(lockdir, {"event": "frozen", "time": p["frozen_at"], "protocol_sha256": sha,
                                   "labels": []})
    if commit:
        commit_all(repo, f"freeze {sha[:12]}")
    return sha


def fixture_cfg(sha, **extra):
    over = {**FIXTURE_SPLITS, "scorer": "stand-in", "unseal": sha, "allow_standin_for_testing": True,
            "allow_dirty_for_testing": True}
    return load_config(ROOT / "config/config.yaml", {**over, **extra})


def sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def copy_workdir(src: Path, dest: Path, results=("dev-standin",), link_resources: bool = True) -> Path:
    """A work folder: the source's lock folder (copied), resources (linked, for read-only use, or
    copied where Snakemake runs) and runs; copied under the source's ``world_lock`` (a shared world: no
    fixture run being made in it meanwhile)."""
    dest.mkdir(parents=True)
    with world_lock(src):
        shutil.copytree(src / "lockfiles", dest / "lockfiles")
        if link_resources:
            (dest / "resources").symlink_to(src / "resources")
        else:
            shutil.copytree(src / "resources", dest / "resources", symlinks=True)
        for run in results:
            shutil.copytree(src / "results" / run, dest / "results" / run)
    return dest


def look_at_sealed_file(repo: Path, sha: str, opening: int, check: bool = True, args: tuple = (), run_kw=None,
                        **config):
    """The DAG of the repository's own code, asked for the sealed judgements of an opening (no model needed):
    the only rule that runs on the sealed side is fetch_sealed_qrels."""
    target = repo / "results" / f"confirm-{sha[:12]}-{opening}" / "sealed" / "qrels" / "test.tsv"
    return run_snakemake(repo, *args, config={"unseal": sha, "scorer": "pinned", **config},
                         targets=(str(target),), snakefile=repo / "Snakefile", check=check, **(run_kw or {}))


def sealed_run(sha: str, n: int) -> str:
    """The results path of TEST-ONLY opening ``n`` of the protocol ``sha``."""
    return f"results/confirm-{sha[:12]}-test-{n}"


def file_hashes(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (relative path) and its sha256."""
    return {str(p.relative_to(folder)): sha256(p) for p in sorted(Path(folder).rglob("*")) if p.is_file()}


def status(wd: Path) -> str:
    """confirm.py status with the settings the openings ran with (the stand-in scorer, the test switches):
    exit 0 (an opening now would pass) and its text."""
    same = wd / "status_settings.yaml"
    same.write_text("scorer: stand-in\n" + "".join(f"{k}: true\n" for k in TEST_SWITCHES))
    proc = subprocess.run([sys.executable, str(ROOT / "scripts/confirm.py"), "status", "--configfile",
                           str(DATA / "fixture_config.yaml"), "--configfile", str(same),
                           "--lockdir", str(wd / "lockfiles"), "--results",
                           str(wd / "results"), "--resources", str(wd / "resources")], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _said(proc: subprocess.CompletedProcess) -> dict:
    return {"returncode": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}


def build_openings(frozen_wd: Path, sha: str, wd: Path):
    """In a copy of the frozen world (which stays unopened): 1. a look at intermediate files of opening 1 (no
    'confirm' target); 2. a full opening (2); 3. a re-opening (3). What the ledger and status said, and what a
    freeze, a re-freeze and a replayed job answered, after the look; the files of opening 2 before the
    re-opening (their sha256). Built once per test run (tests/conftest.py ``openings``); every test that needs
    an opened sealed set reads this one."""
    with world_lock(frozen_wd):
        for sub in ("lockfiles", "resources", "results"):
            shutil.copytree(frozen_wd / sub, wd / sub, symlinks=True)
    on = {**TEST_SWITCHES, "unseal": sha}
    run_snakemake(wd, config=on, targets=(f"{wd / sealed_run(sha, 1)}/inputs/qrels.tsv",
                                          f"{wd / sealed_run(sha, 1)}/groups.tsv"))
    lock, aside = wd / "lockfiles", wd / "aside"
    aside.mkdir()
    # the protocol moved aside ...
    for name in (locations.PROTOCOL, locations.PROTOCOL_SHA, locations.PREREG):
        shutil.move(lock / name, aside / name)
    refrozen = run_freeze(wd, "--allow-standin-for-testing")  # ... and a new one frozen after the look
    for name in (locations.PROTOCOL, locations.PROTOCOL_SHA, locations.PREREG):
        shutil.move(aside / name, lock / name)
    look = {"ledger": ledger.read_ledger(lock), "status": status(wd), "freeze": _said(refrozen)}
    look["refreeze"] = _said(subprocess.run(freeze_cmd(wd, "--reason", "tidy", command="refreeze"),
                                            capture_output=True, text=True))
    job = wd / sealed_run(sha, 1) / "logs/fetch_sealed_qrels.job.json"  # the look's job, replayed
    script = ROOT / "workflow/scripts/fetch_sealed_qrels.py"
    look["replay"] = _said(subprocess.run([sys.executable, str(script), str(job)], capture_output=True,
                                          text=True, env=dict(os.environ, PYTHONPATH=str(ROOT / "workflow"))))
    look["plan"] = run_snakemake(wd, "-n", config=on, targets=("confirm",)).stdout
    seen = {"after_look": look}
    run_snakemake(wd, config=on, targets=("confirm",))
    seen["first_files"] = file_hashes(wd / sealed_run(sha, 2))
    run_snakemake(wd, config=on, targets=("confirm",))
    return [str(wd), sha, seen], [wd / sub for sub in ("lockfiles", "results")]


__all__ = ["DATA", "FIXTURE", "GIT", "FIXTURE_SPLITS", "SEALED", "TEST_SWITCHES", "git", "commit_all",
           "code_copy", "genuine_repo", "repo_config", "constructed_freeze", "fixture_cfg", "sha256",
           "copy_workdir", "look_at_sealed_file", "sealed_run", "file_hashes", "status",
           "build_openings"]
