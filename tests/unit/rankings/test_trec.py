"""TREC run files: written with rank-derived scores in the given query order, read back to the same
ranking."""

from rerank_study.rankings import trec


def test_trec_round_trip(tmp_path):
    ranked = {"q2": ["d9", "d10", "d1"], "q1": ["a"]}
    path = tmp_path / "run.trec"
    trec.write_run(path, ranked, "tag", query_order=["q1", "q2"])
    text = path.read_text()
    assert text.splitlines()[0] == "q1 Q0 a 1 1 tag"
    assert text.splitlines()[1:] == ["q2 Q0 d9 1 3 tag", "q2 Q0 d10 2 2 tag", "q2 Q0 d1 3 1 tag"]
    back = trec.read_run(path)
    assert {q: [d for d, _, _ in v] for q, v in back.items()} == ranked
