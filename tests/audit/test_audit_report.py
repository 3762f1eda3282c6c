"""The audit's report check on copies of the fixture's runs: every number, verdict and label of report.md
equals the audit's recomputation. Honest runs pass, and so does a report whose sentences are reworded; every
edit of a number or verdict - with the manifest re-hashed, so a hash check cannot be what catches it - fails
the 'report' check and only it, naming the line; the STAND-IN banner is required exactly when the scorer is
the stand-in."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import AUDIT, DATA, audit_module
from seal_world import sealed_run

FIXTURE_CONFIG = DATA / "fixture_config.yaml"


# ---------------------------------------------------------------------------- harness --
@pytest.fixture
def copy_run(tmp_path, smoke_run, dev_run, fixture_workdir):
    def make(which="dev"):
        """A copy of the run folder in a copy of its work folder (inputs and lock folder linked)."""
        src = smoke_run if which == "smoke" else dev_run
        base = tmp_path / which
        (base / "results").mkdir(parents=True)
        for sub in ("resources", "lockfiles"):
            (base / sub).symlink_to(fixture_workdir / sub)
        dst = base / "results" / src.name
        shutil.copytree(src, dst)
        return dst
    make.lockdir = fixture_workdir / "lockfiles"
    return make


def run_audit(rundir: Path, lockdir: Path, *extra: str):
    out = rundir.parent / f"{rundir.name}-audit.json"
    proc = subprocess.run([sys.executable, "-I", "-S", "-B", str(AUDIT), str(rundir), "--lockdir",
                           str(lockdir), "--configfile", str(FIXTURE_CONFIG), "--out", str(out), *extra],
                          capture_output=True, text=True)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc, json.loads(out.read_text())


def rehash_manifest(rundir: Path):
    """What a careless editor does: make the manifest agree with the edited files."""
    m = json.loads((rundir / "manifest.json").read_text())
    for a in m["artefacts"]:
        p = Path(a["path"]) if Path(a["path"]).is_absolute() else rundir / a["path"]
        if a["scope"] == "run":
            a["sha256"] = hashlib.sha256(p.read_bytes()).hexdigest()
    (rundir / "manifest.json").write_text(json.dumps(m, indent=2, sort_keys=True) + "\n")


def edit_report(rundir: Path, fn):
    p = rundir / "report.md"
    before = p.read_text(encoding="utf-8")
    after = fn(before)
    assert after != before, "the corruption changed nothing"
    p.write_text(after, encoding="utf-8")


def line_of(text: str, start: str) -> str:
    return next(line for line in text.split("\n") if line.startswith(start))


def set_cell(text: str, start: str, index: int, value: str) -> str:
    """Cell ``index`` of the table row starting with ``start`` set to ``value``."""
    line = line_of(text, start)
    cells = line.split(" | ")
    assert cells[index] != value
    cells[index] = value
    return text.replace(line, " | ".join(cells), 1)


def failures(result) -> list[dict]:
    return result["checks"]["report"]["first_failures"]


# ------------------------------------------------------------------ honest runs pass --
@pytest.mark.parametrize("which", ["smoke", "dev"])
def test_honest_run_passes_every_number_checked(copy_run, which):
    rundir = copy_run(which)
    proc, result = run_audit(rundir, copy_run.lockdir)
    assert proc.returncode == 0 and result["ok"], proc.stdout
    assert result["checks"]["report"]["failures"] == 0
    assert result["checks"]["report"]["checked"] > 60  # every table row and numeric line


def c_reworded(t):
    """Sentences and headings reworded, every number and verdict kept."""
    t = t.replace("These queries were used to develop the method", "These queries developed the method", 1)
    t = t.replace("## What the blend repairs and what it costs", "## Repairs and costs of the blend", 1)
    return t.replace("Only discordant queries inform the test.", "Only discordant queries count.", 1)


def test_a_reworded_report_passes(copy_run):
    rundir = copy_run("dev")
    edit_report(rundir, c_reworded)
    rehash_manifest(rundir)
    proc, result = run_audit(rundir, copy_run.lockdir)
    assert proc.returncode == 0 and failures(result) == [], failures(result)


# ------------------------------------------------------------- corruptions of report.md --
def c_primary_moved(t):
    t = t.replace("| blend-ce (primary) |", "| blend-ce |", 1)
    return t.replace("| blend-rrf |", "| blend-rrf (primary) |", 1)


def c_grouped_covers_0(t):
    return set_cell(t, "| blend-ce (primary) |", 4, "yes")


def c_non_ndcg_mean(t):
    return set_cell(t, "| ce | ", 4, "0.999999")  # mean mrr@10


def c_headline_verdict(t):
    return t.replace("the mean reaches the practical threshold", "the mean does not reach the "
                     "practical threshold", 1)


def c_headline_mean(t):
    mean = re.search(r"mean Δ = (-?\d+\.\d{6});", t).group(1)
    return t.replace(f"mean Δ = {mean};", "mean Δ = 0.012345;", 1)


def c_histogram(t):
    line = line_of(t, "| 1 | ")
    return t.replace(line, "| 1 | 7 |", 1)


def c_worst_queries(t):
    head = "| qid | Δ |"
    row = t.split(head, 1)[1].split("\n")[4]  # the third worst query: its first relevant rank (ce) one lower
    cells = row.split(" | ")
    return t.replace(row, " | ".join(cells[:-1] + [f"{int(cells[-1].rstrip(' |')) + 1} |"]), 1)


def c_repair_counts(t):
    return re.sub(r"repaired by the blend \(blend > CE\): (\d+)\.",
                  lambda m: f"repaired by the blend (blend > CE): {int(m.group(1)) - 1}.", t, count=1)


def c_guardrail_verdict(t):
    return t.replace("→ **FAIL**", "→ **PASS**", 1)


def c_mde(t):
    line = line_of(t, "Minimum detectable primary Δ")
    mde = re.search(r"\*\*(\d+\.\d{6})\*\*", line).group(1)
    return t.replace(line, line.replace(f"**{mde}**", "**0.010000**"), 1)


def c_banner_removed(t):
    start = t.index("> **STAND-IN SCORER.**")
    end = t.index("Queries analysed:")
    return t[:start] + t[end:]


def c_measurement(t):
    line = line_of(t, "| model-inference seconds |")
    return t.replace(line, "| model-inference seconds | 1.5 |", 1)


def c_table_hash(t):
    line = line_of(t, "| per_query.tsv sha256 |")
    return t.replace(line, "| per_query.tsv sha256 | `" + "0" * 64 + "` |", 1)


CORRUPTIONS = {"primary_moved": c_primary_moved, "grouped_covers_0_flipped": c_grouped_covers_0,
               "non_ndcg_mean": c_non_ndcg_mean, "headline_verdict": c_headline_verdict,
               "headline_mean": c_headline_mean, "group_size_histogram": c_histogram,
               "worst_queries": c_worst_queries, "repair_counts": c_repair_counts,
               "guardrail_verdict": c_guardrail_verdict, "mde": c_mde,
               "standin_banner_removed": c_banner_removed, "measurement_changed": c_measurement,
               "table_hash": c_table_hash}


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_report_corruption_fails_the_report_check(copy_run, name):
    rundir = copy_run("dev")
    edit_report(rundir, CORRUPTIONS[name])
    rehash_manifest(rundir)
    proc, result = run_audit(rundir, copy_run.lockdir)
    assert proc.returncode == 1 and result["failed_checks"] == ["report"], (result["failed_checks"],
                                                                            proc.stdout)
    assert all(f["item"].startswith("line ") or "STAND-IN banner" in f["item"]
               for f in failures(result)), failures(result)
    assert "[report]" in proc.stdout


def test_a_failure_names_the_line_the_expected_and_the_found_text(copy_run):
    rundir = copy_run("dev")
    edit_report(rundir, c_guardrail_verdict)
    rehash_manifest(rundir)
    _, result = run_audit(rundir, copy_run.lockdir)
    (fail,) = failures(result)
    number = next(i for i, line in enumerate((rundir / "report.md").read_text().split("\n"), start=1)
                  if line.startswith("- **GUARDRAIL**"))
    assert fail["item"] == f"line {number}"
    assert "**FAIL**" in fail["expected"] and "**PASS**" in fail["found"]


# ------------------------------------------------------------------- the STAND-IN banner --
def forge_pinned(rundir: Path, lockdir: Path, keep_banner: bool):
    """A stand-in run re-labelled as a pinned-model run, consistently: manifest (scorer, identity, weights),
    summary.json's scorer, every pair's model label, and report.md's scorer rows and table hashes - with or
    without the STAND-IN banner."""
    ce = json.loads((lockdir / "model_pins.json").read_text())["cross_encoder"]
    identity, weights = f"{ce['repo']}@{ce['revision']}", ce["files"][ce["weights"]]["sha256"]
    m = json.loads((rundir / "manifest.json").read_text())
    old_identity, old_weights = m["model_identity"], m["model_weights_sha256"]
    m.update(scorer="pinned", model_identity=identity, model_weights_sha256=weights)
    (rundir / "manifest.json").write_text(json.dumps(m, indent=2, sort_keys=True) + "\n")
    s = json.loads((rundir / "summary.json").read_text())
    s["scorer"] = "pinned"
    (rundir / "summary.json").write_text(json.dumps(s, sort_keys=True, indent=2, ensure_ascii=True) + "\n")
    pairs = rundir / "pairs.tsv"
    pairs.write_text(pairs.read_text().replace(f"{old_identity} weights-sha256:{old_weights}",
                                               f"{identity} weights-sha256:{weights}"))
    text = (rundir / "report.md").read_text()
    text = text.replace(f"| scorer | `{old_identity} (STAND-IN)` |", f"| scorer | `{identity}` |")
    text = text.replace(f"| scorer weights sha256 | `{old_weights}` |", "| scorer weights sha256 | "
                        f"`{weights}` |")
    for name in ("pairs.tsv", "per_query.tsv", "summary.json"):
        sha = hashlib.sha256((rundir / name).read_bytes()).hexdigest()
        text = re.sub(rf"\| {re.escape(name)} sha256 \| `[0-9a-f]+` \|", f"| {name} sha256 | `{sha}` |", text)
    if not keep_banner:
        text = c_banner_removed(text)
    (rundir / "report.md").write_text(text)
    rehash_manifest(rundir)


@pytest.mark.parametrize("keep_banner", [False, True])
def test_the_banner_is_required_exactly_when_the_scorer_is_the_standin(copy_run, keep_banner):
    rundir = copy_run("smoke")
    forge_pinned(rundir, copy_run.lockdir, keep_banner)
    _, result = run_audit(rundir, copy_run.lockdir)
    report = failures(result)
    if not keep_banner:  # the forgery is consistent as far as the report goes (other checks see the scores)
        assert report == [], report
        return
    assert "report" in result["failed_checks"]
    (fail,) = report
    assert fail["item"].startswith("the STAND-IN banner") and fail["found"] == "present", report


# ------------------------------------------------------------------ a confirmation opening --
@pytest.fixture(scope="module")
def opening(openings) -> Path:
    """Opening 2 of the frozen fixture protocol (the session's openings world, tests/seal_world.py
    ``build_openings``: opening 1 was a look that never completed, 3 a re-opening), read only."""
    wd, sha, _ = openings
    return Path(wd) / sealed_run(sha, 2)


def copy_opening(opening: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the opening's run folder with a copy of its lock folder (resources linked)."""
    wd = opening.parents[1]
    (tmp_path / "results").mkdir()
    shutil.copytree(wd / "lockfiles", tmp_path / "lockfiles")
    (tmp_path / "resources").symlink_to(wd / "resources")
    dst = tmp_path / "results" / opening.name
    shutil.copytree(opening, dst)
    return dst, tmp_path / "lockfiles"


