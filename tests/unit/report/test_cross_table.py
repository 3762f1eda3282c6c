"""The cross-study table (rerank_study.report.cross_table), against values written by hand: a study's row read
from the summary it is given, the backend column and a derived study's torch twin, a retention record's row,
and the section "Across datasets" of a hand-written synthesis.md (the text carried as written, its figure
link made relative to the cross-study report; no synthesis declared gives a line saying so)."""

import pytest
from retention_example import REC

from rerank_study.core.errors import PipelineError
from rerank_study.report import cross_table
from rerank_study.report.cross_table import ACROSS_HEADING, NO_SYNTHESIS, across_datasets_section

SYNTHESIS_MD = """## Across datasets

Pooled primary Δ (datasets weighting, declared before results): **0.125000**, interval [0.050000, 0.200000].

| row | estimate |
|---|---|
| pooled (datasets) | 0.125000 |

![forest plot](forest.png)

Audit of this synthesis: PASSED.

"""


def test_no_synthesis_declared_is_a_line_that_says_so():
    assert across_datasets_section(None, "") == f"\n## Across datasets\n\n{NO_SYNTHESIS}\n"
    assert "`synthesis.weighting`" in NO_SYNTHESIS


def test_a_declared_synthesis_is_its_text_with_the_figure_linked_from_the_report():
    folder = "../../synthesis/a+b"
    got = across_datasets_section(SYNTHESIS_MD, folder)
    lines = got.split("\n")
    assert lines[:3] == ["", ACROSS_HEADING, ""]
    assert lines[3] == ("The declared synthesis of this invocation's studies: "
                        "[synthesis.md](../../synthesis/a+b/synthesis.md), one page "
                        "[synthesis.html](../../synthesis/a+b/synthesis.html), every number in "
                        "[synthesis.json](../../synthesis/a+b/synthesis.json), its audit "
                        "[audit.json](../../synthesis/a+b/audit.json).")
    assert "![forest plot](../../synthesis/a+b/forest.png)" in lines
    assert "![forest plot](forest.png)" not in lines
    # every other line as synthesis.md has it, in its order
    written = SYNTHESIS_MD.rstrip("\n").split("\n")[1:]
    assert [x for x in lines[4:] if "forest" not in x] == [x for x in written if "forest" not in x] + [""]
    assert "**0.125000**, interval [0.050000, 0.200000]" in got and got.endswith("PASSED.\n")


def test_a_file_that_is_not_a_synthesis_section_is_refused_naming_it():
    with pytest.raises(PipelineError, match=r"results/synthesis/a\+b/synthesis.md does not begin with "
                                            r"'## Across datasets'.*Fix: rerun `snakemake synthesis`"):
        across_datasets_section("# Something else\n", "x", "results/synthesis/a+b/synthesis.md")


def test_cross_study_row_reads_the_summary_it_is_given():
    summary = {"primary": "blend-ce", "metric": "ndcg@10", "scorer": "pinned", "n_queries": 7, "n_groups": 5,
               "methods": {"rrf": {"mean": 0.1}, "ce": {"mean": 0.2}, "blend": {"mean": 0.3}},
               "comparisons": {"blend-ce": {"mean": 0.1, "grouped_interval": [-0.05, 0.25]}}}
    cfg = {"study": {"name": "s", "dataset": "d", "reranker": "m", "reranker_kind": "run"}}
    manifest = {"model_identity": "m run:reranker/dev.trec", "model_weights_sha256": "ab" * 32}
    row = cross_table.cross_study_row(cfg, summary, {"ok": True}, "dev", manifest)
    assert row == {"study": "s", "dataset": "d", "reranker_kind": "run",
                   "reranker": "m run:reranker/dev.trec",
                   "reranker_sha256": "ab" * 32, "backend": "none", "scorer": "pinned", "run": "dev",
                   "n_queries": 7,
                   "n_groups": 5, "rrf_mean": 0.1, "ce_mean": 0.2, "blend_mean": 0.3,
                   "primary": "blend-ce (ndcg@10)", "primary_delta": 0.1, "primary_grouped_lo": -0.05,
                   "primary_grouped_hi": 0.25, "audit": "PASSED"}
    assert tuple(row) == cross_table.CROSS_STUDY_COLUMNS
    for verdict in ({"ok": False}, {}, {"ok": "yes"}):  # only a verdict of exactly true passes
        assert cross_table.cross_study_row(cfg, summary, verdict, "dev", manifest)["audit"] == "FAILED"


