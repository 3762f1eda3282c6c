"""Frozen means frozen: a run reads the committed candidate table (verified), never regenerates it;
regeneration is a drift check; re-freezing is explicit. On the committed fixture."""

import json
import re

import pytest
from conftest import DATA, ROOT, make_lockdir, read_json, run_snakemake

pytestmark = pytest.mark.slow  # runs snakemake

GENERATION_RULES = {"bi_encoder", "bm25", "dense", "fuse_candidates", "freeze_candidates", "freeze_splits"}


def scheduled_rules(proc) -> set[str]:
    """Rule names of the jobs a dry run lists ('rule X:' / 'localrule X:' lines)."""
    return set(re.findall(r"^(?:local)?rule (\w+):", proc.stdout, flags=re.M))


@pytest.mark.parametrize("smoke", ["false", "true"])
def test_fresh_dry_run_of_the_main_command_schedules_no_candidate_generation(tmp_path, smoke):
    """README command 1 on a fresh clone (the repository's own lockfiles, nothing made yet)."""
    proc = run_snakemake(tmp_path, "-n", config={"lockdir": str(ROOT / "lockfiles"), "smoke": smoke,
                                                  "data_mirror": str(tmp_path / "unused")}, fixture=False)
    rules = scheduled_rules(proc)
    assert {"fetch_data", "splits", "run_inputs", "score", "evaluate", "audit"} <= rules, proc.stdout[-3000:]
    assert not rules & GENERATION_RULES, rules & GENERATION_RULES


def test_check_candidates_regenerates_and_reports_no_drift_on_the_fixture(tmp_path):
    """In a work folder of its own (the fixture's pins, as a clone has them): it writes resources."""
    wd = tmp_path
    make_lockdir(wd / "lockfiles")
    proc = run_snakemake(wd, targets=("check_candidates",))
    drift = read_json(wd / "results/check_candidates/drift.json")
    rows = {r["split"]: r for r in drift["per_split"]}
    assert rows["dev"]["queries"] == 8 and rows["confirm"]["queries"] == 6 and rows["all"]["queries"] == 14
    for r in rows.values():  # ranked lists, not bytes, are compared
        assert r["identical_ranked_lists"] == r["queries"] and r["largest_rank_shift"] == 0 \
            and r["mean_overlap"] == 1.0
    assert drift["verdict"] == "IDENTICAL ranked lists" and drift["regenerated"]["settings_equal_to_frozen"]
    table = (wd / "results/check_candidates/drift.tsv").read_text().splitlines()
    assert table[0].split("\t") == ["split", "queries", "identical_ranked_lists", "same_set",
                                    "largest_rank_shift", "mean_overlap", "queries_changed"]
    # the frozen table was not touched
    assert (wd / "lockfiles/candidates/candidates.tsv").read_bytes() == \
        (DATA / "lockfiles/candidates/candidates.tsv").read_bytes()
    assert "IDENTICAL ranked lists" in proc.stderr


def test_refreezing_is_explicit_and_reproduces_the_committed_fixture_table(tmp_path):
    make_lockdir(tmp_path / "asked-without-repin" / "lockfiles")
    refused = run_snakemake(tmp_path / "asked-without-repin", config={}, check=False,
                            targets=("freeze_candidates",))
    assert refused.returncode != 0 and ("Ask for it explicitly: snakemake --config "
                                        "repin=candidates") in refused.stderr
    assert not (tmp_path / "asked-without-repin/resources/candidates").exists(), "nothing is regenerated"
    make_lockdir(tmp_path / "lockfiles", frozen=False)
    (tmp_path / "lockfiles/derived_pins.json").write_text("{}\n")
    # the re-pinning invocation: rule all = freeze_*
    run_snakemake(tmp_path, config={"repin": "splits,candidates"})
    assert not (tmp_path / "results").exists(), "a re-pinning invocation analyses nothing"
    for rel in ("splits/dev.txt", "splits/confirm.txt", "candidates/candidates.tsv", "candidates/bm25.tsv.gz",
                "candidates/dense.tsv.gz"):
        assert (tmp_path / "lockfiles" / rel).read_bytes() == (DATA / "lockfiles" / rel).read_bytes(), rel
    mine = read_json(tmp_path / "lockfiles/derived_pins.json")
    committed = read_json(DATA / "lockfiles/derived_pins.json")
    assert mine["splits"] == committed["splits"]
    assert {k: mine["candidates"][k] for k in ("sha256", "params", "n_queries", "file")} == \
        {k: committed["candidates"][k] for k in ("sha256", "params", "n_queries", "file")}


def test_a_changed_frozen_table_stops_the_run_naming_file_pin_and_fix(tmp_path):
    make_lockdir(tmp_path / "lockfiles")
    table = tmp_path / "lockfiles/candidates/candidates.tsv"
    lines = table.read_text().splitlines(keepends=True)
    lines[1], lines[2] = lines[2], lines[1]  # two candidates swapped
    table.write_text("".join(lines))
    proc = run_snakemake(tmp_path, config={"smoke": "true"}, check=False)
    pin = read_json(tmp_path / "lockfiles/derived_pins.json")["candidates"]["sha256"]
    assert proc.returncode != 0
    assert "PIN MISMATCH for the frozen candidate table" in proc.stderr and pin in proc.stderr
    assert "git checkout -- lockfiles/candidates" in proc.stderr
    assert not (tmp_path / "results/smoke-standin/pairs.tsv").exists()


def test_a_config_that_no_longer_describes_the_frozen_table_stops_the_run(tmp_path):
    make_lockdir(tmp_path / "lockfiles")
    extra = tmp_path / "k30.yaml"
    extra.write_text((DATA / "fixture_config.yaml").read_text() + "candidates:\n  rrf_k: 30\n")
    proc = run_snakemake(tmp_path, "--configfile", str(extra), config={"smoke": "true"}, check=False)
    assert proc.returncode != 0
    assert "PIN MISMATCH for candidate setting rrf_k" in proc.stderr and "repin=candidates" in proc.stderr


def test_a_missing_candidate_pin_stops_with_the_fix(tmp_path):
    make_lockdir(tmp_path / "lockfiles")
    pins = read_json(tmp_path / "lockfiles/derived_pins.json")
    del pins["candidates"]
    (tmp_path / "lockfiles/derived_pins.json").write_text(json.dumps(pins))
    proc = run_snakemake(tmp_path, config={"smoke": "true"}, check=False)
    assert proc.returncode != 0 and "NO CANDIDATE PIN" in proc.stderr and "repin=candidates" in proc.stderr


def test_the_repository_pins_the_committed_table_it_ships():
    """Guards the commit, not code: the frozen table in lockfiles/ is the one its pin names."""
    import hashlib

    pin = read_json(ROOT / "lockfiles/derived_pins.json")["candidates"]
    table = ROOT / "lockfiles" / pin["file"]
    assert hashlib.sha256(table.read_bytes()).hexdigest() == pin["sha256"]
    for r in pin["provenance"]["retrievers"].values():
        assert hashlib.sha256((ROOT / "lockfiles" / r["file"]).read_bytes()).hexdigest() == r["sha256"]
    rows = table.read_text().splitlines()
    assert rows[0] == "qid\tsplit\trank\tdoc_id\trrf_score\tbm25_rank\tdense_rank" and len(rows) == 1 + \
        400 * 50
