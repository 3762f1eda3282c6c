"""The Snakemake DAG end to end on the real SciFact fixture (stand-in scorer): outputs, report ==
summary == independent recomputation, byte-identical reruns, the score cache, loud stops."""

import csv
import json
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
import pytrec_eval
import yaml
from conftest import DATA, ROOT, make_lockdir, read_json, run_snakemake

pytestmark = pytest.mark.slow  # runs snakemake
FIXTURE_CONFIG = yaml.safe_load((DATA / "fixture_config.yaml").read_text(encoding="utf-8"))
FIXTURE_B = FIXTURE_CONFIG["bootstrap"]["B"]
MAX_LENGTH = FIXTURE_CONFIG["ce"]["max_length"]


def tsv(path):
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def test_smoke_run_shape_and_labels(smoke_run):
    pairs = tsv(smoke_run / "pairs.tsv")
    assert len(pairs) == 50 and len({r["qid"] for r in pairs}) == 5
    assert all(r["model"].startswith("STAND-IN:") for r in pairs)
    assert [int(r["r0"]) for r in pairs[:10]] == list(range(1, 11))
    assert any(r["truncated"] == "true" for r in pairs), f"no pair over {MAX_LENGTH} tokens"
    assert all((r["truncated"] == "true") == (int(r["total_tokens"]) > MAX_LENGTH) for r in pairs)
    shapes = read_json(smoke_run / "shape_check.json")
    assert shapes["input_ids"] == [2, MAX_LENGTH] and shapes["last_hidden_state"] == [2, MAX_LENGTH, 384] \
        and shapes["logits"] == [2, 1]
    report = (smoke_run / "report.md").read_text()
    assert "STAND-IN SCORER" in report.split("\n## ")[0]
    summary = read_json(smoke_run / "summary.json")
    assert summary["scorer"] == "STAND-IN" and summary["n_queries"] == 5
    manifest = read_json(smoke_run / "manifest.json")
    roles = {a["role"] for a in manifest["artefacts"]}
    assert {"corpus", "queries", "qrels_dev", "split_dev", "split_confirm", "candidates", "pairs", "runs",
            "per_query", "groups", "bootstrap_indices", "replicates", "summary", "report"} <= roles
    assert read_json(smoke_run / "audit.json")["ok"] is True


def test_smoke_uses_the_first_five_dev_queries_and_top_ten(smoke_run, fixture_workdir):
    dev = (fixture_workdir / "resources/splits/dev.txt").read_text().split()
    assert (smoke_run / "inputs/queries.txt").read_text().split() == dev[:5]
    cands = tsv(smoke_run / "inputs/candidates.tsv")
    assert {int(r["rank"]) for r in cands} == set(range(1, 11))


def _report_numbers(report: str):
    rows = {}
    for line in report.splitlines():
        m = re.match(r"\| (blend-ce|blend-rrf|ce-rrf)( \(primary\))? \| (.*) \|$", line)
        if m:  # the first table with these rows is the comparison table
            rows.setdefault(m.group(1), [c.strip() for c in m.group(3).split("|")])
    methods = {}
    for line in report.splitlines():
        m = re.match(r"\| (rrf|ce|blend) \| ([0-9.\-]+) \|", line)
        if m:  # the first table with these rows is the methods table
            methods.setdefault(m.group(1), m.group(2))
    return rows, methods


