"""The DAG's audit rule and the README's stand-alone command (python -I -S scripts/audit RUN --lockdir ...
--configfile ...) give the same verdict on the same run folder: untouched, and corrupted in ways different
checks catch (a column, a lock folder of its own, a forged setting)."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from conftest import run_snakemake
from run_copies import read_rows, rehash_manifest, run_audit, write_rows


def _r0_changed(d):
    rows = read_rows(d / "rankings.tsv")
    rows[0]["r0"] = "7"
    write_rows(d / "rankings.tsv", rows)


def _own_lock_folder(d):
    shutil.copytree(d / "../../lockfiles", d / ".pins")
    m = json.loads((d / "manifest.json").read_text())
    m["lockdir"] = ".pins"
    (d / "manifest.json").write_text(json.dumps(m, indent=2, sort_keys=True) + "\n")


def _threshold_forged(d):
    m = json.loads((d / "manifest.json").read_text())
    m["settings"]["threshold"] = 0.0
    (d / "manifest.json").write_text(json.dumps(m, indent=2, sort_keys=True) + "\n")


CASES = {"untouched": None, "r0_changed": _r0_changed, "own_lock_folder": _own_lock_folder,
         "threshold_forged": _threshold_forged}


def _verdict(text: str) -> str:
    """The audit's last line: AUDIT PASSED ... or AUDIT FAILED: <the failed checks>."""
    return re.findall(r"^AUDIT (?:PASSED|FAILED).*$", text, flags=re.M)[-1]


@pytest.fixture(scope="module")
def workdir(smoke_run, fixture_workdir, tmp_path_factory):
    """A copy of the fixture work folder (its smoke run finished) and the smoke run's original bytes."""
    wd = tmp_path_factory.mktemp("agree")
    for sub in ("lockfiles", "resources", "results"):
        shutil.copytree(fixture_workdir / sub, wd / sub, symlinks=True)
    pristine = tmp_path_factory.mktemp("pristine") / "smoke-standin"
    shutil.copytree(smoke_run, pristine)
    return wd, pristine


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_dag_rule_and_the_readme_command_agree(workdir, case):
    wd, pristine = workdir
    rundir = wd / "results" / "smoke-standin"
    shutil.rmtree(rundir)
    shutil.copytree(pristine, rundir)
    if CASES[case]:
        CASES[case](rundir)
        rehash_manifest(rundir)
    proc, _ = run_audit(rundir, wd / "lockfiles")  # the README's command
    cli = _verdict(proc.stdout)
    dag = run_snakemake(wd, "--allowed-rules", "audit", "--forcerun", "audit", config={"smoke": "true"},
                        check=False)
    dag_verdict = _verdict((rundir / "logs" / "audit.log").read_text())
    assert dag_verdict == cli, (dag.stderr[-3000:], proc.stdout[-2000:])
    assert (dag.returncode == 0) == (proc.returncode == 0) == (case == "untouched"), (dag.returncode, cli)
