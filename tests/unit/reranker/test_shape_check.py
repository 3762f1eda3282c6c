"""The shape check each scoring shard makes before it scores (rerank_study.reranker.shape_check): the shapes
expected
of the pinned architecture (written out by hand), the record and its refusal, the cache (a cached check
loads no model), and the run's record from the shards' (shard 0's, once every shard passed)."""

import pytest

from rerank_study.core.errors import PipelineError
from rerank_study.core.fileio import read_json
from rerank_study.reranker import scoring, shape_check

ARCH = {"hidden_size": 384, "num_labels": 1}
SHAPES = {"input_ids": [2, 512], "last_hidden_state": [2, 512, 384], "logits": [2, 1], "pairs": 2,
          "hidden_size": 384, "padding": "max_length"}
LABEL = "some-model weights-sha256:ab"
SETTINGS = scoring.ScoringSettings(max_length=512, truncation="longest_first", batch_size=16, seed=110,
                                   dtype="float32")


def test_the_expected_shapes_are_the_pinned_architectures():
    assert shape_check.expected_shapes(2, 512, ARCH) == {
        "input_ids": [2, 512], "last_hidden_state": [2, 512, 384], "logits": [2, 1]}
    assert shape_check.expected_shapes(3, 128, {"hidden_size": 768, "num_labels": 3})["logits"] == [3, 3]


def test_the_record_names_what_was_checked_and_a_mismatch_stops():
    expected = shape_check.expected_shapes(2, 512, ARCH)
    record = shape_check.checked_record(dict(SHAPES), expected, LABEL, "q1", ["d1", "d2"])
    assert record == {**SHAPES, "expected": expected, "ok": True, "model": LABEL, "qid": "q1",
                      "doc_ids": ["d1", "d2"]}
    with pytest.raises(PipelineError, match="SHAPE CHECK FAILED for some-model.*nothing was scored"):
        shape_check.checked_record({**SHAPES, "logits": [2, 3]}, expected, LABEL, "q1", ["d1", "d2"])


class FakeModel:  # what the check reads of a loaded model
    class config:  # noqa: N801 - the attribute a Hugging Face model has
        hidden_size = 384


def test_a_cached_check_loads_no_model(tmp_path, monkeypatch):
    loads = []

    def model():
        loads.append(1)
        return FakeModel()

    monkeypatch.setattr(shape_check.scoring_model, "shape_check",
                        lambda tok, m, qs, ds, settings: {k: SHAPES[k] for k in ("input_ids", "logits")})
    cached = shape_check.cache_file(tmp_path, "identity", SETTINGS, ["q", "q"], ["d1", "d2"])
    first = shape_check.measured_shapes(None, model, ["q", "q"], ["d1", "d2"], SETTINGS, cached)
    again = shape_check.measured_shapes(None, model, ["q", "q"], ["d1", "d2"], SETTINGS, cached)
    want = {"input_ids": [2, 512], "logits": [2, 1], "hidden_size": 384}
    assert first == (want, False) and again == (want, True) and read_json(cached) == want
    assert loads == [1]
    # a confirmation opening (fresh) runs the forward even when the cache holds the check
    assert shape_check.measured_shapes(None, model, ["q", "q"], ["d1", "d2"], SETTINGS, cached,
                                       fresh=True) == (want, False)
    assert loads == [1, 1]
    other = shape_check.cache_file(tmp_path, "identity", SETTINGS, ["q", "q"], ["d1", "d3"])
    assert other != cached and cached.parent == tmp_path / "shapes"


def passed(qid):
    return {"ok": True, "model": LABEL, "qid": qid}


def test_the_runs_record_is_shard_0s_once_every_shard_passed():
    shards = [{"queries": 3, "shape_check": passed("q1")}, {"queries": 2, "shape_check": passed("q2")},
              {"queries": 0, "shape_check": None}]
    assert shape_check.run_record(shards, ["0.json", "1.json", "2.json"], LABEL) == passed("q1")


@pytest.mark.parametrize("bad, where", [
    ({"queries": 2, "shape_check": {**passed("q2"), "ok": False}}, "1.json"),
    ({"queries": 2, "shape_check": {**passed("q2"), "model": "another"}}, "1.json"),
    ({"queries": 2, "shape_check": None}, "1.json"),  # a shard that scored without a check
    ({"queries": 2}, "1.json"),
])
def test_a_shard_whose_check_did_not_pass_stops_the_gather(bad, where):
    with pytest.raises(PipelineError, match=f"SHAPE CHECK of {where} did not pass"):
        shape_check.run_record([{"queries": 3, "shape_check": passed("q1")}, bad], ["0.json", "1.json"],
                               LABEL)
