"""report.report: the report's tables and lines of a hand-written summary.json, every expected line written
by hand (six decimals, the primary comparison marked, W/T/L, the leave-one-group-out range or NA)."""

from __future__ import annotations

from rerank_study.report import report

METHOD = {"mean": 0.5, "mean_recall@10": 0.75, "mean_mrr@10": 0.125}
SUMMARY = {"metric": "ndcg@10", "primary": "blend-ce", "threshold": 0.02,
           "bootstrap": {"percentiles": [2.5, 97.5]},
           "methods": {"blend": {**METHOD, "mean": 0.25}, "rrf": METHOD, "ce": {**METHOD, "mean": None}}}


def comparison(mean, logo):
    return {"mean": mean, "grouped_interval": [-0.1, 0.2], "query_interval": [0.0, 0.15],
            "grouped_covers_0": True, "grouped_covers_threshold": False, "query_covers_0": True,
            "query_covers_threshold": True, "wins": 3, "ties": 1, "losses": 2, "leave_one_group_out": logo}


def test_numbers_have_six_decimals_and_none_is_na():
    assert report.f6(0.1234567) == "0.123457" and report.f6(-1) == "-1.000000" and report.f6(None) == "NA"
    assert report.interval_text([0.5, None]) == "[0.500000, NA]"
    assert (report.yn(True), report.yn(False)) == ("yes", "no")


def test_the_summary_table_lists_the_methods_in_their_fixed_order():
    assert report.summary_table(SUMMARY) == [
        "| method | mean ndcg@10 | mean recall@10 | mean mrr@10 |", "|---|---|---|---|",
        "| rrf | 0.500000 | 0.750000 | 0.125000 |",
        "| ce | NA | 0.750000 | 0.125000 |",
        "| blend | 0.250000 | 0.750000 | 0.125000 |"]


def test_the_comparison_table_marks_the_primary_and_gives_wtl_and_the_influence_range():
    summary = {**SUMMARY, "comparisons": {"blend-ce": comparison(0.05, {"min": 0.01, "max": 0.09}),
                                          "ce-rrf": comparison(-0.5, None)}}
    lines = report.comparison_table(summary)
    assert lines[0].startswith("| comparison | mean Δ | grouped 2.5–97.5 % interval | query-level 2.5–97.5 % "
                               "interval | grouped covers 0 | grouped covers 0.02 |")
    assert lines[2:] == [
        "| blend-ce (primary) | 0.050000 | [-0.100000, 0.200000] | [0.000000, 0.150000] | yes | no | yes | "
        "yes | 3/1/2 | 0.010000 … 0.090000 |",
        "| ce-rrf | -0.500000 | [-0.100000, 0.200000] | [0.000000, 0.150000] | yes | no | yes | yes | "
        "3/1/2 | NA (one group) |"]


def test_an_openings_score_lines_say_where_the_scores_come_from():
    fresh = {"pairs_inferred": 300, "pairs": 300, "fresh_inference": True, "cache_entries_verified": 4}
    assert report.fresh_scores_line(fresh) == (
        "- Scores inferred fresh for this opening: 300 of 300 pairs (the score cache was not read: "
        "fresh_inference True); 4 cached batches were re-inferred and found byte-identical.")
    run = {"file": "reranker/confirm.trec", "sha256": "ab", "pairs": 60, "queries": 3}
    assert report.run_file_scores_line(run) == (
        "- Scores read from the run file `reranker/confirm.trec`, sha256 `ab`: blind-submitted and pinned in "
        "the protocol when it was frozen, before any opening (60 scores of 3 queries; nothing was inferred).")


def test_a_run_file_section_warns_of_queries_tied_whole():
    record = {"identity": "sys run:reranker/dev.trec", "sha256": "ab", "pairs": 40, "queries": 2,
              "tie_rule": "score descending, then document id", "all_tied_queries": []}
    text = report.reranker_run_section(record)
    assert text.endswith("\n- No query has one score for all its candidates.\n")
    tied = report.reranker_run_section({**record, "all_tied_queries": ["q7"]})
    assert "- **WARNING: 1 query (q7): " in tied and "WARNING: 2 queries" in \
        report.reranker_run_section({**record, "all_tied_queries": ["q7", "q8"]})
