"""Check 'run_metadata' on copies of the fixture's smoke run: the three ir_metadata sidecars pass untouched; a
changed line (with the manifest rehashed to match) fails 'run_metadata' alone, naming the file and the line:
a pinned value, a line of the machine section out of its form, a line removed, a key added."""

import pytest
import yaml
from run_copies import rehash_manifest, run_audit

EDITS = {  # what is changed -> (file, a function of the text)
    "the run file's sha256": ("runs/ce.yaml", lambda t: t.replace('  sha256: "', '  sha256: "0', 1)),
    "the CPU model unquoted": ("runs/rrf.yaml", lambda t: t.replace('      model: "', "      model: ", 1)),
    "the qrels line removed": ("runs/rrf.yaml", lambda t: "".join(
        line for line in t.splitlines(keepends=True) if not line.startswith("    qrels: "))),
    "a key added": ("runs/blend.yaml", lambda t: t + "  extra: 1\n"),
}


def test_the_smoke_runs_sidecars_pass_and_read_as_ir_metadata(copy_of):
    rundir = copy_of("smoke")
    proc, result = run_audit(rundir, copy_of.lockdir)
    assert proc.returncode == 0, proc.stdout
    check = result["checks"]["run_metadata"]
    assert (check["checked"], check["failures"]) == (3, 0)
    doc = yaml.safe_load((rundir / "runs/blend.yaml").read_text())
    assert [s["name"] for s in doc["method"]["retrieval"]] == ["rrf", "ce", "blend"]
    assert doc["data"]["test collection"]["queries analysed"] == 5
    assert doc["run"]["file"] == "runs/blend.trec"


@pytest.mark.parametrize("what", sorted(EDITS))
def test_a_changed_sidecar_fails_the_run_metadata_check(copy_of, what):
    rundir = copy_of("smoke")
    name, edit = EDITS[what]
    path = rundir / name
    before = path.read_text()
    after = edit(before)
    assert after != before, what
    path.write_text(after)
    rehash_manifest(rundir)
    proc, result = run_audit(rundir, copy_of.lockdir)
    assert proc.returncode == 1 and result["failed_checks"] == ["run_metadata"], result["failed_checks"]
    assert name in proc.stdout and "line " in proc.stdout
