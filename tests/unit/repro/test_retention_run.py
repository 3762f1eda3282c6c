"""The retention's run-level pieces (rerank_study.repro.retention_run): what two runs must share to be
compared, the pin they are held to, and how a record becomes Markdown, each against values written by hand
(its row of the cross-study table: tests/unit/report/test_cross_table.py)."""

from __future__ import annotations

import json

import pytest
from retention_example import REC

from rerank_study.core.errors import PipelineError
from rerank_study.repro import retention_run

KEYS = retention_run.INPUT_KEYS


def _side(name="a", settings=None, inputs=None, qids=("1", "2"), groups=(("1",), ("2",))):
    arts = [{"key": k, "sha256": f"h-{k}"} for k in KEYS] if inputs is None else inputs
    arts = arts + [{"key": "pairs", "sha256": "x"}]  # an output: not an input of the comparison
    settings = settings or {"max_length": 512, "study": {"name": name, "dataset": "scifact"}}
    return {"name": name, "manifest": {"artefacts": arts, "settings": settings}, "qids": list(qids),
            "groups": [list(g) for g in groups], "scoring": dict(SCORING)}


SCORING = {"backend": "torch", "batch_size": 16, "seed": 110, "dtype": "float32", "numerics": "oneMKL strict"}


def test_scoring_but_backend_drop_the_backend_and_its_numerics_only():
    assert retention_run.scoring_but_backend({**SCORING, "backend": "onnx", "numerics": "x"}, "a") == {
        "batch_size": 16, "seed": 110, "dtype": "float32"}
    for missing in (None, [1]):
        with pytest.raises(PipelineError) as exc:
            retention_run.scoring_but_backend(missing, "a")
        assert str(exc.value) == (
            "run a: its measurements/scoring.json holds no 'settings' object, so its batch size, seed and "
            "truncation cannot be compared: not a run of this pipeline's scoring; re-run its scoring.")


def test_settings_but_backend_drop_the_backend_and_the_study_name_only():
    s = {"backend": "onnx", "max_length": 512, "study": {"name": "a", "dataset": "d"}}
    assert retention_run.settings_but_backend(s) == {"max_length": 512, "study": {"dataset": "d"}}
    assert s["study"] == {"name": "a", "dataset": "d"}  # the caller's settings untouched
    assert retention_run.settings_but_backend({"max_length": 1}) == {"max_length": 1, "study": {}}


def test_two_runs_are_comparable_only_on_the_same_queries_inputs_groups_and_settings():
    ref = _side("a")
    twin = _side("b", settings={"max_length": 512, "backend": "onnx-int8",
                                "study": {"name": "b", "dataset": "scifact"}})
    twin["scoring"] = {**SCORING, "backend": "onnx-int8", "numerics": "ONNX Runtime"}
    retention_run.check_comparable(ref, twin)  # names, backend and its numerics differ: comparable
    other_batches = _side("b")
    other_batches["scoring"] = {**SCORING, "batch_size": 3}  # not in the manifest's settings: the red team's
    float_batches = _side("b")
    float_batches["scoring"] = {**SCORING, "batch_size": 16.0}  # == 16 in Python, another record
    no_record = _side("b")
    no_record["scoring"] = None
    cases = {
        "analysed queries": _side("b", qids=("1", "3"), groups=(("1",), ("3",))),
        "inputs (sha256)": _side("b", inputs=[{"key": k, "sha256": "h-" + ("c2" if k == "corpus" else k)}
                                             for k in KEYS]),
        "evidence groups": _side("b", groups=(("1", "2"),)),
        "settings but the backend": _side("b", settings={"max_length": 256,
                                                         "study": {"name": "b", "dataset": "scifact"}}),
        "scoring settings but the backend (measurements/scoring.json)": other_batches,
    }
    with pytest.raises(PipelineError, match=r"differ in their scoring settings but the backend \("):
        retention_run.check_comparable(ref, float_batches)
    for what, other in cases.items():
        with pytest.raises(PipelineError) as exc:
            retention_run.check_comparable(ref, other)
        assert str(exc.value) == (
            f"NOT COMPARABLE: runs a and b differ in their {what}; the retention compares two scorers of the "
            "SAME pairs: rerun both with the same --config (the backend's --configfile only for the "
            "backend's run).")
    for first, second in ((ref, no_record), (no_record, ref)):
        with pytest.raises(PipelineError, match="run b: its measurements/scoring.json holds no 'settings'"):
            retention_run.check_comparable(first, second)
    for missing in KEYS:
        short = _side("b", inputs=[{"key": k, "sha256": f"h-{k}"} for k in KEYS if k != missing])
        for first, second in ((ref, short), (short, ref)):
            with pytest.raises(PipelineError) as exc:
                retention_run.check_comparable(first, second)
            assert str(exc.value) == (
                f"run b: its manifest lists inputs {sorted(set(KEYS) - {missing})}, the retention compares "
                f"{sorted(KEYS)}: not a run of this pipeline's layout.")


def test_the_pin_of_a_backend_is_found_exactly_once(tmp_path):
    def pins(*identities):
        p = tmp_path / "derived_pins.json"
        entries = {f"k{i}": {"sha256": f"S{i}", "source": {"identity": ident}}
                   for i, ident in enumerate(identities)}
        fp32 = {"z": {"sha256": "Z", "source": {"identity": "M"}}}
        p.write_text(json.dumps({"backends": {"onnx-int8": entries, "onnx": fp32}}))
        return p

    assert retention_run.pinned_sha256(pins("N", "M"), "onnx-int8", "M") == "S1"
    for idents, n in ((("N",), 0), (("M", "M"), 2)):
        path = pins(*idents)
        with pytest.raises(PipelineError) as exc:
            retention_run.pinned_sha256(path, "onnx-int8", "M")
        assert str(exc.value) == (f"{path}: pins backend 'onnx-int8' of M {n} times (exactly once expected): "
                                  "restore the committed lock folder.")


def test_a_retention_record_as_markdown():
    assert retention_run.markdown(REC).splitlines() == [
        "# Conclusion retention: backend `onnx-int8` against fp32 torch",
        "",
        "Runs: `t/dev` (torch) and `i/dev` (onnx-int8); the same 3 queries, candidates, groups and bootstrap "
        "draws.",
        "",
        "| | torch | onnx-int8 |",
        "|---|---|---|",
        "| primary | blend-ce (ndcg@10) |  |",
        "| primary mean Δ | 0.250000 | 0.500000 |",
        "| grouped interval | [0.125000, 0.375000] | [0.250000, 0.750000] |",
        "| its Δ − torch's Δ (grouped paired interval) |  | -0.062500 [-0.500000, +0.250000] |",
        "| verdicts changed |  | blend-ce.grouped_covers_0, guardrail ce-rrf.pass |",
        "| conclusion retained |  | NO |",
        "| Kendall τ-b of the logits per query: min / median / mean |  | 0.5000 / 0.7500 / 0.6250 |",
        "| top-10 overlap per query: min / mean |  | 0.70 / 0.8500 |",
        "| largest abs Δ logit |  | 7.812e-03 |",
        "| pairs with the same logit |  | 3 of 150 |",
    ]
    kept = {**REC, "conclusion": {**REC["conclusion"], "verdicts_changed": [], "conclusion_retained": True}}
    lines = retention_run.markdown(kept).splitlines()
    assert "| verdicts changed |  | none |" in lines and "| conclusion retained |  | yes |" in lines
