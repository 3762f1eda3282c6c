"""Sealing: no development rule can reach the confirmation qrels (structural, tested on the DAG; in
development mode, also next to a frozen protocol and its openings, no rule that reads them exists)."""

import re

import pytest
from conftest import ROOT, make_lockdir, run_snakemake

pytestmark = pytest.mark.slow  # runs snakemake


def test_development_dag_never_reads_the_confirmation_qrels(tmp_path):
    make_lockdir(tmp_path / "lockfiles")
    for smoke in ("false", "true"):
        proc = run_snakemake(tmp_path, "--detailed-summary", "--forceall", config={"smoke": smoke})
        files = proc.stdout
        assert "pairs.tsv" in files and "candidates.tsv" in files  # the summary lists the whole DAG
        assert "test.tsv" not in files and "sealed" not in files


def test_only_the_confirmation_code_names_the_sealed_file():
    # the audit (scripts/audit/, every module scanned) and the seal need no file name: both find the sealed
    # file by its pinned role (qrels_confirm)
    allowed = {"scripts/confirm.py", "workflow/rules/confirm.smk"}
    offenders = []
    for path in list((ROOT / "scripts").rglob("*.py")) + list((ROOT / "workflow").rglob("*.py")) + \
            list((ROOT / "workflow").rglob("*.smk")) + [ROOT / "Snakefile"]:
        rel = str(path.relative_to(ROOT))
        if rel in allowed:
            continue
        # the sealed file is found by its pinned role, never by name
        if re.search(r"test\.tsv", path.read_text()):
            offenders.append(rel)
    assert offenders == [], f"development code mentions the sealed confirmation qrels: {offenders}"


def test_development_mode_has_no_rule_that_reads_the_sealed_qrels(frozen):
    wd, _ = frozen
    proc = run_snakemake(wd, "--list-rules", check=False)
    assert "fetch_sealed_qrels" not in proc.stdout and "run_inputs" in proc.stdout