@pytest.mark.parametrize("which", ["smoke", "dev"])
def test_report_equals_summary_equals_recomputation(which, request):
    rundir = request.getfixturevalue(f"{which}_run")
    summary = read_json(rundir / "summary.json")
    rows, methods = _report_numbers((rundir / "report.md").read_text())
    for m, v in methods.items():
        assert v == f"{summary['methods'][m]['mean']:.6f}"
    for name, c in summary["comparisons"].items():
        r = rows[name]
        assert r[0] == f"{c['mean']:.6f}"
        assert r[1] == f"[{c['grouped_interval'][0]:.6f}, {c['grouped_interval'][1]:.6f}]"
        assert r[2] == f"[{c['query_interval'][0]:.6f}, {c['query_interval'][1]:.6f}]"
        assert r[7] == f"{c['wins']}/{c['ties']}/{c['losses']}"

    # independent recomputation with numpy from per_query + groups + the saved index matrices
    pq = tsv(rundir / "per_query.tsv")
    groups = tsv(rundir / "groups.tsv")
    qids = [r["qid"] for r in pq]
    gi = np.loadtxt(rundir / "bootstrap/grouped_indices.tsv", skiprows=1, dtype=np.int64, ndmin=2)[:, 1:]
    qi = np.loadtxt(rundir / "bootstrap/query_indices.tsv", skiprows=1, dtype=np.int64, ndmin=2)[:, 1:]
    reps = tsv(rundir / "bootstrap/replicates.tsv")
    G = max(int(g["group_index"]) for g in groups) + 1
    member = np.zeros((G, len(qids)))
    for g in groups:
        member[int(g["group_index"]), qids.index(g["qid"])] = 1
    for name, c in summary["comparisons"].items():
        a, b = c["a"], c["b"]
        d = np.array([float(r[f"{a}_ndcg@10"]) - float(r[f"{b}_ndcg@10"]) for r in pq])
        # B x G: how often each group is drawn
        counts = np.stack([np.bincount(row, minlength=G) for row in gi])
        grouped = (counts @ (member @ d)) / (counts @ member.sum(axis=1))
        query = d[qi].mean(axis=1)
        saved_g = np.array([float(r[f"grouped_{name}"]) for r in reps])
        saved_q = np.array([float(r[f"query_{name}"]) for r in reps])
        assert np.allclose(saved_g, grouped, rtol=0, atol=1e-12)
        assert np.allclose(saved_q, query, rtol=0, atol=1e-12)
        assert c["mean"] == pytest.approx(d.mean(), abs=1e-12)
        assert c["grouped_interval"] == pytest.approx(list(np.percentile(saved_g, [2.5, 97.5])), abs=1e-15)
        assert c["query_interval"] == pytest.approx(list(np.percentile(saved_q, [2.5, 97.5])), abs=1e-15)
        assert (c["wins"], c["ties"], c["losses"]) == (int((d > 0).sum()), int((d == 0).sum()),
                                                       int((d < 0).sum()))
    assert summary["bootstrap"]["B"] == len(reps) == gi.shape[0] == FIXTURE_B


def test_metrics_equal_pytrec_eval_on_the_fixture_runs(dev_run):
    qrels = {}
    for r in tsv(dev_run / "inputs/qrels.tsv"):
        qrels.setdefault(r["query-id"], {})[r["corpus-id"]] = int(r["score"])
    pq = {r["qid"]: r for r in tsv(dev_run / "per_query.tsv")}
    for method in ("rrf", "ce", "blend"):
        run = {}
        for line in (dev_run / f"runs/{method}.trec").read_text().splitlines():
            q, _, d, rank, score, _ = line.split()
            run.setdefault(q, {})[d] = float(score)
        ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.10", "recall.50"}).evaluate(run)
        for q, vals in ref.items():
            assert float(pq[q][f"{method}_ndcg@10"]) == pytest.approx(vals["ndcg_cut_10"], abs=1e-12)
            assert float(pq[q][f"{method}_recall@10"]) == pytest.approx(vals["recall_10"], abs=1e-12)
            assert float(pq[q][f"{method}_recall@50"]) == pytest.approx(vals["recall_50"], abs=1e-12)


def test_groups_are_the_fixtures_documented_groups_made_from_qrels_only_before_scores(dev_run):
    """The fixture's 8 development queries 4 9 10 11 18 25 35 37 (tests/data/lockfiles/splits/dev.txt) share
    relevant documents (tests/data/scifact_fixture/qrels/train.tsv) as follows, by hand: 4 & 18 (22942787),
    10 & 11 (32587939), 35 & 37 (5152028 and 11705328); 9 and 25 share none with another dev query (25's
    document 2613775 is shared with query 6, which is not analysed). Groups ordered by first member."""
    rows = tsv(dev_run / "groups.tsv")
    got = {}
    for r in rows:
        got.setdefault(r["group_id"], []).append(r["qid"])
    assert got == {"G001": ["4", "18"], "G002": ["9"], "G003": ["10", "11"], "G004": ["25"],
                   "G005": ["35", "37"]}
    assert [int(r["group_index"]) for r in rows] == [0, 0, 1, 2, 2, 3, 4, 4]
    # before any score: the job that made them read the analysed query ids and the qrels and nothing else,
    # and the job where scores meet qrels (evaluate) took groups.tsv as an input
    groups_job = read_json(dev_run / "logs/groups.job.json")
    evaluate_job = read_json(dev_run / "logs/evaluate.job.json")
    assert sorted(groups_job["input"]["names"]) == ["qrels",
                                                    "queries"] and len(groups_job["input"]["items"]) == 2
    assert str(dev_run / "groups.tsv") in evaluate_job["input"]["items"]
    assert not any("pairs" in i or "logit" in i for i in groups_job["input"]["items"])


