"""A run against its reference in the reproducibility measures (rerank_study.repro.repro_run): the sides
built from per-query tables and logits, the primary interval verdicts, the verdict, the markdown. Rankings
and blends are worked out by hand below (blend = 1/(k + r0) + 1/(k + CE rank), ties by doc id descending)."""

import pytest

from rerank_study.repro import repro_run

PER_QUERY = {"q1": {"qid": "q1", "ce_ndcg@10": "0.5", "rrf_ndcg@10": "0.25", "blend_ndcg@10": "1"},
             "q2": {"qid": "q2", "ce_ndcg@10": "0", "rrf_ndcg@10": "0.125", "blend_ndcg@10": "0"}}
CANDS = {"q1": ["a", "b", "c"], "q2": ["x", "y"]}
LOGITS = {("q1", "a"): 0.1, ("q1", "b"): 0.9, ("q1", "c"): 0.5, ("q2", "x"): 1.0, ("q2", "y"): 1.0}
COMPARISONS = {"ce-rrf": ("ce", "rrf"), "blend-ce": ("blend", "ce")}


def test_a_side_holds_the_values_the_rankings_and_the_deltas():
    got = repro_run.side(PER_QUERY, LOGITS, CANDS, ["ce", "rrf", "blend"], COMPARISONS, "ndcg@10", 60)
    assert got["values"] == {"ce": {"q1": 0.5, "q2": 0.0}, "rrf": {"q1": 0.25, "q2": 0.125},
                             "blend": {"q1": 1.0, "q2": 0.0}}
    # q1: r0 a1 b2 c3, CE b1 c2 a3; blend a 1/61+1/63, b 1/62+1/61, c 1/63+1/62 -> b, a, c.
    # q2: tied logits -> CE y, x (doc id descending); blend x 1/61+1/62 = y -> tie -> y, x.
    assert got["rankings"] == {"rrf": {"q1": ["a", "b", "c"], "q2": ["x", "y"]},
                               "ce": {"q1": ["b", "c", "a"], "q2": ["y", "x"]},
                               "blend": {"q1": ["b", "a", "c"], "q2": ["y", "x"]}}
    assert got["deltas"] == {"ce-rrf": {"q1": 0.25, "q2": -0.125}, "blend-ce": {"q1": 0.5, "q2": 0.0}}


def test_a_side_needs_a_logit_for_every_candidate():
    logits = {k: v for k, v in LOGITS.items() if k != ("q1", "c")}
    with pytest.raises(ValueError, match=r"logits do not match the candidates: missing \['c'\]"):
        repro_run.side(PER_QUERY, logits, CANDS, ["ce"], {}, "ndcg@10", 60)


@pytest.mark.parametrize("interval, threshold, expected", [
    ((-0.1, 0.2), 0.2, (True, True)),      # both ends are inside
    ((0.01, 0.05), 0.02, (False, True)),
    ((-0.05, -0.01), 0.02, (False, False)),
    ((0.0, 0.01), 0.02, (True, False)),
])
def test_interval_verdicts_cover_closed_intervals(interval, threshold, expected):
    assert repro_run.interval_verdicts(interval, threshold) == dict(zip(("covers_0", "covers_threshold"),
                                                                        expected))


def test_primary_verdicts_say_which_interval_changed():
    ref = {"grouped_interval": [0.01, 0.05], "query_interval": [-0.01, 0.05]}
    run = {"grouped_interval": [0.015, 0.06], "query_interval": [0.001, 0.05]}
    got = repro_run.primary_verdicts(ref, run, 0.02)
    inside = {"covers_0": False, "covers_threshold": True}
    assert got["grouped_interval"] == {"reference": inside, "run": inside, "unchanged": True}
    assert got["query_interval"]["unchanged"] is False
    assert got["query_interval"]["reference"]["covers_0"] and not got["query_interval"]["run"]["covers_0"]


def test_the_verdict_names_every_fail_band_and_every_changed_interval():
    ref = {"grouped_interval": [0.01, 0.05], "query_interval": [-0.01, 0.05]}
    run = {"grouped_interval": [0.015, 0.06], "query_interval": [0.001, 0.05]}
    verdicts = repro_run.primary_verdicts(ref, run, 0.02)
    assert repro_run.verdict({"failed": []}, repro_run.primary_verdicts(ref, ref, 0.02)) == ("REPRODUCED", [])
    v, failed = repro_run.verdict({"failed": ["methods.ce.mean: FAIL"]}, verdicts)
    assert v == "DIFFERENT"
    assert failed == ["methods.ce.mean: FAIL",
                      "primary query_interval: verdicts {'covers_0': True, 'covers_threshold': True} in the "
                      "reference, {'covers_0': False, 'covers_threshold': True} in the run"]
    assert repro_run.verdict({"failed": ["x"]}, {})[0] == "DIFFERENT"


