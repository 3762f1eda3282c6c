"""Check 'measurements': the measurement records are the one part of a run no run reproduces byte for byte
(timings, memory; each declared in columns.py and checked there for its kind); what they must still say is
checked here. Scoring and re-inference ran under the scoring contract (oneMKL strict CNR, float32, the
configured batch size, length, truncation and seed), by the scorer the pairs name, with the locked library
versions, on the pairs the run holds; the counts add up; an opening inferred every pair afresh; the report's
copy of the figures equals the scoring record. Signature: see checks.provenance."""

from __future__ import annotations

import re

from anchor import backend
from anchor.anchors import REPO
from core.compare import same_value
from expected.definitions import STANDIN
from read.columns import DTYPE, NUMERICS
from read.layout import RUN_FILE
from read.readers import read_json, read_table, text_of

from checks import shard_records
from checks.scores import absent_for_a_run_file, expected_shapes, scorer_label, shard_tables

LOCKS = (REPO / "lockfiles" / "requirements.lock", REPO / "lockfiles" / "torch.txt")
RECORDED_LIBRARIES = ("tokenizers", "torch", "transformers")
REPORT_COPIES = {  # measurements/report.json key -> measurements/scoring.json key
    "torch threads (granted by the scheduler; speed only)": "threads",
    "truncated pairs (> max_length tokens)": "truncated_pairs", "model-load seconds": "model_load_seconds",
    "model-inference seconds": "inference_seconds", "scoring stage seconds": "stage_seconds",
    "pairs / second (inference)": "pairs_per_second_inference",
    "peak RSS of the scoring process (MiB)": "peak_rss_mib"}


def locked_versions() -> dict[str, str]:
    """{package: version} of the committed locks (``name==version`` lines)."""
    out = {}
    for path in LOCKS:
        for line in text_of(path).splitlines():
            m = re.match(r"([A-Za-z0-9_.-]+)==([^\s\\;]+)", line)
            if m:
                out[m.group(1).lower()] = m.group(2)
    return out


def _expect(au, f: str, rec: dict, expect: dict, where: str = "") -> None:
    for name, val in expect.items():
        au.check("measurements", same_value(rec.get(name), val), f, where + name, val, rec.get(name))


def _check_scoring(run, want, au) -> dict:
    f, rec = str(run.path("scoring_measurements")), run.measurements("scoring_measurements")
    ce, n = want.anchor.config["ce"], len(run.pair_rows)
    _expect(au, f, rec, {"kind": "stand-in" if run.scorer == STANDIN else "pinned",
                         "model": scorer_label(run, want), "numerics": NUMERICS, "pairs": n,
                         "truncated_pairs": sum(1 for r in run.pair_rows if r["truncated"] == "true")})
    _expect(au, f, rec.get("settings") or {}, {"dtype": DTYPE, "batch_size": ce["batch_size"],
                                               "seed": ce["seed"], "max_length": want.settings["max_length"],
                                               "truncation": ce["truncation"]}, "settings.")
    locked, versions = locked_versions(), rec.get("versions") or {}
    libraries = RECORDED_LIBRARIES + (backend.DERIVED_LIBRARIES if backend.backend_of(want) != backend.TORCH
                                      else ())
    au.check("measurements", sorted(versions) == sorted(libraries), f, "versions", sorted(libraries),
             sorted(versions))
    for lib in libraries:
        found = str(versions.get(lib, "")).split("+")[0]  # a local build tag (+cpu) is the same release
        au.check("measurements", found == locked.get(lib), f, f"versions.{lib}",
                 f"{locked.get(lib)} (the lock)", found)
    au.check("measurements", rec.get("pairs_inferred", 0) + rec.get("pairs_from_cache", 0) == n, f,
             "pairs_inferred + pairs_from_cache", n, [rec.get("pairs_inferred"), rec.get("pairs_from_cache")])
    au.check("measurements", isinstance(rec.get("threads"), int) and rec["threads"] >= 1, f, "threads",
             "a whole number >= 1", rec.get("threads"))
    if backend.backend_of(want) != backend.TORCH:  # the pin of the derived file: the run's weights, libraries
        backend.run_records_agree(run, au, "measurements", backend.derived_pin(want, run.manifest.get(
            "model_identity")))
    if run.kind == "confirmation":  # an opening reads no score cache: every pair inferred here
        _expect(au, f, rec, {"fresh_inference": True, "pairs_from_cache": 0, "pairs_inferred": n})
    return rec


