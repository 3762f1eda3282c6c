"""The registry of checks: every check the audit runs, by the name it is recorded under, in the order
it runs (one place; audit.json's ``checks`` and the printed table follow it). A check may record more
than one name: ``check_rankings`` records 'blend' and 'ce_ranks'; ``check_summary`` 'summary' and
'evalstats'. ``run_checks`` runs them all, each FAIL CLOSED (bookkeeping.Audit.run)."""

from __future__ import annotations

from reinfer import stage

from checks import (
    browser,
    calibration,
    columns,
    inputs,
    layout,
    measurements,
    provenance,
    reference,
    report_and_seal,
    reranker_run,
    run_metadata,
    scores,
    statistics,
    tables,
)

CHECKS = (
    ("layout", layout.check_layout),
    ("columns", columns.check_columns),
    ("settings", provenance.check_settings),
    ("manifest", provenance.check_manifest_fields),
    ("manifest_hashes", provenance.check_manifest_hashes),
    ("lockfile_pins", provenance.check_lockfile_pins),
    ("analysed_queries", inputs.check_analysed_queries),
    ("candidates", inputs.check_candidates),
    ("pairs", scores.check_pairs),
    ("reranker_run", reranker_run.check_reranker_run),
    ("scorer_label", scores.check_scorer_label),
    ("blend", scores.check_rankings),
    ("runs", scores.check_runs),
    ("qrels", inputs.check_qrels),
    ("per_query", statistics.check_per_query),
    ("groups", statistics.check_groups),
    ("bootstrap_indices", statistics.check_bootstrap_indices),
    ("replicates", statistics.check_replicates),
    ("summary", statistics.check_summary),
    ("calibration", calibration.check_calibration),
    ("verification", scores.check_verification),
    ("shape_check", scores.check_shape),
    ("measurements", measurements.check_measurements),
    ("reference", reference.check_reference),
    ("frozen_candidates", inputs.check_frozen_candidates),
    ("report", report_and_seal.check_report),
    ("report_browser", browser.check_report_browser),
    ("tables", tables.check_tables),
    ("run_metadata", run_metadata.check_run_metadata),
    ("seal", report_and_seal.check_seal),
    ("protocol", provenance.check_protocol),
    ("reinfer", stage.check_reinfer),  # the second stage (--reinfer N): after every other check
)


def run_checks(au, run, want) -> None:
    """Every registered check, in order, on what the run says (``run``) and what it must say (``want``); the
    second stage's child process is started first, to run beside them (``stage.start_early``)."""
    stage.start_early(run, want)
    for name, fn in CHECKS:
        au.run(name, fn, run, want)
