"""Parse-time checks of a study's cross-encoder (rerank_study.settings.reranker_checks) on model pins written
here: pinned completely, one logit or a declared label index, a stand-in scorer only for MiniLM's shape. A
refusal is a StudyError naming the study, the file and the fix. The run-file reranker's checks
(reranker_run.check_study), a model to pin (model_pinning.check_request) and a model folder
(model_pinning.check_model_dir) are their modules' own."""

import json

import pytest

from rerank_study.core.errors import StudyError
from rerank_study.settings import reranker_checks as rc

MINILM = {"hidden_size": 384, "num_hidden_layers": 6, "intermediate_size": 1536, "num_attention_heads": 12,
          "vocab_size": 30522, "num_labels": 1}


def pins(**over):
    ce = {"repo": "org/ce", "revision": "abc", "files": {"config.json": {}}, "weights": "model.safetensors",
          "architecture": dict(MINILM)}
    ce.update(over)
    return {"cross_encoder": ce}


def config(label_index=None, scorer="pinned", kind="cross-encoder", model_dir=None):
    return {"study": {"name": "s1", "reranker": "org/ce", "label_index": label_index, "reranker_kind": kind},
            "scorer": scorer, "model_dir": model_dir, "study_file": "studies/s1.yaml"}


def lock(tmp_path, content):
    (tmp_path / "model_pins.json").write_text(json.dumps(content))
    return tmp_path


def test_reranker_outputs_is_num_labels():
    assert rc.reranker_outputs({"architecture": {"num_labels": "3"}}) == 3


def test_a_complete_one_logit_pin_passes_and_is_returned(tmp_path):
    assert rc.check_model_pins(config(), lock(tmp_path, pins())) == pins()["cross_encoder"]


def test_a_study_without_model_pins_says_what_to_write(tmp_path):
    with pytest.raises(StudyError) as info:
        rc.check_model_pins(config(), tmp_path)
    msg = str(info.value)
    assert msg.startswith("STUDY 's1': reranker 'org/ce' has no pins in this study's lock folder.")
    assert f"file: {tmp_path / 'model_pins.json'}" in msg and "fix: write <lockdir>/model_pins.json" in msg


@pytest.mark.parametrize("content", [pins(repo="org/other"), {"bi_encoder": {}}])
def test_the_pinned_cross_encoder_must_be_the_studys(tmp_path, content):
    got = content.get("cross_encoder", {}).get("repo")
    with pytest.raises(StudyError, match=rf"study\.reranker is 'org/ce' but the pinned cross-encoder is "
                                         rf"{got!r}\."):
        rc.check_model_pins(config(), lock(tmp_path, content))


@pytest.mark.parametrize("key", ["revision", "files", "weights", "architecture"])
def test_an_incomplete_pin_names_the_missing_key(tmp_path, key):
    with pytest.raises(StudyError, match=rf"(?s)cross_encoder\.{key} is missing\..*fix: pin the model "
                                         r"completely"):
        rc.check_model_pins(config(), lock(tmp_path, pins(**{key: None})))


def test_several_logits_need_a_declared_label_index_in_range(tmp_path):
    three = lock(tmp_path, pins(architecture=dict(MINILM, num_labels=3)))
    with pytest.raises(StudyError, match=r"(?s)the model has 3 output logits and study\.label_index is not "
                                         r"declared\..*study\.label_index: <0\.\.2>"):
        rc.check_model_pins(config(), three)
    assert rc.check_model_pins(config(label_index=2), three)["repo"] == "org/ce"
    for bad in (3, -1):
        with pytest.raises(StudyError, match=rf"(?s)study\.label_index {bad} is not one of the model's 3 "
                                             r"outputs\..*use an index in 0\.\.2"):
            rc.check_model_pins(config(label_index=bad), three)
    one = lock(tmp_path, pins())
    with pytest.raises(StudyError, match="label_index 1 is not one of the model's 1 outputs"):
        rc.check_model_pins(config(label_index=1), one)


def test_the_stand_in_scores_only_a_model_of_minilms_shape():
    ce = pins()["cross_encoder"]
    rc.check_scorer(config(scorer="stand-in"), ce, pins()["cross_encoder"])
    rc.check_scorer(config(scorer="stand-in"), ce, None)  # nothing to compare with
    big = dict(ce, repo="org/big", architecture=dict(MINILM, hidden_size=768, num_hidden_layers=12))
    rc.check_scorer(config(scorer="pinned"), big, ce)  # the pinned model scores itself
    with pytest.raises(StudyError) as info:
        rc.check_scorer(config(scorer="stand-in"), big, ce)
    msg = str(info.value)
    assert "org/big differs in hidden_size, num_hidden_layers." in msg
    assert "file: studies/s1.yaml" in msg and "fix: set scorer: pinned" in msg


def test_check_reranker_runs_the_pin_and_scorer_checks(tmp_path):
    (tmp_path / "lock").mkdir()
    lockdir = lock(tmp_path / "lock", pins(architecture=dict(MINILM, hidden_size=768)))
    default = tmp_path / "default_pins.json"
    default.write_text(json.dumps(pins()))
    rc.check_reranker(config(), lockdir, set(), default)  # pinned scorer: fine
    with pytest.raises(StudyError, match="differs in hidden_size"):
        rc.check_reranker(config(scorer="stand-in"), lockdir, set(), default)
    rc.check_reranker(config(scorer="stand-in"), lockdir, set(), tmp_path / "absent.json")  # no default


def test_check_reranker_while_re_pinning(tmp_path):
    # pinning the data, splits or candidates before the model is pinned: nothing to check yet
    rc.check_reranker(config(), tmp_path, {"data"})
    with pytest.raises(StudyError, match=r"(?s)repin=reranker_run pins a run-file reranker's run, and "
                                         r"study\.reranker_kind is cross-encoder\..*reranker_kind: run"):
        rc.check_reranker(config(), tmp_path, {"reranker_run"})
    with pytest.raises(StudyError, match="has no pins"):  # a run without pins
        rc.check_reranker(config(), tmp_path, set())
