"""The independent audit on copies of the fixture's smoke and development runs: untouched results pass; every
corruption in the table is rejected, also when the manifest hashes were updated to match the corrupted file,
and so is every coherent forgery (caught by a check anchored outside the run); a confirmation query id in a
development artefact breaks the seal."""

import json

import pytest
from run_copies import read_rows, rehash_manifest, run_audit, write_rows


@pytest.mark.parametrize("which", ["smoke", "dev"])
def test_untouched_results_pass(copy_of, which):
    rundir = copy_of(which)
    proc, result = run_audit(rundir, copy_of.lockdir)
    assert proc.returncode == 0, proc.stdout
    # the fixture's B = 1000: 6000 values + count + columns + numbering
    assert result["ok"] and result["checks"]["replicates"]["checked"] == 6003
    assert result["checks"]["bootstrap_indices"]["checked"] == 2002  # every row reproduced from the seed


def test_unupdated_manifest_catches_any_byte_change(copy_of):
    rundir = copy_of()
    p = rundir / "summary.json"
    p.write_text(p.read_text().replace('"n_groups"', '"n_groups" ', 1))
    proc, result = run_audit(rundir, copy_of.lockdir)
    assert proc.returncode == 1 and "manifest_hashes" in result["failed_checks"]


# ------------------------------------------------------------------------- corruptions --
def c_changed_logit(d):
    rows = read_rows(d / "pairs.tsv")
    rows[3]["logit"] = repr(float(rows[3]["logit"]) + 5.0)
    write_rows(d / "pairs.tsv", rows)


def c_swap_candidates(d):
    rows = read_rows(d / "inputs/candidates.tsv")
    rows[0]["doc_id"], rows[1]["doc_id"] = rows[1]["doc_id"], rows[0]["doc_id"]
    write_rows(d / "inputs/candidates.tsv", rows)


def c_duplicate_candidate(d):
    rows = read_rows(d / "inputs/candidates.tsv")
    rows[1]["doc_id"] = rows[0]["doc_id"]
    write_rows(d / "inputs/candidates.tsv", rows)


def c_missing_pair(d):
    rows = read_rows(d / "pairs.tsv")
    write_rows(d / "pairs.tsv", rows[:7] + rows[8:])