def test_an_openings_report_passes(opening, tmp_path):
    rundir, lockdir = copy_opening(opening, tmp_path)
    _, result = run_audit(rundir, lockdir)
    assert "report" not in result["failed_checks"] and failures(result) == [], failures(result)
    assert result["checks"]["report"]["checked"] > 60


def c_decision_flipped(t):
    return re.sub(r"is \*\*(REACHED|NOT REACHED)\*\* \((supports|does not support)",
                  lambda m: ("is **NOT REACHED** (does not support" if m.group(1) == "REACHED"
                             else "is **REACHED** (supports"), t, count=1)


def c_retriever_ndcg(t):
    line = line_of(t, "| BM25 (bm25s) top-100 |")
    return t.replace(line, set_cell(line, "| BM25", 1, "0.999999"), 1)


def c_opening_number(t):
    return t.replace("— opening 2 of protocol", "— opening 3 of protocol", 1)


def c_ledger_entry(t):
    line = next(x for x in t.split("\n") if x.startswith('{"code_commit"'))
    entry = json.loads(line)
    entry["time"] = "2020-01-01T00:00:00+00:00"
    return t.replace(line, json.dumps(entry, sort_keys=True, ensure_ascii=True), 1)


@pytest.mark.parametrize("corrupt", [c_decision_flipped, c_retriever_ndcg, c_opening_number, c_ledger_entry],
                         ids=lambda f: f.__name__)
