"""Reading a run's tables (rerank_study.stats.run_tables): groups.tsv in file order, the per-query metric
table without counts and ranks, and the first relevant ranks; every expected value written out by hand."""

from rerank_study.stats import run_tables


def test_groups_keep_the_file_order_of_groups_and_members(tmp_path):
    path = tmp_path / "groups.tsv"
    path.write_text("group_id\tqid\ng2\tq9\ng2\tq1\ng1\tq5\n", encoding="utf-8")
    assert run_tables.read_groups(path) == (["g2", "g1"], [["q9", "q1"], ["q5"]])


def test_the_metric_table_leaves_out_counts_and_first_relevant_ranks():
    rows = [{"qid": "1", "ce_ndcg@10": "0.5", "ce_first_rel_rank": "3", "n_candidates": "10"}]
    assert run_tables.metric_table(rows) == {"1": {"ce_ndcg@10": 0.5}}


def test_first_relevant_ranks_with_none_for_no_relevant_candidate():
    rows = [{"qid": "7", "rrf_first_rel_rank": "2", "ce_first_rel_rank": "", "blend_first_rel_rank": "1"}]
    assert run_tables.first_relevant(rows) == {"7": {"rrf": 2, "ce": None, "blend": 1}}