def test_audit_runs_without_site_packages_on_the_smoke_result(smoke_run, fixture_workdir, tmp_path):
    proc = subprocess.run([sys.executable, "-I", "-S", "-B", str(ROOT / "scripts/audit"), str(smoke_run),
                           "--lockdir", str(fixture_workdir / "lockfiles"), "--configfile",
                           str(DATA / "fixture_config.yaml"), "--out",
                           str(tmp_path / "audit-isolated.json")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "AUDIT PASSED" in proc.stdout


def test_second_run_in_four_scoring_shards_is_byte_identical_and_the_cached_rerun_does_no_inference(
        smoke_run, fixture_workdir, tmp_path):
    """A second, independent work folder (fresh caches, same pins) whose scoring is split into 4 shard jobs
    (ce.shards = 4; the smoke run has 1) gives the same bytes for pairs.tsv and every downstream
    deterministic artefact."""
    wd = tmp_path / "second"
    shutil.copytree(fixture_workdir / "lockfiles", wd / "lockfiles")
    shards = tmp_path / "shards.yaml"
    shards.write_text("ce:\n  shards: 4\n")
    four = ("--configfile", str(DATA / "fixture_config.yaml"), str(shards))
    # verifies the pinned splits and candidates, scores afresh
    run_snakemake(wd, *four, config={"smoke": "true"})
    rundir = wd / "results/smoke-standin"
    first = {a["key"]: a for a in read_json(smoke_run / "manifest.json")["artefacts"]}
    second = {a["key"]: a for a in read_json(rundir / "manifest.json")["artefacts"]}
    meas = read_json(rundir / "measurements/scoring.json")
    assert meas["pairs_inferred"] == 50 and meas["shards"] == 4
    # 5 smoke queries, round robin: 2, 1, 1, 1 queries x 10 candidates
    assert [m["pairs"] for m in meas["per_shard"]] == [20, 10, 10, 10]
    assert read_json(smoke_run / "measurements/scoring.json")["shards"] == 1
    assert set(first) == set(second)
    deterministic = [k for k, a in first.items() if a["deterministic"]]
    assert {"pairs", "rankings", "per_query", "summary"} <= set(deterministic)
    assert [k for k in deterministic if second[k]["sha256"] != first[k]["sha256"]] == []
    # cached rerun: delete the run folder, run again: every score comes from the cache
    shutil.rmtree(wd / "results")
    run_snakemake(wd, *four, config={"smoke": "true"})
    meas = read_json(wd / "results/smoke-standin/measurements/scoring.json")
    assert meas["pairs_inferred"] == 0 and meas["pairs_from_cache"] == 50 and meas["model_load_seconds"] < 5
    assert (wd / "results/smoke-standin/pairs.tsv").read_bytes() == (smoke_run / "pairs.tsv").read_bytes()


def test_pinned_scorer_unavailable_stops_before_scoring(fixture_workdir, tmp_path):
    wd = tmp_path / "pinned"
    shutil.copytree(fixture_workdir / "lockfiles", wd / "lockfiles")
    proc = run_snakemake(wd, config={"smoke": "true", "scorer": "pinned"}, check=False)
    assert proc.returncode != 0
    assert "THE PINNED CROSS-ENCODER" in proc.stderr and "scorer=stand-in" in proc.stderr
    assert not (wd / "results/smoke/pairs.tsv").exists()


def test_config_typo_stops_at_start_naming_the_key(tmp_path):
    make_lockdir(tmp_path / "lockfiles")
    proc = run_snakemake(tmp_path, "-n", config={"scorer": "standin"}, check=False)
    assert proc.returncode != 0 and "config key 'scorer'" in (proc.stdout + proc.stderr)


def test_no_committed_splits_no_silent_draw(tmp_path):
    make_lockdir(tmp_path / "lockfiles", frozen=False)
    proc = run_snakemake(tmp_path, "-n", config={}, check=False)
    assert proc.returncode != 0, proc.stdout[-2000:]
    out = proc.stdout + proc.stderr
    assert "MISSING QUERY SPLIT LIST" in out and "lockfiles/splits/dev.txt" in out and "repin=splits" in out
    assert not (tmp_path / "lockfiles/splits").exists()


def test_split_lists_without_their_pin_stop_the_run(tmp_path):
    make_lockdir(tmp_path / "lockfiles")
    pins = read_json(tmp_path / "lockfiles/derived_pins.json")
    del pins["splits"]
    (tmp_path / "lockfiles/derived_pins.json").write_text(json.dumps(pins))
    proc = run_snakemake(tmp_path, config={}, check=False,
                         targets=(str(tmp_path / "resources/splits/dev.txt"),))
    assert proc.returncode != 0 and "NO SPLIT PIN" in proc.stderr and "repin=splits" in proc.stderr