def test_an_openings_report_corruption_fails_the_report_check(opening, tmp_path, corrupt):
    rundir, lockdir = copy_opening(opening, tmp_path)
    edit_report(rundir, corrupt)
    rehash_manifest(rundir)
    _, result = run_audit(rundir, lockdir)
    assert "report" in result["failed_checks"]
    assert failures(result) and all(f["item"].startswith("line ") for f in failures(result)), failures(result)


def test_an_openings_report_is_anchored_to_its_protocol_not_a_repinned_lock_folder(opening, tmp_path):
    """Re-pinning the candidates after the opening changes the lock folder, not what the opening's report must
    show (the protocol check fails; the report check does not)."""
    rundir, lockdir = copy_opening(opening, tmp_path)
    pins = json.loads((lockdir / "derived_pins.json").read_text())
    pins["candidates"]["sha256"] = "0" * 64
    (lockdir / "derived_pins.json").write_text(json.dumps(pins, indent=2))
    _, result = run_audit(rundir, lockdir)
    assert "report" not in result["failed_checks"], failures(result)


def test_an_opening_is_audited_with_every_batch_reinferred(opening, tmp_path):
    """An opening's own verification re-infers the protocol's sample only, so the audit proves the other
    logits: a logit forged by one float32 ULP outside that sample (pairs.tsv, rankings.tsv, the shard file,
    the manifest rehashed) fails check 'reinfer' without --reinfer, with --reinfer 2, and - caught - with
    --reinfer all."""
    from forged_runs import forge_logit, model_dir, read_rows, write_rows
    from test_audit_reinfer import one_ulp_up

    rundir, lockdir = copy_opening(opening, tmp_path)
    sample = {tuple(x) for x in json.loads((rundir / "verification.json").read_text())["sample"]}
    rows = [r for r in audit_module("read.run_files").RunFiles(rundir, lockdir).pair_rows]
    row = next(r for r in rows if (r["qid"], int(r["batch"])) not in sample)
    forged = one_ulp_up(row["logit"])
    forge_logit(rundir, row["qid"], row["doc_id"], forged)
    for shard in (rundir / "shards").rglob("*.tsv"):
        kept = read_rows(shard)
        for r in kept:
            r["logit"] = forged if (r["qid"], r["doc_id"]) == (row["qid"], row["doc_id"]) else r["logit"]
        write_rows(shard, kept)
    rehash_manifest(rundir)
    stage = ("--model-dir", str(model_dir(tmp_path)), "--reinfer-python", sys.executable)
    for asked in ((), ("--reinfer", "2", *stage)):
        _, result = run_audit(rundir, lockdir, *asked)
        (first,) = result["checks"]["reinfer"]["first_failures"]
        assert first["item"] == "--reinfer of an opening" and "verification" not in result["failed_checks"]
    _, result = run_audit(rundir, lockdir, "--reinfer", "all", *stage)
    (caught,) = result["checks"]["reinfer"]["first_failures"]
    assert caught["item"].startswith(f"qid {row['qid']} doc {row['doc_id']} ")
    assert caught["expected"] == forged
