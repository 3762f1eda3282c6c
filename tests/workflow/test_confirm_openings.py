"""Openings of the frozen fixture's sealed judgements through the DAG (everything labelled TEST-ONLY): every
look is recorded (a 'started' ledger line before the judgements are copied), also one that targets an
intermediate file; an unfinished opening blocks freezing and re-freezing and shows in status; fresh inference
at every opening, proven equal to the cache; the report says what was opened, its hash, when, the ledger line
and the protocol; its report.html's query browser shows the sealed queries with the opened judgements (and
renders in headless Chromium); the audit of a confirmation run compares with the protocol's pins, not
re-pinned lockfiles.

``opened`` is the session's openings world (tests/conftest.py ``openings``), opened in a copy of the
``frozen`` world, which stays unopened for the freeze and guard tests."""

import csv
import hashlib
import json
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest
from browser import Browser, chromium
from conftest import DATA, FIXTURE, ROOT, read_json
from seal_world import SEALED, copy_workdir, file_hashes, sealed_run, sha256, status

from rerank_study.seal import ledger as seal_ledger
from rerank_study.seal import locations


def _sealed_run(sha, n):
    return sealed_run(sha, n)


@pytest.fixture(scope="module")
def opened(openings):
    """(work folder, protocol sha256, what the ledger, status and the refused commands said after each
    step) of the session's openings world (tests/seal_world.py ``build_openings``), read only."""
    wd, sha, seen = openings
    look = seen["after_look"]
    for key in ("freeze", "refreeze", "replay"):
        look[key] = types.SimpleNamespace(**look[key])
    return Path(wd), sha, seen


def test_a_look_at_an_intermediate_file_is_recorded_before_the_judgements_are_copied(opened):
    wd, sha, seen = opened
    look = seen["after_look"]
    started = look["ledger"][-1]
    assert [e["event"] for e in look["ledger"]] == ["frozen", "started"]
    assert (started["opening"], started["run"]) == (1, f"confirm-{sha[:12]}-test-1")
    assert started["sealed_file"] == SEALED and started["protocol_sha256"] == sha
    assert started["sealed_sha256"] == read_json(wd / "lockfiles/data_pins.json")["files"][SEALED]["sha256"]
    assert started["time"] and started["method_sha256"] and seal_ledger.FIXTURE_LABEL in started["labels"]
    run1 = wd / _sealed_run(sha, 1)
    assert (run1 / "inputs/qrels.tsv").exists() and (run1 / "groups.tsv").exists()
    assert not (run1 / "summary.json").exists() and not (run1 / "OPENING.json").exists()
    assert read_json(run1 / "OPENING_STARTED.json")["line"] == 2
    # status shows the unfinished look; it blocks freezing and re-freezing; a replayed fetch job is refused
    assert "openings recorded in any ledger: 1 (0 completed, 1 started but not completed)" in look["status"]
    assert "opening 1 of" in look["status"] and "NOT COMPLETED" in look["status"]
    for proc, what in ((look["freeze"], "REFUSED to freeze a protocol"),
                       (look["refreeze"], "REFUSED to re-freeze")):
        assert proc.returncode == 1 and what in proc.stderr and "NEVER COMPLETED" in proc.stderr, proc.stderr
    assert look["replay"].returncode != 0 and "is already started" in look["replay"].stderr
    # the next opening is number 2, never 1 again
    assert f"confirm-{sha[:12]}-test-2" in look["plan"] and f"confirm-{sha[:12]}-test-1/" not in look["plan"]


