"""The parse-time checks of an invocation (rerank_study.settings.guards), on small configurations and lock
folders written here: which switches go together, where a backend may come from, whether it can be made from
the pinned model, the committed inputs present, and what a development side reads."""

import json

import pytest

from rerank_study.core.errors import ConfigError, MissingInputError
from rerank_study.settings import guards


@pytest.mark.parametrize("repin", [set(), {"data"}, {"model"}, {"reranker_run"}, {"backend"},
                                   {"splits", "candidates"}])
def test_switches_that_go_together_pass(repin):
    guards.check_invocation({"repin": ",".join(sorted(repin)), "smoke": False}, repin, confirm=False)


def test_the_data_is_pinned_alone():
    with pytest.raises(ConfigError, match=r"repin=data,splits: pin the data ALONE first \(repin=data\), "
                                          r"commit it, then re-pin the splits"):
        guards.check_invocation({"repin": "data,splits", "smoke": False}, {"data", "splits"}, False)


@pytest.mark.parametrize("alone, what", [("model", "the reranker's model files"),
                                         ("reranker_run", "the reranker's development run"),
                                         ("backend", "a derived reranker's file")])
def test_model_reranker_run_and_backend_are_pinned_alone(alone, what):
    with pytest.raises(ConfigError, match=rf"repin={alone},candidates: repin={alone} pins {what} ALONE"):
        guards.check_invocation({"repin": f"{alone},candidates", "smoke": False}, {alone, "candidates"},
                                False)


def test_an_opening_analyses_the_whole_confirmation_set():
    with pytest.raises(ConfigError, match="a confirmation opening analyses the whole confirmation set: drop "
                                          "smoke=true"):
        guards.check_invocation({"repin": "", "smoke": True}, set(), confirm=True)
    guards.check_invocation({"repin": "", "smoke": True}, set(), confirm=False)  # a smoke dev run is fine


@pytest.mark.parametrize("command_line", [{}, {"ce": {"backend": "torch"}}, {"ce": {"max_length": 256}},
                                          {"ce": "not a block"}])
def test_a_backend_not_given_on_the_command_line_passes(command_line):
    guards.check_backend_source(command_line)


def test_a_backend_on_the_command_line_is_refused_with_its_config_file():
    with pytest.raises(ConfigError, match=r"--config ce=\{backend: onnx-int8\}: a backend is set by its "
                                          r"committed config file.*Fix: --configfile "
                                          r"config/backends/onnx-int8\.yaml \(and drop it from --config\)"):
        guards.check_backend_source({"ce": {"backend": "onnx-int8"}})


def write_model_pins(lockdir, architectures):
    lockdir.mkdir(parents=True, exist_ok=True)
    (lockdir / "model_pins.json").write_text(json.dumps(
        {"cross_encoder": {"architecture": {"architectures": architectures}}}))


def test_a_backend_from_a_bert_classifier_passes_and_torch_needs_no_pins(tmp_path):
    write_model_pins(tmp_path, ["BertForSequenceClassification"])
    guards.check_backend_model({"ce": {"backend": "onnx"}}, tmp_path, set())
    guards.check_backend_model({"ce": {"backend": "torch"}}, tmp_path / "absent", set())
    guards.check_backend_model({"ce": {"backend": "onnx"}}, tmp_path / "absent", {"model"})  # being pinned


def test_a_backend_the_pinned_architecture_cannot_make_names_the_pins_file(tmp_path):
    write_model_pins(tmp_path, ["XLMRobertaForSequenceClassification"])
    with pytest.raises(ConfigError, match=r"model_pins\.json: BACKEND 'onnx-int8' CANNOT EXPORT architecture "
                                          r"\['XLMRobertaForSequenceClassification'\].*Fix: score this model "
                                          r"with backend 'torch'"):
        guards.check_backend_model({"ce": {"backend": "onnx-int8"}}, tmp_path, set())


def test_a_backend_without_model_pins_says_how_to_restore_or_make_them(tmp_path):
    with pytest.raises(MissingInputError, match=r"MISSING MODEL PINS: .*model_pins\.json does not exist\..*"
                                                r"git checkout -- .*repin=model"):
        guards.check_backend_model({"ce": {"backend": "onnx"}}, tmp_path, set())


def committed_lockdir(tmp_path, *missing):
    lock = tmp_path / "lock"
    for rel in ("splits/dev.txt", "splits/confirm.txt", "candidates/candidates.tsv", "derived_pins.json"):
        if rel not in missing:
            (lock / rel).parent.mkdir(parents=True, exist_ok=True)
            (lock / rel).write_text("x\n")
    return lock


def test_committed_inputs_present_pass(tmp_path):
    guards.check_committed_inputs(committed_lockdir(tmp_path), set())


@pytest.mark.parametrize("missing, what, repin_key", [
    ("splits/confirm.txt", "QUERY SPLIT LIST", "splits"),
    ("candidates/candidates.tsv", "FROZEN CANDIDATE TABLE", "candidates"),
    ("derived_pins.json", "DERIVED PINS", "splits,candidates"),
])
def test_a_missing_committed_input_names_itself_and_the_fix(tmp_path, missing, what, repin_key):
    lock = committed_lockdir(tmp_path, missing)
    with pytest.raises(MissingInputError) as info:
        guards.check_committed_inputs(lock, set())
    msg = str(info.value)
    assert msg.startswith(f"MISSING {what}: {lock / missing} does not exist.")
    assert f"git checkout -- {lock}" in msg and msg.endswith(f"snakemake --config repin={repin_key}")


def test_inputs_this_invocation_re_pins_need_not_exist(tmp_path):
    lock = committed_lockdir(tmp_path, "splits/dev.txt", "candidates/candidates.tsv", "derived_pins.json")
    for repin in ({"data"}, {"model"}, {"splits"}, {"splits", "candidates"}):
        guards.check_committed_inputs(lock, repin)
    with pytest.raises(MissingInputError, match="FROZEN CANDIDATE TABLE"):  # checked against them
        guards.check_committed_inputs(committed_lockdir(tmp_path, "candidates/candidates.tsv"),
                                      {"reranker_run"})


def test_development_inputs_prefer_the_verified_data_folder_and_read_the_runs_query_ids(tmp_path):
    data = tmp_path / "res" / "data" / "scifact"
    data.mkdir(parents=True)
    (data / "queries.jsonl").write_text("{}\n")
    run = tmp_path / "first.trec"
    run.write_text("q1 Q0 d1 1 2.0 t\nq2 Q0 d1 1 1.0 t\nq1 Q0 d2 2 1.0 t\n")
    lock = tmp_path / "lock"
    (lock / "reranker").mkdir(parents=True)
    (lock / "reranker" / "dev.trec").write_text("q3 Q0 d1 1 1.0 r\n")
    cfg = {"resources": str(tmp_path / "res"), "study": {"dataset": "scifact"}, "data_mirror": "/mirror",
           "trec_run": str(run), "run_file": str(tmp_path / "absent.trec"), "lockdir": str(lock)}
    data_dir, runs = guards.development_inputs(cfg)
    assert data_dir == data
    assert runs == {str(run): {"q1", "q2"}, str(lock / "reranker" / "dev.trec"): {"q3"}}


def test_development_inputs_fall_back_to_the_mirror_or_none(tmp_path):
    cfg = {"resources": str(tmp_path), "study": {"dataset": "scifact"}, "data_mirror": "/mirror",
           "trec_run": None, "run_file": "", "lockdir": str(tmp_path / "lock")}
    assert guards.development_inputs(cfg) == ("/mirror", {})
    assert guards.development_inputs(dict(cfg, data_mirror=""))[0] is None
