"""Corruptions of a finished run that a hash check alone cannot catch, by class: the manifest deciding what is
audited (entries dropped, a path moved to an honest copy), a lock folder the run brings along, the measurement
records' scoring contract, and the columns nobody read (counts, r0, TREC scores and tags, model labels, token
counts, the verification record's fields). Each runs with the manifest stale and re-hashed; each names the
check that rejects it. (Every other column and key: test_audit_every_value.py.)"""

from __future__ import annotations

import json
import shutil

import pytest
from run_copies import read_rows, rehash_manifest, run_audit, write_rows


def _json(path, edit):
    record = json.loads(path.read_text())
    edit(record)
    path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")


def _drop_entries(d, keys):
    _json(d / "manifest.json",
          lambda m: m.update(artefacts=[a for a in m["artefacts"] if a["key"] not in keys]))


# ---- the manifest decides what is audited
def drop_figures(d):
    _drop_entries(d, {"forest_plot", "delta_plot"})


def drop_measurements(d):
    _drop_entries(d, {"scoring_measurements", "verification_measurements", "report_measurements"})
    _json(d / "measurements/scoring.json", lambda r: r.update(numerics="OFF"))


def report_moved_to_honest_copy(d):
    """The manifest points at an honest copy elsewhere in the run; report.md itself is forged."""
    (d / "extra").mkdir()
    shutil.copy(d / "report.md", d / "extra/report.md")
    mean = f"{json.loads((d / 'summary.json').read_text())['comparisons']['blend-rrf']['mean']:.6f}"
    text = (d / "report.md").read_text()
    line = next(l for l in text.splitlines() if l.startswith("| blend-rrf"))
    (d / "report.md").write_text(text.replace(line, line.replace(mean, "0.999999", 1)))

    def move(m):
        next(a for a in m["artefacts"] if a["key"] == "report")["path"] = "extra/report.md"
    _json(d / "manifest.json", move)


def own_lock_folder(d):
    """A lock folder inside the run (a copy of the real one with the split shortened by one query), named by
    the manifest: the audit's anchor is the committed (or given) folder, never the run's."""
    pins = d / ".pins"
    shutil.copytree(d / "../../lockfiles", pins, symlinks=False)
    dev = (pins / "splits/dev.txt").read_text().split()
    (pins / "splits/dev.txt").write_text("\n".join(dev[:-1]) + "\n")
    _json(d / "manifest.json", lambda m: m.update(lockdir=".pins"))


# ---- the scoring contract of the measurement records
def numerics_off(d):
    _json(d / "measurements/scoring.json", lambda r: r.update(numerics="OFF"))


def dtype_float16(d):
    _json(d / "measurements/scoring.json", lambda r: r["settings"].update(dtype="float16"))


def reinference_numerics_off(d):
    _json(d / "measurements/verification.json", lambda r: r.update(numerics="OFF"))


# ---- columns nobody read
def _edit_rows(path, edit):
    rows = read_rows(path)
    edit(rows)
    write_rows(path, rows)


def n_relevant_changed(d):
    _edit_rows(d / "per_query.tsv",
               lambda rows: rows[0].update(n_relevant=str(int(rows[0]["n_relevant"]) + 1)))


def rankings_r0_changed(d):
    _edit_rows(d / "rankings.tsv", lambda rows: rows[0].update(r0="7"))


def trec_scores_are_logits(d):
    """The CE run's scores replaced by the raw logits (same order): a tool could re-break their ties."""
    logits = {(r["qid"], r["doc_id"]): r["logit"] for r in read_rows(d / "pairs.tsv")}
    lines = [l.split() for l in (d / "runs/ce.trec").read_text().splitlines()]
    (d / "runs/ce.trec").write_text("".join(f"{q} Q0 {doc} {r} {logits[(q, doc)]} {t}\n"
                                            for q, _, doc, r, _, t in lines))


def trec_tag_changed(d):
    (d / "runs/blend.trec").write_text((d / "runs/blend.trec").read_text().replace(" blend\n", " ce\n"))


def model_label_changed_everywhere(d):
    """Every pair names another model (weights hash unchanged), the manifest kept as it is."""
    _edit_rows(d / "pairs.tsv",
               lambda rows: [r.update(model=r["model"].replace("standin-sha256:", "standin-sha256:0"))
                                              for r in rows])


def token_counts_inconsistent(d):
    """One pair's query token count changed and its total made to agree: the query's other pairs disagree."""
    def edit(rows):
        rows[0]["query_tokens"] = str(int(rows[0]["query_tokens"]) + 5)
        rows[0]["total_tokens"] = str(int(rows[0]["total_tokens"]) + 5)
    _edit_rows(d / "pairs.tsv", edit)


