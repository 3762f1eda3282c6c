"""The registry of checks: every check the audit runs, by the name it is recorded under, in the order
it runs (one place; audit.json's ``checks`` and the printed table follow it). A check may record more
than one name: ``check_rankings`` records 'blend' and 'ce_ranks'; ``check_summary`` 'summary' and
'evalstats'. ``run_checks`` runs them all, each FAIL CLOSED (bookkeeping.Audit.run)."""

from __future__ import annotations

import checks_browser
import checks_calibration
import checks_columns
import checks_inputs
import checks_layout
import checks_measurements
import checks_provenance
import checks_reference
import checks_reinfer
import checks_report_and_seal
import checks_reranker_run
import checks_run_metadata
import checks_scores
import checks_statistics
import checks_tables

CHECKS = (
    ("layout", checks_layout.check_layout),
    ("columns", checks_columns.check_columns),
    ("settings", checks_provenance.check_settings),
    ("manifest", checks_provenance.check_manifest_fields),
    ("manifest_hashes", checks_provenance.check_manifest_hashes),
    ("lockfile_pins", checks_provenance.check_lockfile_pins),
    ("analysed_queries", checks_inputs.check_analysed_queries),
    ("candidates", checks_inputs.check_candidates),
    ("pairs", checks_scores.check_pairs),
    ("reranker_run", checks_reranker_run.check_reranker_run),
    ("scorer_label", checks_scores.check_scorer_label),
    ("blend", checks_scores.check_rankings),
    ("runs", checks_scores.check_runs),
    ("qrels", checks_inputs.check_qrels),
    ("per_query", checks_statistics.check_per_query),
    ("groups", checks_statistics.check_groups),
    ("bootstrap_indices", checks_statistics.check_bootstrap_indices),
    ("replicates", checks_statistics.check_replicates),
    ("summary", checks_statistics.check_summary),
    ("calibration", checks_calibration.check_calibration),
    ("verification", checks_scores.check_verification),
    ("shape_check", checks_scores.check_shape),
    ("measurements", checks_measurements.check_measurements),
    ("reference", checks_reference.check_reference),
    ("frozen_candidates", checks_inputs.check_frozen_candidates),
    ("report", checks_report_and_seal.check_report),
    ("report_browser", checks_browser.check_report_browser),
    ("tables", checks_tables.check_tables),
    ("run_metadata", checks_run_metadata.check_run_metadata),
    ("seal", checks_report_and_seal.check_seal),
    ("protocol", checks_provenance.check_protocol),
    ("reinfer", checks_reinfer.check_reinfer),  # the second stage (--reinfer N): after every other check
)


def run_checks(au, run, want) -> None:
    """Every registered check, in order, on what the run says (``run``) and what it must say (``want``); the
    second stage's child process is started first, to run beside them (``checks_reinfer.start_early``)."""
    checks_reinfer.start_early(run, want)
    for name, fn in CHECKS:
        au.run(name, fn, run, want)
