"""The frozen candidate table: fusion from ranks (hand-computed), drift between ranked lists,
the committed gzip ranked lists; a user's own TREC run as candidates (trec_eval's order and depth).
Expected values are computed by hand in each test."""

import gzip

import pytest

from rerank_study.core.errors import MalformedInputError, PipelineError
from rerank_study.rankings import candidates


def test_fuse_scores_are_rrf_of_ranks_in_retriever_order_with_empty_cells_for_absent_documents():
    bm25 = {"q": ["a", "b", "c"]}
    dense = {"q": ["c", "a", "d"]}
    rows = candidates.fuse(bm25, dense, ["q"], {"q": "dev"}, k=60, depth=3)
    # a: 1/61 (bm25 1) + 1/62 (dense 2); c: 1/63 (bm25 3) + 1/61 (dense 1); b: 1/62 only; d: 1/63 only
    assert rows == [
        ("q", "dev", 1, "a", 0.0 + 1 / 61 + 1 / 62, 1, 2),
        ("q", "dev", 2, "c", 0.0 + 1 / 63 + 1 / 61, 3, 1),
        ("q", "dev", 3, "b", 0.0 + 1 / 62, 2, None),
    ]


def test_fuse_breaks_an_exact_tie_by_document_id_string_descending():
    # x: 1/61 + 1/62, y: 1/62 + 1/61: the same float64 value; "y" > "x" as strings, so y comes first
    rows = candidates.fuse({"q": ["x", "y"]}, {"q": ["y", "x"]}, ["q"], {"q": "confirm"}, k=60, depth=2)
    assert rows[0][4] == rows[1][4]
    assert [r[3] for r in rows] == ["y", "x"]
    # ... and "10" < "9" as strings (not as numbers)
    rows = candidates.fuse({"q": ["9", "10"]}, {"q": ["10", "9"]}, ["q"], {"q": "dev"}, k=60, depth=2)
    assert [r[3] for r in rows] == ["9", "10"]


def test_frozen_table_round_trips_and_has_no_retriever_score_columns(tmp_path):
    rows = candidates.fuse({"q": ["a", "b"]}, {"q": ["b", "c"]}, ["q"], {"q": "dev"}, k=60, depth=3)
    path = tmp_path / "candidates.tsv"
    candidates.write_candidates(path, rows)
    assert path.read_text().splitlines()[0] == "qid\tsplit\trank\tdoc_id\trrf_score\tbm25_rank\tdense_rank"
    assert candidates.read_candidates(path) == {"q": ["b", "a", "c"]}
    assert candidates.read_candidates(path, depth=2) == {"q": ["b", "a"]}


def test_query_drift_by_hand():
    assert candidates.query_drift(["a", "b", "c"], ["a", "b", "c"]) == {
        "identical": True, "same_set": True, "largest_rank_shift": 0, "overlap": 1.0}
    # b: 2 -> 1, a: 1 -> 2 (shift 1); c left, d entered
    assert candidates.query_drift(["a", "b", "c"], ["b", "a", "d"]) == {
        "identical": False, "same_set": False, "largest_rank_shift": 1, "overlap": 2 / 3}
    # same set, order changed: c moved from 3 to 1 (shift 2)
    assert candidates.query_drift(["a", "b", "c"], ["c", "a", "b"]) == {
        "identical": False, "same_set": True, "largest_rank_shift": 2, "overlap": 1.0}


def test_drift_table_per_split_then_all():
    frozen = {"1": ["a", "b", "c"], "2": ["a", "b", "c"], "3": ["x", "y", "z"]}
    regen = {"1": ["a", "b", "c"], "2": ["b", "a", "d"], "3": ["z", "x", "y"]}
    rows = candidates.drift_table(frozen, regen, {"1": "dev", "2": "confirm", "3": "confirm"})
    assert [r["split"] for r in rows] == ["dev", "confirm", "all"]
    dev, conf, total = rows
    assert (dev["queries"], dev["identical_ranked_lists"], dev["same_set"], dev["largest_rank_shift"],
            dev["mean_overlap"], dev["queries_changed"]) == (1, 1, 1, 0, 1.0, [])
    assert (conf["queries"], conf["identical_ranked_lists"], conf["same_set"], conf["largest_rank_shift"],
            conf["queries_changed"]) == (2, 0, 1, 2, ["2", "3"])
    assert conf["mean_overlap"] == pytest.approx((2 / 3 + 1.0) / 2, abs=1e-15)
    assert (total["queries"], total["identical_ranked_lists"], total["same_set"],
            total["largest_rank_shift"]) == \
        (3, 1, 2, 2)
    with pytest.raises(ValueError, match="different queries"):
        candidates.drift_table(frozen, {"1": ["a"]}, {"1": "dev", "2": "dev", "3": "dev"})


def test_committed_ranked_lists_are_deterministic_gzip_and_reject_a_gap(tmp_path):
    ranked = {"1": ["d3", "d1"], "2": ["d9"]}
    a, b = tmp_path / "a.tsv.gz", tmp_path / "b.tsv.gz"
    candidates.write_ranked_lists_gz(a, ranked)
    candidates.write_ranked_lists_gz(b, ranked)
    assert a.read_bytes() == b.read_bytes()  # mtime 0, no file name: the same bytes every time
    assert candidates.read_ranked_lists_gz(a) == ranked
    bad = tmp_path / "bad.tsv.gz"
    bad.write_bytes(gzip.compress(b"qid\trank\tdoc_id\n1\t1\td3\n1\t3\td1\n", mtime=0))
    with pytest.raises(MalformedInputError, match="line 3: rank 3 out of order"):
        candidates.read_ranked_lists_gz(bad)


def test_user_run_in_trec_eval_order_and_depth(tmp_path):
    run = tmp_path / "r.trec"
    # rank column deliberately wrong: trec_eval orders by score desc, then doc id desc
    run.write_text("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.9 t\nq1 Q0 d3 3 0.5 t\nq2 Q0 d9 1 1 t\n")
    parsed = candidates.read_user_run(run)
    assert [d for d, _ in candidates.run_order(parsed["q1"])] == ["d2", "d3", "d1"]
    rows = candidates.trec_candidate_rows(parsed, ["q1"], {"q1": "dev"}, 2)
    assert rows == [("q1", "dev", 1, "d2", "0.9"), ("q1", "dev", 2, "d3", "0.5")]
    assert candidates.short_queries(parsed, ["q1", "q2", "q3"], 2) == [("q2", 1), ("q3", 0)]
    with pytest.raises(ValueError, match="fewer than 2"):
        candidates.trec_candidate_rows(parsed, ["q1", "q2"], {"q1": "dev", "q2": "dev"}, 2)
    run.write_text("q1 Q0 d1 1 0.5 t\nq1 Q0 d1 2 0.4 t\n")
    with pytest.raises(PipelineError, match="twice"):
        candidates.read_user_run(run)
    run.write_text("q1 Q0 d1 1 nan t\n")
    with pytest.raises(PipelineError, match="finite"):
        candidates.read_user_run(run)
