"""Forgeries of calibration.json and of the report's calibration section on copies of the fixture's runs, each
with the manifest re-hashed (so a hash check is not what catches it): a changed coverage number, p-value,
power value, recorded simulation or calibration setting fails the check 'calibration' (the report's section:
'report'). Both runs record every simulation; the audit recounts every tally from the records and recomputes a
seeded sample of them (the smoke run's n_audit covers every simulation: all recomputed; the development run's
covers a sample, so the forgeries of records there change a whole column, whichever simulations the sample
holds)."""

from __future__ import annotations

import json
import re

import pytest
from conftest import DATA, audit_module
from run_copies import rehash_manifest, run_audit

cs = audit_module("expected.calib_stats")


def edit(rundir, fn, name="calibration.json"):
    path = rundir / name
    record = json.loads(path.read_text())
    fn(record)
    path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")


def pct_block(c, comp="blend-ce", m="percentile"):
    return c["comparisons"][comp]["coverage"][m]


def careful_coverage(c):
    """One more covering sample, the share and its Wilson interval made to agree (what a careful forger
    does)."""
    b, S = pct_block(c), c["settings"]["S"]
    b["covered"] += 1
    b["coverage"] = b["covered"] / S
    b["wilson"] = cs.wilson(b["covered"], S, c["settings"]["test_level"])


def share_only(c):
    pct_block(c)["coverage"] += 0.01


def p_value(c):
    r = c["comparisons"]["blend-rrf"]["randomization"]
    r["extreme"] += 1
    r["p"] = (1 + r["extreme"]) / (1 + r["R"])


def power_share(c):
    point = c["comparisons"]["blend-ce"]["power"][0]
    point["p_lower_above_0"] = 0.5


def recorded_power(c):
    """Every recorded power simulation's lower bound, a hair higher (no tally changes): the audit recomputes a
    freshly drawn sample of n_audit simulations of the power grid, so every one is changed, not one size's."""
    for size in c["simulations"]["power"].values():
        col = size["comparisons"]["blend-ce"]["lower"]
        col[:] = [x + 1e-9 for x in col]


def recorded_endpoints(c):
    col = c["simulations"]["coverage"]["ce-rrf"]["intervals"]["bca"]["lower"]
    col[:] = [None if x is None else x - 1e-12 for x in col]


def one_recorded_endpoint(c):
    """The last simulation's upper endpoint, a hair lower: no tally changes; only recomputing it shows it."""
    col = c["simulations"]["null"]["blend-rrf"]["intervals"]["percentile"]["upper"]
    col[-1] -= 1e-12


def a_column_too_short(c):
    c["simulations"]["coverage"]["blend-ce"]["bootstrap_t_dropped"].pop()


def setting_S(c):
    c["settings"]["S"] += 1


def t_quantile(c):
    c["simulations"]["t_quantile"] *= 1 + 1e-6


def dropped(c):
    c["comparisons"]["ce-rrf"]["bootstrap_t_dropped_replicates"]["null"] = -1


FORGERIES = {
    ("smoke", "coverage_count_and_share"): careful_coverage,
    ("dev", "coverage_count_and_share"): careful_coverage,
    ("smoke", "one_recorded_endpoint"): one_recorded_endpoint,
    ("dev", "recorded_endpoints_of_a_method"): recorded_endpoints,
    ("dev", "a_column_too_short"): a_column_too_short,
    ("dev", "coverage_share_without_its_count"): share_only,
    ("smoke", "p_value_and_its_count"): p_value,
    ("dev", "p_value_and_its_count"): p_value,
    ("smoke", "power_share"): power_share,
    ("dev", "power_share_not_a_count"): power_share,
    ("dev", "recorded_power_simulation"): recorded_power,
    ("dev", "setting_S"): setting_S,
    ("dev", "t_quantile_beyond_tolerance"): t_quantile,
    ("dev", "dropped_count_out_of_range"): dropped,
}


@pytest.mark.slow
@pytest.mark.parametrize("which,name", sorted(FORGERIES), ids=lambda x: str(x))
def test_a_forged_calibration_fails_the_calibration_check(copy_of, which, name):
    rundir = copy_of(which)
    edit(rundir, FORGERIES[(which, name)])
    rehash_manifest(rundir)
    proc, result = run_audit(rundir, copy_of.lockdir)
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "calibration" in result["failed_checks"] and "manifest_hashes" not in result["failed_checks"], \
        result["failed_checks"]
    first = result["checks"]["calibration"]["first_failures"][0]
    assert first["file"].endswith("calibration.json") and first["item"] and "expected" in first


@pytest.mark.slow
def test_a_changed_calibration_setting_in_the_manifest_fails_the_settings_check(copy_of):
    rundir = copy_of("dev")
    edit(rundir, lambda m: m["settings"]["calibration"].update(seed=7), "manifest.json")
    proc, result = run_audit(rundir, copy_of.lockdir)
    assert proc.returncode == 1 and "settings" in result["failed_checks"], result["failed_checks"]


@pytest.mark.slow
def test_a_run_calibrated_with_another_seed_than_its_anchor_fails(copy_of, tmp_path):
    """The anchor says seed 7 (a config file given to the audit): the run's seed-110 calibration is not it."""
    import subprocess
    import sys

    from conftest import AUDIT

    rundir = copy_of("dev")
    extra = tmp_path / "seed.yaml"
    extra.write_text("calibration:\n  seed: 7\n")
    out = tmp_path / "audit.json"
    proc = subprocess.run([sys.executable, "-I", "-S", "-B", str(AUDIT), str(rundir),
                           "--lockdir", str(copy_of.lockdir),
                           "--configfile", str(DATA / "fixture_config.yaml"), "--configfile", str(extra),
                           "--out", str(out)], capture_output=True, text=True)
    failed = json.loads(out.read_text())["failed_checks"]
    assert proc.returncode == 1 and {"settings", "calibration"} <= set(failed), failed


def report_edit(rundir, old_start: str, fn):
    text = (rundir / "report.md").read_text(encoding="utf-8")
    line = next(l for l in text.split("\n") if l.startswith(old_start))
    new = fn(line)
    assert new != line
    (rundir / "report.md").write_text(text.replace(line, new, 1), encoding="utf-8")


REPORT_EDITS = {
    "coverage_shown": ("| percentile (preregistered) |", lambda l: l.replace(" % [", "1 % [", 1)),
    "reading_verdict": ("Reading: ", lambda l: l.replace(l.split(": ")[2].split(";")[0],
                                                          "as nominal here, within Monte-Carlo error", 1)
                        if "too narrow" in l or "wider" in l else l.replace(l.split(": ")[2].split(";")[0],
                                                                           "too narrow here", 1)),
    "p_value_shown": ("Grouped sign-flip", lambda l: l.replace("blend-ce p = ", "blend-ce p = 0.0", 1)),
    "power_shown": ("Power of a confirmation",
                    lambda l: re.sub(r"\((\d+) groups", lambda m: f"({int(m.group(1)) + 1} groups", l,
                                     count=1)),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REPORT_EDITS))
def test_a_changed_calibration_line_of_the_report_fails_the_report_check(copy_of, name):
    rundir = copy_of("dev")
    report_edit(rundir, *REPORT_EDITS[name])
    rehash_manifest(rundir)
    proc, result = run_audit(rundir, copy_of.lockdir)
    assert proc.returncode == 1 and result["failed_checks"] == ["report"], result["failed_checks"]