def write_candidates(path, cands):
    lines = ["qid\tsplit\trank\tdoc_id\trun_score"]
    lines += [f"{q}\tdev\t{i}\t{d}\t{10 - i}" for q, docs in cands.items() for i, d in enumerate(docs, 1)]
    path.write_text("\n".join(lines) + "\n")


SUMMARY = {"methods": {"ce": {}, "rrf": {}}, "comparisons": {"ce-rrf": {"a": "ce", "b": "rrf"}},
           "metric": "ndcg@10", "primary": "ce-rrf"}


def test_measures_of_a_run_equal_to_its_reference_are_ideal(tmp_path):
    write_candidates(tmp_path / "candidates.tsv", CANDS)
    got = repro_run.measures(PER_QUERY, PER_QUERY, LOGITS, dict(LOGITS), tmp_path / "candidates.tsv", SUMMARY,
                             60)
    assert got["failed"] == [] and got["worst_band"] == "OK" and got["primary"] == "ce-rrf"
    for m in ("ce", "rrf"):
        blk = got["methods"][m]
        assert (blk["rmse"], blk["ktu"]["mean"], blk["rbo"]["mean"]) == (0.0, 1.0, 1.0)
    assert got["comparisons"]["ce-rrf"]["er"] == 1.0


def test_measures_see_a_changed_ce_order_and_not_in_the_first_stage(tmp_path):
    write_candidates(tmp_path / "candidates.tsv", CANDS)
    run_logits = {**LOGITS, ("q1", "a"): 2.0}  # q1's CE order becomes a, b, c
    got = repro_run.measures(PER_QUERY, PER_QUERY, run_logits, LOGITS, tmp_path / "candidates.tsv", SUMMARY,
                             60)
    # q1: original b c a (codes on the sorted union a b c: 1 2 0), reproduction a b c (0 1 2): pairs
    # (1,2) C, (1,3) D, (2,3) D -> tau = -1/3; q2 unchanged -> 1; mean 1/3
    assert got["methods"]["ce"]["ktu"]["per_query"] == {"q1": pytest.approx(-1 / 3, abs=1e-14), "q2": 1.0}
    assert got["methods"]["rrf"]["ktu"]["mean"] == 1.0
    assert got["methods"]["ce"]["rmse"] == 0.0  # the per-query metric is the table's, unchanged


def test_render_measures_writes_the_tables_the_verdicts_and_what_failed():
    ms = {"methods": {"ce": {"per_query_difference": {"q1": 0.0, "q2": 0.0},
                             "mean": {"original": 0.5, "reproduction": 0.25, "band": "FAIL"},
                             "rmse": 0.25, "nrmse": 0.5, "ktu": {"mean": 1.0}, "rbo": {"mean": None}}},
          "comparisons": {"ce-rrf": {"mean_delta": {"original": 0.25, "reproduction": -0.125, "band": "FAIL"},
                                     "er": None, "delta_ri": 0.0625}},
          "primary": "ce-rrf", "undefined": ["comparisons.ce-rrf.er: the original's mean Δ is 0"]}
    v = {"covers_0": True, "covers_threshold": False}
    result = {"measures": ms, "failed": ["methods.ce.mean: FAIL"],
              "primary": {"threshold": 0.02, "verdicts": {"grouped_interval": {"reference": v, "run": v,
                                                                              "unchanged": True}}}}
    lines = repro_run.render_measures(result)
    assert lines[:2] == ["", "## Did the experiment reproduce?"]
    assert lines[3].startswith("Reference = original, this run = reproduction; 2 queries.")
    assert "| ce | 0.5000 | 0.2500 | FAIL | 0.250000 | 0.500000 | 1.0000 | undefined |" in lines
    assert "| ce-rrf (primary) | +0.2500 | -0.1250 | FAIL | undefined | +0.0625 |" in lines
    assert "Primary comparison ce-rrf (threshold 0.02):" in lines
    assert ("- grouped_interval: reference covers 0: yes; covers threshold: no; run covers 0: yes; covers "
            "threshold: no — unchanged") in lines
    assert lines[-2:] == ["What failed: methods.ce.mean: FAIL",
                          "Undefined: comparisons.ce-rrf.er: the original's mean Δ is 0"]
    result["failed"], ms["undefined"] = [], []
    assert repro_run.render_measures(result)[-1] == "What failed: nothing"