def total_tokens_not_the_sum(d):
    _edit_rows(d / "pairs.tsv",
               lambda rows: rows[0].update(total_tokens=str(int(rows[0]["total_tokens"]) - 1)))


def verification_seed_changed(d):
    _json(d / "verification.json", lambda v: v.update(seed=v["seed"] + 1))


def verification_queries_changed(d):
    _json(d / "verification.json", lambda v: v.update(queries=v["queries"][:-1]))


def verification_pairs_count_changed(d):
    _json(d / "verification.json", lambda v: v.update(pairs_compared=v["pairs_compared"] + 1))


def extra_column_added(d):
    """A column the layout does not document, holding whatever a reader might believe."""
    _edit_rows(d / "per_query.tsv", lambda rows: [r.update(significant="yes") for r in rows])


# ---- what the audit's readers and its allowlist of files decide
def repeated_json_key(d):
    """summary.json holding a key twice: a JSON reader keeps the last, a human may read the first."""
    text = (d / "summary.json").read_text()
    (d / "summary.json").write_text(text.replace("{", '{\n  "n_queries": 999,', 1))


def nan_in_json(d):
    _json(d / "summary.json", lambda s: s["comparisons"]["blend-rrf"].update(mean=float("nan")))


def opening_record_in_a_development_run(d):
    """A confirmation opening's record dropped into a development run: only an opening may hold one."""
    (d / "OPENING.json").write_text('{"opening": 1}\n')


def log_of_no_rule(d):
    (d / "logs/confirm_quietly.log").write_text("nothing to see\n")


def logit_not_a_number(d):
    """A value the readers cannot parse: the checks reading it fail (the audit itself does not crash)."""
    _edit_rows(d / "pairs.tsv", lambda rows: rows[0].update(logit="high"))


def report_is_a_link_to_an_honest_copy(d):
    """report.md replaced by a symbolic link to an honest copy outside the run: whoever can write that file
    changes the report after the audit."""
    outside = d.parents[2] / "outside-report.md"
    shutil.copy(d / "report.md", outside)
    (d / "report.md").unlink()
    (d / "report.md").symlink_to(outside)


def shard_row_forged(d):
    """A shard table (the raw per-shard scores) holding a logit and a model pairs.tsv does not."""
    path = sorted(d.glob("shards/score-of-*/*.tsv"))[0]
    lines = path.read_text().split("\n")
    cells = lines[1].split("\t")
    cells[3] = "9.99"
    path.write_text("\n".join([lines[0], "\t".join(cells)] + lines[2:]))


def shard_record_claims_other_numerics(d):
    path = sorted(d.glob("measurements/score-of-*/*.json"))[0]
    _json(path, lambda r: r["numerics"].update(mkl_cnr="OFF"))


def shard_record_claims_another_backend(d):
    """A shard's record says it scored with the model itself (the fixture run's settings are the scoring
    record's): every setting of a shard's record is the gathered record's."""
    path = sorted(d.glob("measurements/score-of-*/*.json"))[0]
    _json(path, lambda r: r["settings"].update(backend="onnx-int8"))


def shard_record_of_a_shard_that_does_not_exist(d):
    """A record of shard 1 of 2 beside the run's one shard: the shard files are those of ce.shards."""
    src = sorted(d.glob("measurements/score-of-*/*.json"))[0]
    (d / "measurements/score-of-2").mkdir()
    (d / "measurements/score-of-2/1.json").write_text(src.read_text())


def token_counts_of_no_batch(d):
    """The gathered record's token count is not the shard records' sum."""
    _json(d / "measurements/scoring.json", lambda r: r.update(tokens_inferred=r["tokens_inferred"] + 1))


def verification_flag_written_as_a_number(d):
    """1 for true: equal for Python's ==, but a boolean field must be a JSON boolean."""
    _json(d / "verification.json", lambda r: r.update(all_equal=1))


def empty_folder(d):
    (d / "logs" / "kept").mkdir()


def verification_pairs_reversed(d):
    _json(d / "verification.json", lambda r: r["pairs"].reverse())


def gather_timings_as_a_list(d):
    _json(d / "measurements/scoring.json", lambda r: r.update(gather=list(r["gather"].values()),
                                                              stage_seconds=[r["stage_seconds"]]))