def test_opening_is_recorded_and_a_reopening_reproduces_it_from_fresh_inference(opened):
    wd, sha, seen = opened
    first, second = wd / _sealed_run(sha, 2), wd / _sealed_run(sha, 3)
    summary = read_json(first / "summary.json")
    assert summary["n_queries"] == 6 and summary["bootstrap"]["seed"] == 111
    audit = read_json(first / "audit.json")
    # against the protocol: its sha256, 6 pins (corpus, queries, sealed qrels, 2 splits, candidates), the
    # scorer and the method hash (a stand-in opening: no weights pin); its settings: anchored to it
    assert audit["ok"] is True and audit["checks"]["protocol"]["checked"] == 9
    assert audit["checks"]["settings"]["checked"] > 0
    assert read_json(first / "manifest.json")["kind"] == "confirmation"
    ledger = seal_ledger.read_ledger(wd / "lockfiles")
    assert [(e["event"], e.get("opening")) for e in ledger] == [
        ("frozen", None), ("started", 1), ("started", 2), ("completed", 2), ("started", 3), ("completed", 3)]
    done2, done3 = ledger[3], ledger[5]
    assert done2["started_line"] == 3 and done3["started_line"] == 5
    for key in ("time", "code_commit", "method_sha256", "model_identity", "data_sha256", "candidates_sha256",
                "summary_sha256", "audit_sha256"):
        assert done2[key], key
    assert "reproduces_opening" not in done2  # opening 1 never completed: nothing to reproduce
    assert done3["reproduces_opening"] == 2 and done3["reproduced_byte_identical"] is True \
        and done3["differences"] == []
    assert read_json(second / "OPENING.json")["reproduces_opening"] == 2
    # fresh inference: both openings inferred every pair; the re-opening proved every cached batch equal (a
    # measurement)
    batches = 6 * 4  # 6 confirmation queries x 50 candidates in chunks of 16
    for d, verified in ((done2, 0), (done3, batches)):  # opening 2 found no cached confirmation batch
        assert d["scoring"]["fresh_inference"] is True
        assert d["scoring"]["pairs_inferred"] == d["scoring"]["pairs"] == 300 \
            and d["scoring"]["pairs_from_cache"] == 0
        assert d["scoring"]["cache_entries_verified"] == verified
    # the first result was never overwritten
    assert file_hashes(first) == seen["first_files"]
    text = status(wd)
    assert "openings recorded in any ledger: 3 (2 completed, 1 started but not completed)" in text
    assert "reproduced byte-identical True" in text