def _check_shard_records(run, want, au, scoring: dict) -> None:
    """Each shard's measurement record (measurements/score-of-<N>/<i>.json) states the scoring contract (the
    gathered record's settings and versions, every one), its numeric mode, and counts its own shard table's
    rows; the gathered record is the sum of them (shard_records)."""
    ce, records = want.anchor.config["ce"], []
    for i, table in enumerate(shard_tables(want)):
        path = run.rundir / table.replace("shards/", "measurements/", 1).replace(".tsv", ".json")
        rec, rows = read_json(path), read_table(run.rundir / table)
        f = str(path)
        _expect(au, f, rec, {"shard": i, "shards": ce["shards"], "pairs": len(rows),
                             "queries": len({r["qid"] for r in rows}), "versions": scoring.get("versions"),
                             "settings": scoring.get("settings"),
                             "truncated_pairs": sum(1 for r in rows if r["truncated"] == "true")})
        shard_records.check_numerics(au, f, rec.get("numerics"))
        shard_records.check_counts(au, f, rec, rows, want.settings["max_length"], run.kind == "confirmation")
        shard_records.check_useful_gflop(au, f, rec, rows, want.settings["max_length"],
                                         want.anchor.lock("model_pins.json")["cross_encoder"]["architecture"])
        _check_shard_rows(run, au, str(run.rundir / table), rows, run.analysed[i::ce["shards"]])
        _check_shard_shapes(run, want, au, f, rec, rows)
        records.append(rec)
    shard_records.check_gathered(au, str(run.path("scoring_measurements")), scoring, records)


def _check_shard_rows(run, au, f: str, rows, mine) -> None:
    """A shard's table holds exactly the pairs of the queries the shard assignment gives it (the query at
    position i of the analysed order goes to shard i mod N), in pairs.tsv's order."""
    mine = set(mine)
    wanted = [(r["qid"], r["doc_id"]) for r in run.pair_rows if r["qid"] in mine]
    found = [(r.get("qid"), r.get("doc_id")) for r in rows]
    au.check("measurements", found == wanted, f, "the shard's pairs (its queries by the shard assignment, in "
             "pairs.tsv order)", f"{len(wanted)} pairs, first {wanted[:1]}", f"{len(found)} pairs, first "
             f"{found[:1]}")


def _check_shard_shapes(run, want, au, f: str, rec: dict, rows) -> None:
    """A shard's own shape check: of its first query, as the run's shape_check.json is of the run's first
    (a shard without rows checked nothing); an opening's was measured, not read from the cache."""
    shapes = rec.get("shape_check")
    if run.kind == "confirmation":
        au.check("measurements", rec.get("shape_check_from_cache") is False, f, "shape_check_from_cache",
                 "false (an opening runs the forward)", rec.get("shape_check_from_cache"))
    if not rows:
        au.check("measurements", shapes is None, f, "shape_check", None, shapes)
        return
    shapes = shapes if isinstance(shapes, dict) else {}
    want_shapes = expected_shapes(run, want, rows[0]["qid"])
    for key, val in want_shapes.items():
        au.check("measurements", same_value(shapes.get(key), val), f, f"shape_check.{key}", val,
                 shapes.get(key))
    au.check("measurements", sorted(shapes) == sorted(want_shapes), f, "shape_check keys",
             sorted(want_shapes), sorted(shapes))


def _check_verification(run, want, au) -> None:
    f, rec = str(run.path("verification_measurements")), run.measurements("verification_measurements")
    sample = {tuple(x) for x in run.verification.get("sample", [])}
    _expect(au, f, rec, {"numerics": NUMERICS, "batches": len(sample),
                         # exactly the pairs of the sampled batches
                         "pairs_inferred": sum(1 for r in run.pair_rows if (r["qid"],
                                                                            int(r["batch"])) in sample)})
    au.check("measurements", isinstance(rec.get("threads"), int) and rec["threads"] >= 1, f, "threads",
             "a whole number >= 1", rec.get("threads"))


def check_measurements(run, want, au) -> None:
    # nothing was scored: the report's benchmark figures are checked by 'report'
    if run.reranker_kind == RUN_FILE:
        return absent_for_a_run_file(run, au, "measurements", "scoring_measurements",
                                     "verification_measurements")
    scoring = _check_scoring(run, want, au)
    _check_shard_records(run, want, au, scoring)
    _check_verification(run, want, au)
    report, f = run.measurements("report_measurements"), str(run.path("report_measurements"))
    copies = {k: scoring.get(v) for k, v in REPORT_COPIES.items()}
    copies["pairs scored / inferred / from cache"] = (f"{scoring.get('pairs')} / "
                                                      f"{scoring.get('pairs_inferred')} / "
                                                      f"{scoring.get('pairs_from_cache')}")
    _expect(au, f, report, copies)
