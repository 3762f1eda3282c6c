"""Check 'tables' on copies of the fixture's smoke run: the paper-ready tables pass untouched; a change in any
of the four (with the manifest rehashed to match) fails 'tables' alone, naming the file and its first
differing line."""

import pytest
from run_copies import rehash_manifest, run_audit


def first_mean_with_one_more_digit(text: str) -> str:
    lines = text.split("\n")
    cells = lines[1].split(",")
    cells[1] += "1"  # e.g. 0.5 -> 0.51: another value, still a plain number
    return "\n".join([lines[0], ",".join(cells), *lines[2:]])


EDITS = {  # file -> (what is changed, a function of the text)
    "tables/methods.csv": ("the first method's mean, one more digit", first_mean_with_one_more_digit),
    "tables/comparisons.csv": ("the primary flag", lambda t: t.replace(",true,", ",false,", 1)),
    "tables/methods.tex": ("a rounded mean", lambda t: t.replace("& 0.", "& 1.", 1)),
    "tables/comparisons.tex": ("the dagger moved off the primary", lambda t: t.replace("$^\\dagger$", "", 1)),
}


def test_the_smoke_runs_tables_pass_and_are_the_documented_files(copy_of):
    rundir = copy_of("smoke")
    proc, result = run_audit(rundir, copy_of.lockdir)
    assert proc.returncode == 0, proc.stdout
    assert (result["checks"]["tables"]["checked"], result["checks"]["tables"]["failures"]) == (4, 0)
    tex = (rundir / "tables/comparisons.tex").read_text()
    assert "\\toprule" in tex and "\\textbf{blend - ce}$^\\dagger$" in tex and "STAND-IN scorer" in tex
    # the other metrics in summary.json's (sorted) key order
    assert (rundir / "tables/methods.csv").read_text().splitlines()[0] == (
        "method,ndcg@10,capped_recall@10,capped_recall@50,mrr@10,recall@10,recall@50,n_queries")


@pytest.mark.parametrize("name", sorted(EDITS))
def test_a_changed_table_fails_the_tables_check(copy_of, name):
    rundir = copy_of("smoke")
    path = rundir / name
    before = path.read_text()
    after = EDITS[name][1](before)
    assert after != before, EDITS[name][0]
    path.write_text(after)
    rehash_manifest(rundir)
    proc, result = run_audit(rundir, copy_of.lockdir)
    assert proc.returncode == 1 and result["failed_checks"] == ["tables"], result["failed_checks"]
    assert name in proc.stdout and "first difference at line" in proc.stdout