def test_an_opening_infers_each_pair_once_plus_the_frozen_sample_of_batches(opened):
    """The fresh scoring is the measurement; rule verify_scores re-infers the protocol's seeded sample (8
    batches by the smallest sha256 of seed, query and batch: the sample rule by hand here), not every
    batch; the audit rule's own re-inference, drawn at audit time, covers every batch."""
    wd, sha, _ = opened
    run = wd / _sealed_run(sha, 2)
    protocol = read_json(wd / "lockfiles" / locations.PROTOCOL)
    assert {k: v for k, v in protocol["verification"].items() if k != "rule"} == {
        "batches": 8, "seed": 110, "every_batch": False}
    with open(run / "pairs.tsv", encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    size = {}
    for r in rows:
        size[(r["qid"], r["batch"])] = size.get((r["qid"], r["batch"]), 0) + 1
    assert len(rows) == 300 and len(size) == 6 * 4  # 6 queries x 50 candidates: chunks of 16, 16, 16, 2
    drawn = sorted(size, key=lambda qb: hashlib.sha256(f"110\t{qb[0]}\t{qb[1]}".encode()).hexdigest())[:8]
    record = read_json(run / "verification.json")
    assert [(q, str(b)) for q, b in record["sample"]] == drawn and record["k"] == 8
    measured = read_json(run / "measurements/verification.json")
    assert measured["batches"] == 8 and measured["pairs_inferred"] == sum(size[b] for b in drawn) < 300
    assert read_json(run / "measurements/scoring.json")["pairs_inferred"] == 300
    # the shape check's forward was run too (an opening never reads the shape cache)
    assert read_json(run / "measurements/score-of-1/0.json")["shape_check_from_cache"] is False
    # the proof of every batch is the audit's own re-inference (its draw: every batch of an opening)
    stage = read_json(run / "audit.json")["info"]["reinfer"]
    assert len(stage["drawn"]) == stage["batches_in_run"] == 24 and stage["pairs"] == 300


def test_report_states_what_was_opened_when_and_under_which_protocol(opened):
    wd, sha, _ = opened
    run = wd / _sealed_run(sha, 2)
    report = (run / "report.md").read_text()
    summary = read_json(run / "summary.json")
    started = seal_ledger.read_ledger(wd / "lockfiles")[2]
    pins = read_json(wd / "lockfiles/data_pins.json")
    assert "Confirmation analysis — opening 2" in report and "TEST-ONLY STAND-IN" in report
    # the sealed set's own report says what these queries are (not "used to develop the method")
    assert "These are the sealed confirmation queries, opened under the frozen protocol" in report \
        and "used to develop the method" not in report
    prim = summary["comparisons"][summary["primary"]]
    outcome = "REACHED" if prim["mean_reaches_threshold"] else "NOT REACHED"
    assert f"the practical threshold 0.01 is **{outcome}**" in report
    assert f"= **{prim['mean']:.6f}**" in report
    # what, its hash, the data URL, when, the ledger line, the protocol
    assert f"**`{SEALED}`**, sha256 `{pins['files'][SEALED]['sha256']}`" in report
    assert pins["zip"]["url"] in report
    assert f"Opened at **{started['time']}**" in report and "line 3" in report
    assert json.dumps(started, sort_keys=True, ensure_ascii=True) in report
    assert f"| protocol sha256 | `{sha}` |" in report
    assert "started and never completed: 1 (started" in report
    assert "SEALED: not an input" not in report
    assert "| sealed confirmation judgements OPENED |" in report
    # the development report still says the truth about the development run
    assert ("SEALED: not an input of any "
            "development rule") in (wd / "results/dev-standin/report.md").read_text()
    assert "0.665" in report and "0.6451" in report  # published retriever numbers, for context


def test_an_openings_report_shows_the_calibration_on_the_confirmation_data(opened):
    """The frozen protocol carries the calibration settings (the confirmation seed); the opening calibrates on
    the sealed queries with them, its report shows the section, and its audit (which recomputed it) passed."""
    import yaml

    wd, sha, _ = opened
    run = wd / _sealed_run(sha, 2)
    config = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    fixture = yaml.safe_load((DATA / "fixture_config.yaml").read_text())
    frozen = read_json(wd / "lockfiles" / locations.PROTOCOL)["calibration"]
    assert frozen["seed"] == config["calibration"]["confirm_seed"] == 111
    assert {k: frozen[k] for k in fixture["calibration"]} == fixture["calibration"]
    cal = read_json(run / "calibration.json")
    assert {k: cal["settings"][k] for k in ("seed", "S", "B_inner", "R", "S_power", "n_audit")} == \
        {k: frozen[k] for k in ("seed", "S", "B_inner", "R", "S_power", "n_audit")}
    confirm_ids = (wd / "lockfiles/splits/confirm.txt").read_text().split()
    assert cal["data"]["n_queries"] == len(confirm_ids) == read_json(run / "summary.json")["n_queries"]
    dev = read_json(wd / "results/dev-standin/calibration.json")
    assert dev["settings"]["seed"] == 110 and dev["data"]["n_queries"] != cal["data"]["n_queries"]
    report = (run / "report.md").read_text()
    assert "## How far to trust these intervals here" in report and "seed 111," in report
    audit = read_json(run / "audit.json")
    assert audit["ok"] and audit["checks"]["calibration"]["failures"] == 0

def _tsv(path):
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def test_an_openings_report_html_browses_the_sealed_queries(opened):
    """The opening's report.html holds the query browser of its own run: the sealed confirmation queries
    (none of the development split), their candidates in rankings.tsv's RRF order with the grades of the
    opened judgements (the run's inputs/qrels.tsv), the texts of the fixture's queries.jsonl; the audit's
    check of it passed."""
    wd, sha, _ = opened
    run = wd / _sealed_run(sha, 2)
    page = (run / "report.html").read_text(encoding="utf-8")
    assert "<title>Confirmation analysis — opening 2" in page and '<h2 id="query-browser">' in page
    found = re.findall(r'<script type="application/json" id="qb-data">(.*?)</script>', page, re.S)
    assert len(found) == 1
    data = json.loads(found[0])
    qids = [r["qid"] for r in _tsv(run / "per_query.tsv")]
    confirm = (wd / "lockfiles/splits/confirm.txt").read_text().split()
    dev = (wd / "lockfiles/splits/dev.txt").read_text().split()
    assert [q["qid"] for q in data["queries"]] == qids and sorted(qids) == sorted(confirm)
    assert not set(qids) & set(dev)
    grades = {(r["query-id"], r["corpus-id"]): int(r["score"]) for r in _tsv(run / "inputs/qrels.tsv")}
    lines = (FIXTURE / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    texts = {r["_id"]: r["text"] for r in map(json.loads, lines)}
    rankings = _tsv(run / "rankings.tsv")
    for q in data["queries"]:
        rows = sorted((r for r in rankings if r["qid"] == q["qid"]), key=lambda r: int(r["r0"]))
        assert [[c[0], c[1], c[2], c[5]] for c in q["ranked"]] == \
            [[r["doc_id"], int(r["r1"]), int(r["blend_rank"]), grades.get((q["qid"], r["doc_id"]))]
             for r in rows]
        t = texts[q["qid"]]
        assert q["text"] == (t if len(t) <= 200 else t[:200] + "…")
    # the sealed judgements are what the browser marks: some candidate of the opening is judged relevant
    assert any(c[5] for q in data["queries"] for c in q["ranked"])
    assert read_json(run / "audit.json")["checks"]["report_browser"]["failures"] == 0


def test_an_openings_report_html_renders_its_browser_in_chromium(opened, tmp_path):
    """The opening's page in headless Chromium: a row per sealed query; the first opened shows its three
    rankings, side by side within a 1400 px wide viewport."""
    if chromium() is None:
        pytest.skip("no Chromium to render the report in (Debian: apt-get install chromium)")
    wd, sha, _ = opened
    run = wd / _sealed_run(sha, 2)
    qids = [r["qid"] for r in _tsv(run / "per_query.tsv")]
    browser = Browser(chromium())
    try:
        browser.open((run / "report.html").as_uri() + f"#query={qids[0]}")
        browser.viewport(1400, 900)
        browser.wait_for("!document.getElementById('qb-query').hidden")
        assert browser.evaluate("[...document.querySelectorAll('#qb-table tbody tr')]"
                                ".map(r => r.dataset.qid)") == qids
        shown = browser.evaluate("[...document.querySelectorAll('#qb-query table[data-method]')].map(t => "
                                 "[t.dataset.method, t.querySelectorAll('tbody tr').length])")
        n = sum(r["qid"] == qids[0] for r in _tsv(run / "rankings.tsv"))
        assert shown == [[m, min(n, 10)] for m in ("rrf", "ce", "blend")]
        scroll, client = browser.evaluate("(() => { const r = document.querySelector('#qb-query "
                                          ".qb-rankings'); return [r.scrollWidth, r.clientWidth]; })()")
        assert scroll <= client, (scroll, client)
        print("screenshot of an opening's query:", browser.screenshot(tmp_path / "opening_query.png"))
    finally:
        browser.close()


def test_audit_of_a_confirmation_run_compares_with_the_protocol_not_repinned_lockfiles(opened, tmp_path):
    wd, sha, _ = opened
    name = _sealed_run(sha, 2).split("/")[1]
    cp = copy_workdir(wd, tmp_path / "w", results=(name,))
    run, lock = cp / "results" / name, cp / "lockfiles"
    # what repin=candidates would do: another candidate table (dev rows only changed), pinned and used
    table = (lock / "candidates/candidates.tsv").read_text().splitlines(keepends=True)
    dev_q = (lock / "splits/dev.txt").read_text().split()[0]
    i = next(k for k, line in enumerate(table) if line.startswith(f"{dev_q}\t"))
    table[i], table[i + 1] = table[i + 1], table[i]
    (lock / "candidates/candidates.tsv").write_text("".join(table))
    new = sha256(lock / "candidates/candidates.tsv")
    pins = read_json(lock / "derived_pins.json")
    pins["candidates"]["sha256"] = new
    (lock / "derived_pins.json").write_text(json.dumps(pins, indent=2))
    m = read_json(run / "manifest.json")
    next(a for a in m["artefacts"] if a["key"] == "candidates")["sha256"] = new
    (run / "manifest.json").write_text(json.dumps(m, indent=2, sort_keys=True) + "\n")
    proc = subprocess.run([sys.executable, "-I", "-S", "-B", str(ROOT / "scripts/audit"), str(run),
                           "--lockdir", str(lock), "--out", str(tmp_path / "audit.json")],
                          capture_output=True, text=True)
    result = read_json(tmp_path / "audit.json")
    # 'reinfer': an opening is audited with --reinfer all (tests/audit/test_audit_report.py)
    assert proc.returncode == 1 and result["failed_checks"] == ["protocol", "reinfer"], \
        result["failed_checks"]
    failure = result["checks"]["protocol"]["first_failures"][0]
    assert failure["item"] == "pin candidates" and failure["found"] == new
    assert failure["expected"] == read_json(wd / "lockfiles/protocol.json")["candidates"]["sha256"]