def c_batches_in_candidate_order(d):
    """The batch column of the earlier rule (candidate order, chunks of 16), everything else unchanged."""
    rows = read_rows(d / "pairs.tsv")
    before = [r["batch"] for r in rows]
    for r in rows:
        r["batch"] = str((int(r["r0"]) - 1) // 16)
    assert [r["batch"] for r in rows] != before, "this result's batches already follow candidate order"
    write_rows(d / "pairs.tsv", rows)


def c_blend_tie_other_way(d):
    rows = read_rows(d / "rankings.tsv")
    by = {}
    for r in rows:
        by.setdefault((r["qid"], r["blend_score"]), []).append(r)
    tied = [v for v in by.values() if len(v) >= 2]
    assert tied, "this result has no exact blend tie to flip"
    a, b = tied[0][:2]
    a["blend_rank"], b["blend_rank"] = b["blend_rank"], a["blend_rank"]
    write_rows(d / "rankings.tsv", rows)
    run = (d / "runs/blend.trec").read_text().splitlines()
    ia = next(i for i, l in enumerate(run) if l.split()[0] == a["qid"] and l.split()[2] == a["doc_id"])
    ib = next(i for i, l in enumerate(run) if l.split()[0] == b["qid"] and l.split()[2] == b["doc_id"])
    pa, pb = run[ia].split(), run[ib].split()
    pa[2], pb[2] = pb[2], pa[2]
    run[ia], run[ib] = " ".join(pa), " ".join(pb)
    (d / "runs/blend.trec").write_text("\n".join(run) + "\n")


def c_query_dropped(d):
    rows = read_rows(d / "per_query.tsv")
    write_rows(d / "per_query.tsv", rows[:-1])


def c_wrong_length(d):
    rows = read_rows(d / "inputs/candidates.tsv")
    write_rows(d / "inputs/candidates.tsv", rows[:-1])


def c_query_moved_group(d):
    rows = read_rows(d / "groups.tsv")
    rows[-1]["group_id"], rows[-1]["group_index"] = rows[0]["group_id"], rows[0]["group_index"]
    write_rows(d / "groups.tsv", rows)


def c_replicate_changed(d):
    rows = read_rows(d / "bootstrap/replicates.tsv")
    rows[123]["grouped_blend-ce"] = repr(float(rows[123]["grouped_blend-ce"]) + 1e-9)
    write_rows(d / "bootstrap/replicates.tsv", rows)


def c_index_changed(d):
    rows = read_rows(d / "bootstrap/grouped_indices.tsv")
    n = len(rows[0]) - 1
    rows[77]["draw0"] = str((int(rows[77]["draw0"]) + 1) % n)
    write_rows(d / "bootstrap/grouped_indices.tsv", rows)


def c_interval_endpoint(d):
    s = json.loads((d / "summary.json").read_text())
    s["comparisons"]["blend-ce"]["grouped_interval"][0] -= 1e-6
    (d / "summary.json").write_text(json.dumps(s, indent=2, sort_keys=True) + "\n")


def c_mean_of_group_means(d):
    """Replace the ratio estimator by the mean of group means, consistently in replicates + summary."""
    pq = read_rows(d / "per_query.tsv")
    groups = read_rows(d / "groups.tsv")
    members = {}
    for g in groups:
        members.setdefault(int(g["group_index"]), []).append(g["qid"])
    assert any(len(m) > 1 for m in members.values()), "needs a group with more than one query"
    val = {r["qid"]: float(r["blend_ndcg@10"]) - float(r["ce_ndcg@10"]) for r in pq}
    gmean = {g: sum(val[q] for q in m) / len(m) for g, m in members.items()}
    idx = read_rows(d / "bootstrap/grouped_indices.tsv")
    reps = read_rows(d / "bootstrap/replicates.tsv")
    for r, row in zip(reps, idx):
        draws = [int(row[k]) for k in row if k != "replicate"]
        r["grouped_blend-ce"] = repr(sum(gmean[g] for g in draws) / len(draws))
    write_rows(d / "bootstrap/replicates.tsv", reps)


def c_metric_value(d):
    rows = read_rows(d / "per_query.tsv")
    rows[0]["rrf_ndcg@10"] = repr(float(rows[0]["rrf_ndcg@10"]) + 0.01)
    write_rows(d / "per_query.tsv", rows)


def c_report_number(d):
    s = json.loads((d / "summary.json").read_text())
    mean = f"{s['comparisons']['blend-rrf']['mean']:.6f}"
    text = (d / "report.md").read_text()
    line = next(l for l in text.splitlines() if l.startswith("| blend-rrf"))
    (d / "report.md").write_text(text.replace(line, line.replace(mean, "0.999999", 1)))


def c_confirmation_query_leaked(d, confirm_id):
    pq = read_rows(d / "per_query.tsv")
    pq[0]["qid"] = confirm_id
    write_rows(d / "per_query.tsv", pq)


def c_qrels_extra_judgement(d):
    text = (d / "inputs/qrels.tsv").read_text()
    first = text.splitlines()[1].split("\t")[0]
    (d / "inputs/qrels.tsv").write_text(text + f"{first}\t999999999\t1\n")


def c_standin_label_removed(d):
    rows = read_rows(d / "pairs.tsv")
    for r in rows:
        r["model"] = r["model"].replace("STAND-IN:", "")
    write_rows(d / "pairs.tsv", rows)


# ---- coherent forgeries: an upstream artefact changed and everything derived made consistent. Only a
# check anchored OUTSIDE the run (seed, committed config, pins, re-inference) can catch these.
def _replicates_from(d, g_idx, q_idx):
    """Recompute every replicate from per_query/groups and the given index matrices (the forger's tool)."""
    pq = read_rows(d / "per_query.tsv")
    groups = read_rows(d / "groups.tsv")
    qids = [r["qid"] for r in pq]
    members = {}
    for g in groups:
        members.setdefault(int(g["group_index"]), []).append(qids.index(g["qid"]))
    s = json.loads((d / "summary.json").read_text())
    cols = {}
    for name, c in s["comparisons"].items():
        dl = [float(r[f"{c['a']}_ndcg@10"]) - float(r[f"{c['b']}_ndcg@10"]) for r in pq]
        gsum = [sum(dl[i] for i in members[g]) for g in range(len(members))]
        cols[f"grouped_{name}"] = [sum(gsum[g] for g in row) / sum(len(members[g]) for g in row)
                                   for row in g_idx]
        cols[f"query_{name}"] = [sum(dl[i] for i in row) / len(row) for row in q_idx]
    return cols


def f_draws_from_another_seed(d):
    """Index matrices drawn with seed 7 instead of the configured 110; replicates made to agree."""
    import numpy as np
    g = len(read_rows(d / "bootstrap/grouped_indices.tsv")[0]) - 1
    n = len(read_rows(d / "bootstrap/query_indices.tsv")[0]) - 1
    rng = np.random.default_rng(7)
    gi, qi = (rng.integers(0, k, (len(read_rows(d / "bootstrap/replicates.tsv")), k)).tolist() for k in (g,n))
    for name, m in (("grouped_indices", gi), ("query_indices", qi)):
        write_rows(d / f"bootstrap/{name}.tsv",
                   [{"replicate": str(b), **{f"draw{j}": str(x) for j, x in enumerate(row)}}
                                                  for b, row in enumerate(m)])
    cols = _replicates_from(d, gi, qi)
    rows = read_rows(d / "bootstrap/replicates.tsv")
    for b, r in enumerate(rows):
        for c in cols:
            r[c] = repr(cols[c][b])
    write_rows(d / "bootstrap/replicates.tsv", rows)


def f_threshold_setting(d):
    """The run says it used threshold 0.0 (manifest and summary agree); the committed config says 0.01."""
    m = json.loads((d / "manifest.json").read_text())
    m["settings"]["threshold"] = 0.0
    (d / "manifest.json").write_text(json.dumps(m, indent=2, sort_keys=True) + "\n")
    s = json.loads((d / "summary.json").read_text())
    s["threshold"] = 0.0
    for c in s["comparisons"].values():
        c["grouped_covers_threshold"] = c["grouped_interval"][0] <= 0.0 <= c["grouped_interval"][1]
        c["query_covers_threshold"] = c["query_interval"][0] <= 0.0 <= c["query_interval"][1]
        c["mean_reaches_threshold"] = c["mean"] >= 0.0
    (d / "summary.json").write_text(json.dumps(s, indent=2, sort_keys=True) + "\n")


def f_section_removed(d):
    s = json.loads((d / "summary.json").read_text())
    del s["evalstats"]["plan"]["exploratory"]
    (d / "summary.json").write_text(json.dumps(s, indent=2, sort_keys=True) + "\n")


def f_unaudited_number_added(d):
    s = json.loads((d / "summary.json").read_text())
    s["comparisons"]["blend-ce"]["effect_size"] = 0.8
    (d / "summary.json").write_text(json.dumps(s, indent=2, sort_keys=True) + "\n")


def f_logit_nudged_without_rank_change(d):
    """One logit moved by 1e-9 (no CE rank changes), in pairs.tsv and rankings.tsv alike."""
    rows = read_rows(d / "pairs.tsv")
    new = repr(float(rows[0]["logit"]) + 1e-9)
    key = (rows[0]["qid"], rows[0]["doc_id"])
    rows[0]["logit"] = new
    write_rows(d / "pairs.tsv", rows)
    rk = read_rows(d / "rankings.tsv")
    for r in rk:
        if (r["qid"], r["doc_id"]) == key:
            r["logit"] = new
    write_rows(d / "rankings.tsv", rk)


def f_verification_sample_shrunk(d):
    v = json.loads((d / "verification.json").read_text())
    dropped = v["sample"].pop()
    v["pairs"] = [p for p in v["pairs"] if [p["qid"], p["batch"]] != dropped]
    v["pairs_compared"] = len(v["pairs"])
    (d / "verification.json").write_text(json.dumps(v, indent=2, sort_keys=True) + "\n")


def f_shape_check_edited(d):
    sc = json.loads((d / "shape_check.json").read_text())
    sc["last_hidden_state"][2] = 768
    (d / "shape_check.json").write_text(json.dumps(sc, indent=2, sort_keys=True) + "\n")


def f_query_absent_from_both_qrels(d):
    """A query that no qrels file judges is added to the analysed list ('None == None' is no agreement)."""
    (d / "inputs/queries.txt").write_text((d / "inputs/queries.txt").read_text() + "999999999\n")


def f_guardrail_verdict_flipped(d):
    s = json.loads((d / "summary.json").read_text())
    g = s["evalstats"]["plan"]["guardrails"]["blend-rrf"]
    g["pass"] = not g["pass"]
    (d / "summary.json").write_text(json.dumps(s, indent=2, sort_keys=True) + "\n")


def f_worst_query_rank_changed(d):
    s = json.loads((d / "summary.json").read_text())
    w = s["worst_primary"][0]
    w["blend_first_rel_rank"] = (w["blend_first_rel_rank"] or 0) + 1
    (d / "summary.json").write_text(json.dumps(s, indent=2, sort_keys=True) + "\n")


def f_power_mde_changed(d):
    s = json.loads((d / "summary.json").read_text())
    s["evalstats"]["power"]["mde_confirmation"] *= 0.5
    (d / "summary.json").write_text(json.dumps(s, indent=2, sort_keys=True) + "\n")


CORRUPTIONS = {
    # ranking
    "changed_logit": (c_changed_logit, "smoke", {"blend"}),
    "swapped_candidates": (c_swap_candidates, "smoke", {"candidates"}),
    "duplicated_candidate": (c_duplicate_candidate, "smoke", {"candidates"}),
    "missing_pair": (c_missing_pair, "smoke", {"pairs"}),
    "batches_in_candidate_order": (c_batches_in_candidate_order, "dev", {"pairs"}),
    "blend_tie_other_way": (c_blend_tie_other_way, "dev", {"blend"}),
    "query_dropped_from_per_query": (c_query_dropped, "smoke", {"per_query"}),
    "candidate_list_wrong_length": (c_wrong_length, "smoke", {"candidates"}),
    # statistical
    "query_moved_to_another_group": (c_query_moved_group, "dev", {"groups"}),
    "replicate_changed": (c_replicate_changed, "smoke", {"replicates"}),
    "bootstrap_index_changed": (c_index_changed, "dev", {"replicates"}),
    "interval_endpoint_changed": (c_interval_endpoint, "smoke", {"summary"}),
    "mean_of_group_means": (c_mean_of_group_means, "dev", {"replicates"}),
    # more a reviewer would try
    "per_query_metric_changed": (c_metric_value, "smoke", {"per_query"}),
    "report_number_changed": (c_report_number, "smoke", {"report"}),
    "qrels_extra_judgement": (c_qrels_extra_judgement, "smoke", {"qrels"}),
    "standin_label_removed": (c_standin_label_removed, "smoke", {"scorer_label"}),
    # coherent forgeries, each caught by a check anchored outside the run
    "draws_from_another_seed": (f_draws_from_another_seed, "smoke", {"bootstrap_indices"}),
    "threshold_setting_forged": (f_threshold_setting, "smoke", {"settings", "summary"}),
    "summary_section_removed": (f_section_removed, "smoke", {"evalstats"}),
    "unaudited_number_added": (f_unaudited_number_added, "smoke", {"summary"}),
    "logit_nudged_1e-9_no_rank_change": (f_logit_nudged_without_rank_change, "smoke", {"verification"}),
    "verification_sample_shrunk": (f_verification_sample_shrunk, "dev", {"verification"}),
    "shape_check_edited": (f_shape_check_edited, "smoke", {"shape_check"}),
    "query_absent_from_both_qrels": (f_query_absent_from_both_qrels, "smoke", {"qrels", "analysed_queries"}),
    "guardrail_verdict_flipped": (f_guardrail_verdict_flipped, "smoke", {"evalstats"}),
    "worst_query_rank_changed": (f_worst_query_rank_changed, "smoke", {"summary"}),
    "power_mde_changed": (f_power_mde_changed, "dev", {"evalstats"}),
}


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
@pytest.mark.parametrize("manifest_updated", [False, True], ids=["manifest-stale", "manifest-rehashed"])
def test_corruption_is_rejected(copy_of, name, manifest_updated):
    fn, which, expected = CORRUPTIONS[name]
    rundir = copy_of(which)
    fn(rundir)
    if manifest_updated:
        rehash_manifest(rundir)
    proc, result = run_audit(rundir, copy_of.lockdir)
    assert proc.returncode == 1, proc.stdout[-3000:]
    failed = set(result["failed_checks"])
    assert expected <= failed, (failed, proc.stdout[-2000:])
    assert ("manifest_hashes" in failed) != manifest_updated
    assert "AUDIT FAILED" in proc.stdout
    for check in expected:  # every failure names file, item, expected and found
        f = result["checks"][check]["first_failures"][0]
        assert f["file"] and f["item"] and "expected" in f and "found" in f


def test_confirmation_query_id_in_a_development_artefact_breaks_the_seal(copy_of):
    rundir = copy_of()
    confirm_id = (copy_of.lockdir / "splits/confirm.txt").read_text().split()[0]
    c_confirmation_query_leaked(rundir, confirm_id)
    rehash_manifest(rundir)
    proc, result = run_audit(rundir, copy_of.lockdir)
    assert proc.returncode == 1 and "seal" in result["failed_checks"]


def test_changed_mcnemar_count_or_slice_mean_is_rejected(copy_of):
    rundir = copy_of()
    s = json.loads((rundir / "summary.json").read_text())
    s["evalstats"]["mcnemar"]["comparisons"]["blend-ce"]["gained"] += 1
    fam = next(iter(s["evalstats"]["slices"]))
    sl = next(v for v in s["evalstats"]["slices"][fam]["slices"].values() if v["n"])
    sl["means"]["ce"] += 0.001
    (rundir / "summary.json").write_text(json.dumps(s, indent=2, sort_keys=True) + "\n")
    rehash_manifest(rundir)
    proc, result = run_audit(rundir, copy_of.lockdir)
    assert proc.returncode == 1 and "evalstats" in result["failed_checks"]
    items = {f["item"] for f in result["checks"]["evalstats"]["first_failures"]}
    assert "evalstats.mcnemar.comparisons.blend-ce.gained" in items
    assert any(i.startswith(f"evalstats.slices.{fam}.slices.") and i.endswith(".means.ce") for i in items)


SHAPE_EDITS = {
    "hidden size": lambda sc: sc["last_hidden_state"].__setitem__(2, 768),
    "qid": lambda sc: sc.__setitem__("qid", "another"),
    "a flag written as a number": lambda sc: sc.__setitem__("ok", 1),
    "padding prose": lambda sc: sc.__setitem__("padding", "EDITED: no padding was applied"),
}


@pytest.mark.parametrize("edit", [*SHAPE_EDITS, "removed"])
def test_a_shards_own_shape_check_record_is_audited(copy_of, edit):
    """Each scoring shard's measurements carry its own shape check (of its first query): an edited or missing
    record fails check 'measurements' (the shard files are not in the manifest: the audit reads them)."""
    rundir = copy_of("smoke")
    path = rundir / "measurements/score-of-1/0.json"
    rec = json.loads(path.read_text())
    if edit == "removed":
        del rec["shape_check"]
    else:
        SHAPE_EDITS[edit](rec["shape_check"])
    path.write_text(json.dumps(rec, indent=2, sort_keys=True) + "\n")
    proc, result = run_audit(rundir, copy_of.lockdir)
    assert proc.returncode == 1 and "measurements" in result["failed_checks"], proc.stdout[-2000:]
    assert any("shape_check" in f["item"] for f in result["checks"]["measurements"]["first_failures"])


@pytest.mark.parametrize("edit", ["a flag written as a number", "padding prose"])
def test_the_runs_shape_check_is_compared_whole(copy_of, edit):
    rundir = copy_of("smoke")
    sc = json.loads((rundir / "shape_check.json").read_text())
    SHAPE_EDITS[edit](sc)
    (rundir / "shape_check.json").write_text(json.dumps(sc, indent=2, sort_keys=True) + "\n")
    rehash_manifest(rundir)
    proc, result = run_audit(rundir, copy_of.lockdir)
    assert proc.returncode == 1 and "shape_check" in result["failed_checks"], proc.stdout[-2000:]


def test_a_shard_table_must_hold_the_queries_of_the_shard_assignment_in_order(copy_of):
    """The shard tables are not in the manifest: their order is anchored to the shard assignment (query i of
    the analysed order to shard i mod N), so a shard's "first query" cannot be chosen by reordering it."""
    rundir = copy_of("smoke")
    path = rundir / "shards/score-of-1/0.tsv"
    header, *rows = path.read_text().splitlines()
    last = rows[-1].split("\t")[0]
    moved = [r for r in rows if r.split("\t")[0] == last] + [r for r in rows if r.split("\t")[0] != last]
    path.write_text("\n".join([header, *moved]) + "\n")
    proc, result = run_audit(rundir, copy_of.lockdir)
    assert proc.returncode == 1 and "measurements" in result["failed_checks"], proc.stdout[-2000:]
    assert any("shard assignment" in f["item"] for f in result["checks"]["measurements"]["first_failures"])
