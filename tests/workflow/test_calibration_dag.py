"""Rule calibrate on the fixture's DAG runs (the session's smoke and development runs): calibration.json holds
the settings the config files give (read here from the YAML files, not from the code under test), the data the
run's own tables give, counts and shares that agree, the audit's 'calibration' check ran and passed, the
report shows the section, and the rule is deterministic: a replay of its recorded job gives the same bytes,
with one thread or two, and another seed gives other bytes."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import pytest
import yaml
from conftest import DATA, ROOT, read_json

pytestmark = pytest.mark.slow

CONFIG = yaml.safe_load((ROOT / "config/config.yaml").read_text())
FIXTURE = yaml.safe_load((DATA / "fixture_config.yaml").read_text())
METHODS = ["percentile", "bca", "bootstrap_t", "cluster_t", "query_percentile"]


def rows(path):
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def expected_sizes(smoke: bool) -> dict:
    sizes = {**CONFIG["calibration"], **FIXTURE["calibration"]}
    if smoke:
        sizes.update(CONFIG["smoke_settings"]["calibration"])
    return sizes


@pytest.mark.parametrize("which", ["smoke", "dev"])
def test_calibration_json_holds_the_configured_settings_and_the_runs_data(which, smoke_run, dev_run):
    run = smoke_run if which == "smoke" else dev_run
    cal = read_json(run / "calibration.json")
    sizes = expected_sizes(which == "smoke")
    st = cal["settings"]
    for key in ("S", "B_inner", "R", "S_power", "n_audit"):
        assert st[key] == sizes[key], key
    assert st["seed"] == CONFIG["calibration"]["seed"] == 110
    assert st["power_n"] == [100, 200, 300, 400, 500, 600] and cal["confirmation_n"] == 300
    assert st["percentiles"] == [2.5, 97.5] and st["threshold"] == 0.01
    groups = rows(run / "groups.tsv")
    per_query = rows(run / "per_query.tsv")
    assert cal["data"] == {"n_queries": len(per_query), "n_groups": len({g["group_id"] for g in groups}),
                           "comparisons": ["blend-ce", "blend-rrf", "ce-rrf"]}
    assert cal["computable"] is True and cal["reason"] is None and cal["primary"] == "blend-ce"
    summary = read_json(run / "summary.json")
    for name, comp in cal["comparisons"].items():
        # θ̂ = Σ Δ / N: the analysis' mean (a sum in another order: equal within an ulp or two)
        assert comp["theta_hat"] == pytest.approx(summary["comparisons"][name]["mean"], rel=1e-14, abs=1e-15)
        for m in METHODS:
            c, t = comp["coverage"][m], comp["type_i_error"][m]
            assert c["coverage"] == c["covered"] / st["S"] and t["rate"] == t["rejections"] / st["S"]
            assert c["covered"] + c["undefined"] <= st["S"]
            assert c["wilson"][0] <= c["coverage"] <= c["wilson"][1]
        assert [p["n"] for p in comp["power"]] == st["power_n"]
        r = comp["randomization"]
        assert r["R"] == st["R"] and r["p"] == (1 + r["extreme"]) / (1 + st["R"])
    sims = cal["simulations"]  # every simulation recorded
    for stream in ("coverage", "null"):
        for name in cal["data"]["comparisons"]:
            assert len(sims[stream][name]["bootstrap_t_dropped"]) == st["S"]
            ivs = sims[stream][name]["intervals"]
            assert {len(ivs[m][end]) for m in METHODS for end in ("lower", "upper")} == {st["S"]}
    assert sorted(sims["power"], key=int) == [str(n) for n in st["power_n"]]
    assert {len(col["queries"]) for col in sims["power"].values()} == {st["S_power"]}


@pytest.mark.parametrize("which", ["smoke", "dev"])
def test_the_audit_recomputed_the_calibration_and_the_report_shows_it(which, smoke_run, dev_run):
    run = smoke_run if which == "smoke" else dev_run
    audit = read_json(run / "audit.json")
    assert audit["ok"] and audit["checks"]["calibration"]["failures"] == 0
    assert audit["checks"]["calibration"]["checked"] > 500
    cal = read_json(run / "calibration.json")
    report = (run / "report.md").read_text(encoding="utf-8")
    assert "## How far to trust these intervals here" in report
    pct = cal["comparisons"]["blend-ce"]["coverage"]["percentile"]
    shown = f"{100 * pct['coverage']:.1f} % [{100 * pct['wilson'][0]:.1f}, {100 * pct['wilson'][1]:.1f}]"
    assert f"| percentile (preregistered) | {shown} |" in report
    assert f"Reading: the percentile interval covers {shown}: " in report
    assert "![power curve](figures/power_curve.png)" in report
    assert (run / "figures/power_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    keys = {a["key"]: a for a in read_json(run / "manifest.json")["artefacts"]}
    assert keys["calibration"]["path"] == "calibration.json" and keys["calibration"]["deterministic"] is True
    assert keys["power_plot"]["path"] == "figures/power_curve.png"


def replay(run, tmp_path, name, threads=None, seed=None) -> bytes:
    """The rule's recorded job replayed outside Snakemake into another file (threads or seed changed)."""
    job = json.loads((run / "logs/calibrate.job.json").read_text())
    out = tmp_path / f"{name}.json"
    job["output"]["items"] = [str(out)]
    job["log"]["items"] = [str(tmp_path / f"{name}.log")]
    if threads is not None:
        job["threads"] = threads
    if seed is not None:
        start, _ = job["params"]["names"]["calibration"]
        job["params"]["items"][start]["seed"] = seed
    (tmp_path / f"{name}.job.json").write_text(json.dumps(job))
    proc = subprocess.run([sys.executable, str(ROOT / "workflow/scripts/calibrate.py"),
                           str(tmp_path / f"{name}.job.json")], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT / "workflow")))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out.read_bytes()


def test_same_seed_same_bytes_any_thread_count_another_seed_other_bytes(dev_run, tmp_path):
    made = (dev_run / "calibration.json").read_bytes()
    assert replay(dev_run, tmp_path, "again") == made
    assert replay(dev_run, tmp_path, "one_thread", threads=1) == made
    other = replay(dev_run, tmp_path, "seed", seed=12345)
    assert other != made and json.loads(other)["settings"]["seed"] == 12345
