"""The layout a newcomer can live in: rule name = script name, user tools apart from rule scripts,
`snakemake --lint` clean (each remaining lint justified), rule scripts runnable outside Snakemake."""

import hashlib
import re
import subprocess
import sys

import pytest
from conftest import ROOT, SNAKEMAKE, read_json

pytestmark = pytest.mark.slow  # runs snakemake

USER_TOOLS = {"setup_env.py", "audit", "confirm.py", "reference.py", "bench.py"}  # audit: a package folder
# imported by bench.py (its calibrate, study, synthesis, profile and plan), not tools of their own
TOOL_PARTS = {"bench_calibrate.py", "bench_study.py", "bench_synthesis.py", "bench_profile.py",
              "bench_plan.py", "bench_backends.py"}
# lint title (prefix) -> why it stays
JUSTIFIED_LINTS = {
    "Specify a conda environment or container for each rule":
        "one hash-locked environment (lockfiles/requirements.lock + torch.txt, scripts/setup_env.py) serves "
        "every rule; per-rule conda environments would be unpinned duplicates of it",
    "Param root is a prefix of input or output file but hardcoded":
        "root is the repository folder the seal reads as a whole (the registry of sealed sets across every "
        "lock folder in it); the lock folder's files sit inside it, so it prefixes them. A job needs the "
        "repository on its file system anyway: its code runs from there",
    "Environment variable PYTHONPATH used but not asserted with envvars directive":
        "the Snakefile SETS PYTHONPATH (this checkout's library first, for every rule script); it "
        "does not read it",
    "Environment variable PYTHONDONTWRITEBYTECODE used but not asserted with envvars directive":
        "the Snakefile SETS it (no job writes a byte-code cache beside the code); it does not read it",
}


def rule_scripts():
    """(rule name, script file name) of every rule with a script: directive."""
    out = []
    for smk in sorted((ROOT / "workflow/rules").glob("*.smk")):
        text = smk.read_text()
        for m in re.finditer(r"^\s*rule (\w+):(.*?)(?=^\s*rule \w+:|\Z)", text, flags=re.M | re.S):
            script = re.search(r'script:\s*\n\s*"\.\./scripts/([\w.]+)"', m.group(2))
            if script:
                out.append((m.group(1), script.group(1)))
    return out


def test_every_rule_script_is_named_as_its_rule_and_lives_in_workflow_scripts():
    pairs = rule_scripts()
    assert len(pairs) >= 20
    assert [(r, s) for r, s in pairs if s != f"{r}.py"] == []
    scripts = {p.name for p in (ROOT / "workflow/scripts").glob("*.py")}
    assert scripts == {s for _, s in pairs}, scripts ^ {s for _, s in pairs}
    assert {p.name for p in (ROOT / "scripts").iterdir()
            if p.suffix == ".py" or (p / "__main__.py").is_file()} == USER_TOOLS | TOOL_PARTS


def test_snakemake_lint_is_clean_but_for_the_justified_kinds(tmp_path):
    cmd = [str(SNAKEMAKE), "-s", str(ROOT / "Snakefile"), "--lint", "--directory", str(tmp_path),
           "--config", f"lockdir={ROOT / 'lockfiles'}", "scorer=stand-in"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    text = proc.stdout + proc.stderr
    titles = {m.group(1).strip() for m in re.finditer(r"^\s{4}\* (.+?)(?: in line \d+)?\.?:$",
                                                      text, flags=re.M)}
    assert titles, text[-2000:]  # the linter ran and reported in the format parsed here
    unjustified = [t for t in titles if not any(t.startswith(j) for j in JUSTIFIED_LINTS)]
    assert unjustified == [], text[-4000:]


def test_a_rule_script_replays_its_recorded_job_outside_snakemake(smoke_run, copy_of):
    """pypsa-eur's mock_snakemake, light: the job Snakemake ran is recorded next to its log. Replayed in a
    copy of the run (the session's run is shared): the recorded job with the run folder's path moved."""
    record = read_json(smoke_run / "logs/groups.job.json")
    assert record["rule"] == "groups" and record["input"]["names"]["qrels"] == [1, None]
    assert str(smoke_run / "groups.tsv") in record["output"]["items"]
    run = copy_of("smoke")
    job = run / "logs/groups.job.json"
    job.write_text((smoke_run / "logs/groups.job.json").read_text().replace(str(smoke_run), str(run)))
    out = run / "groups.tsv"
    want = {a["key"]: a["sha256"] for a in read_json(smoke_run / "manifest.json")["artefacts"]}["groups"]
    out.unlink()
    proc = subprocess.run([sys.executable, str(ROOT / "workflow/scripts/groups.py"), str(job)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert hashlib.sha256(out.read_bytes()).hexdigest() == want
    usage = subprocess.run([sys.executable, str(ROOT / "workflow/scripts/groups.py")], capture_output=True,
                           text=True)
    assert usage.returncode != 0 and "job.json" in usage.stderr