FORGERIES = {
    "figures_dropped_from_manifest": (drop_figures, {"layout"}),
    "measurements_dropped_and_forged": (drop_measurements, {"layout", "measurements"}),
    "report_path_moved_to_honest_copy": (report_moved_to_honest_copy, {"layout", "report"}),
    "own_lock_folder_with_shorter_split": (own_lock_folder, {"layout"}),
    "scoring_numerics_off": (numerics_off, {"measurements"}),
    "scoring_dtype_float16": (dtype_float16, {"measurements"}),
    "reinference_numerics_off": (reinference_numerics_off, {"measurements"}),
    "n_relevant_changed": (n_relevant_changed, {"per_query"}),
    "rankings_r0_changed": (rankings_r0_changed, {"blend"}),
    "trec_scores_are_logits": (trec_scores_are_logits, {"runs"}),
    "trec_tag_changed": (trec_tag_changed, {"runs"}),
    "model_label_changed_everywhere": (model_label_changed_everywhere, {"scorer_label"}),
    "token_counts_inconsistent": (token_counts_inconsistent, {"pairs"}),
    "total_tokens_not_the_sum": (total_tokens_not_the_sum, {"pairs"}),
    "verification_seed_changed": (verification_seed_changed, {"verification"}),
    "verification_queries_changed": (verification_queries_changed, {"verification"}),
    "verification_pairs_count_changed": (verification_pairs_count_changed, {"verification"}),
    "undocumented_column_added": (extra_column_added, {"columns"}),
    "repeated_json_key": (repeated_json_key, {"summary"}),  # unreadable: every check reading it fails
    "nan_in_json": (nan_in_json, {"summary"}),
    "opening_record_in_a_development_run": (opening_record_in_a_development_run, {"layout"}),
    "log_of_no_rule": (log_of_no_rule, {"layout"}),
    "report_is_a_link_to_an_honest_copy": (report_is_a_link_to_an_honest_copy, {"layout"}),
    "shard_row_forged": (shard_row_forged, {"pairs"}),
    "shard_record_claims_other_numerics": (shard_record_claims_other_numerics, {"measurements"}),
    "logit_not_a_number": (logit_not_a_number, {"columns", "summary"}),  # the checks that cannot run fail
    "shard_record_claims_another_backend": (shard_record_claims_another_backend, {"measurements"}),
    "shard_record_of_a_shard_that_does_not_exist": (shard_record_of_a_shard_that_does_not_exist, {"layout"}),
    "token_counts_of_no_batch": (token_counts_of_no_batch, {"measurements"}),
    "empty_folder": (empty_folder, {"layout"}),
    "verification_flag_written_as_a_number": (verification_flag_written_as_a_number, {"verification"}),
    "verification_pairs_reversed": (verification_pairs_reversed, {"verification"}),
    "gather_timings_as_a_list": (gather_timings_as_a_list, {"columns"}),
}


# the manifest hashes the honest copy it names; the audit hashes the documented path (the forged report.md)
HASHED_ELSEWHERE = {"report_path_moved_to_honest_copy"}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FORGERIES))
@pytest.mark.parametrize("manifest_updated", [False, True], ids=["manifest-stale", "manifest-rehashed"])
def test_forgery_is_rejected(copy_of, name, manifest_updated):
    fn, expected = FORGERIES[name]
    rundir = copy_of("smoke")
    fn(rundir)
    if manifest_updated:
        rehash_manifest(rundir)
    proc, result = run_audit(rundir, copy_of.lockdir)
    assert proc.returncode == 1, proc.stdout[-3000:]
    failed = set(result["failed_checks"])
    assert expected <= failed, (failed, proc.stdout[-2000:])
    if manifest_updated and name not in HASHED_ELSEWHERE:  # the named checks catch it, not a stale hash
        assert "manifest_hashes" not in failed, failed
    for check in expected:  # every failure names file, item, expected and found
        f = result["checks"][check]["first_failures"][0]
        assert f["file"] and f["item"] and "expected" in f and "found" in f


def _crlf(path):
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))


def same_values_written_another_way(d):
    """CRLF line ends, a last line without LF, -0.0 for 0.0, 3.0 for 3: the same values (in files whose
    sha256 no other record names)."""
    _crlf(d / "rankings.tsv")
    path = d / "bootstrap/replicates.tsv"
    text = path.read_text()[:-1]
    path.write_text(text.replace("\t0.0\t", "\t-0.0\t", 1))
    _json(d / "groups.json", lambda r: r.update(n_groups=float(r["n_groups"])))
    _json(d / "manifest.json", lambda m: m["settings"].update(blend_k=float(m["settings"]["blend_k"])))


@pytest.mark.slow
def test_the_same_values_written_another_way_pass(copy_of):
    rundir = copy_of("smoke")
    same_values_written_another_way(rundir)
    rehash_manifest(rundir)
    proc, result = run_audit(rundir, copy_of.lockdir)
    assert proc.returncode == 0, proc.stdout[-3000:]