def _manifest(backend=None, model="M", inputs=None, max_length=512, name="s"):
    settings = {"max_length": max_length, "study": {"name": name, "dataset": "d"},
                **({"backend": backend} if backend else {})}
    arts = [{"key": k, "sha256": v} for k, v in (inputs or {"corpus": "c", "queries": "q"}).items()]
    return {"model_identity": model, "model_weights_sha256": "W", "settings": settings, "artefacts": arts}


def test_the_backend_column_and_the_torch_twin_of_a_derived_study():
    assert [cross_table.backend_of(m) for m in (_manifest(), _manifest("onnx-int8"), {"settings": {}})] == \
        ["torch", "onnx-int8", "none"]
    keys = ("corpus", "queries")
    int8, torch, other_model = _manifest("onnx-int8"), _manifest(), _manifest(model="N")
    other_inputs = _manifest(inputs={"corpus": "c", "queries": "q2"})
    other_settings = _manifest(max_length=256)
    scored = {"batch_size": 16, "seed": 110, "truncation": "longest_first", "backend": "torch",
              "numerics": "fp32"}
    s8 = {**scored, "backend": "onnx-int8", "numerics": "ONNX Runtime"}  # the derived study's own

    def twin(ms, scoring=None):
        return cross_table.torch_twin(0, ms, keys, scoring or [s8] + [scored] * (len(ms) - 1))

    # the first torch study of the same model, weights, inputs and settings but the backend and the study's
    # name; never a derived one, never itself, never one of other settings (passed over, not refused later)
    assert twin([int8, other_model, other_inputs, other_settings, _manifest(name="t"), torch]) == 4
    assert twin([int8, other_model, other_inputs, other_settings, _manifest("onnx")]) is None
    other_weights = {**_manifest(), "model_weights_sha256": "W2"}
    assert twin([int8, other_weights]) is None
    # the scoring settings count too, type-strictly: a torch study of batch size 8 (or 16.0) is passed over
    # for the exact twin after it; a study without a scoring record is never a twin
    assert twin([int8, torch, torch], [s8, {**scored, "batch_size": 8}, scored]) == 2
    assert twin([int8, torch, torch], [s8, {**scored, "batch_size": 16.0}, scored]) == 2
    assert twin([int8, torch], [s8, None]) is None and twin([int8, torch], [None, scored]) is None


def test_a_retention_record_is_one_row_of_the_cross_study_section():
    row = cross_table.retention_row("i", "onnx-int8", "t", REC)
    assert row == {
        "study": "i", "backend": "onnx-int8", "torch_study": "t", "torch_primary_mean": 0.25,
        "torch_grouped_lo": 0.125, "torch_grouped_hi": 0.375, "primary_mean": 0.5, "grouped_lo": 0.25,
        "grouped_hi": 0.75, "delta_difference": -0.0625, "delta_difference_lo": -0.5,
        "delta_difference_hi": 0.25,
        "verdicts_changed": "blend-ce.grouped_covers_0, guardrail ce-rrf.pass", "conclusion_retained": False,
        "kendall_tau_b_min": 0.5, "kendall_tau_b_median": 0.75, "top10_overlap_min": 0.7,
        "top10_overlap_mean": 0.85, "max_abs_delta_logit": 0.0078125, "note": ""}
    assert list(row) == list(cross_table.RETENTION_COLUMNS)
    kept = {**REC, "conclusion": {**REC["conclusion"], "verdicts_changed": [], "conclusion_retained": True}}
    row = cross_table.retention_row("i", "onnx-int8", "t", kept)
    assert row["verdicts_changed"] == "none" and row["conclusion_retained"] is True
    none = cross_table.retention_row("i", "onnx", None, None)
    assert none == {**dict.fromkeys(cross_table.RETENTION_COLUMNS), "study": "i", "backend": "onnx",
                    "note": "no fp32 torch study of the same model, inputs and settings in this invocation: "
                            "add one to studies=[...] (the same study file without the backend)"}
