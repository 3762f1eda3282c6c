"""The synthesis's renderings (rerank_study.synthesis.synthesis_report): the rows, the TSV and the markdown
of a hand-written synthesis block; the family's test rows of a synthesized one; synthesis.html of a
hand-written synthesis.md and a stand-in PNG's bytes (one self-contained page, the figure inlined, the text
and numbers as written); and synthesis.md links the forest plot beside it."""

import base64
import re

import pytest
from test_synthesis import FAMILY, TESTS, A, B, C

from rerank_study.core.errors import PipelineError
from rerank_study.synthesis import synthesis as syn
from rerank_study.synthesis import synthesis_report

MD = """## Across datasets

Pooled primary Δ (queries weighting, declared before results): **-0.031250**, interval [-0.062500, 0.000000].

| row | n_queries | estimate |
|---|---|---|
| alpha | 8 | 0.125000 |

![forest plot](forest.png)

Audit of this synthesis: PASSED (`scripts/audit --synthesis`).
"""
PNG = b"\x89PNG\r\n\x1a\nhand-made bytes"


def test_the_page_is_self_contained_with_the_forest_plot_inlined():
    page = synthesis_report.page(MD, PNG, ["planted-alpha", "planted-beta"])
    assert page.startswith("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
    assert "<title>Across datasets: planted-alpha + planted-beta</title>" in page
    assert page.endswith("</body>\n</html>\n")
    b64 = base64.b64encode(PNG).decode("ascii")
    assert page.count("<img ") == 1
    assert f'<p><img src="data:image/png;base64,{b64}" alt="forest plot"></p>' in page
    assert not re.search(r"https?://", page) and "<script" not in page and "<link" not in page
    assert "<h2>Across datasets</h2>" in page
    assert "<strong>-0.031250</strong>, interval [-0.062500, 0.000000]" in page
    assert "<tr><td>alpha</td><td>8</td><td>0.125000</td></tr>" in page
    assert "<code>scripts/audit --synthesis</code>" in page


def test_the_page_is_a_function_of_its_inputs():
    one = synthesis_report.page(MD, PNG, ["a", "b"])
    assert synthesis_report.page(MD, PNG, ["a", "b"]) == one
    assert synthesis_report.page(MD, PNG + b"x", ["a", "b"]) != one


def test_a_figure_other_than_the_forest_plot_is_refused_naming_synthesis_md():
    with pytest.raises(PipelineError, match="synthesis.md links the figure 'other.png'"):
        synthesis_report.page(MD.replace("forest.png", "other.png"), PNG, ["a", "b"])


def test_synthesis_md_links_the_forest_plot_beside_it():
    assert synthesis_report.FOREST_LINE.endswith("](forest.png)")
    assert synthesis_report.FOREST_LINE.startswith("![forest plot: ")


def test_the_renderings_carry_every_test_row_and_leave_exploratory_rows_unadjusted():
    result, _ = syn.synthesize([A, B, C], [[0.1, 0.3], [-0.1, 0.2], [-0.4, -0.1]], FAMILY, TESTS)
    lines = [line.split("\t") for line in synthesis_report.tsv(result).splitlines()]
    assert lines[0][-5:] == ["comparison", "role", "p", "p_holm", "p_bh"] and {len(x) for x in lines} == {13}
    tests = [x for x in lines[1:] if x[9]]
    assert [(x[0], x[8], x[9]) for x in tests] == [(r["dataset"], r["comparison"], r["role"])
                                                   for r in result["family"]["rows"]]
    assert all(x[11] == x[12] == "" for x in tests if x[9] == "exploratory")
    assert all(float(x[11]) >= float(x[10]) for x in tests if x[9] == "family")
    assert synthesis_report.markdown(result).count("### The declared family of tests") == 1
    assert "tab:synthesis-family" in synthesis_report.tex(result)
    assert len(synthesis_report.family_markdown(result)) == 6 + 9 + 1


# a synthesis block written by hand (the keys synthesis.json holds), two datasets
RESULT = {
    "comparison": "blend-ce", "plain_mean_of_means": -0.125,
    "datasets": [
        {"dataset": "alpha", "n_queries": 4, "n_groups": 3, "mean": 0.25, "se": 0.125,
         "grouped_interval": [0.0, 0.5], "sign": "covers 0"},
        {"dataset": "beta", "n_queries": 6, "n_groups": 2, "mean": -0.5, "se": 0.25,
         "grouped_interval": [-1.0, -0.25], "sign": "below 0"}],
    "pooled": {"weighting": "queries", "estimate": -0.2, "interval": [-0.5, 0.125], "B": 100, "seed": 3},
    "meta_analysis": {"fixed_effect": 0.1, "fixed_effect_se": 0.05, "tau2_method": "paule-mandel",
                      "random_effect": 0.0625, "random_effect_se": 0.5, "hksj_interval": [-1.5, 2.0],
                      "prediction_interval": None, "i2": 0.5, "q": 2.0, "q_df": 1, "q_pvalue": 0.1573},
    "consistency": {"above 0": 0, "covers 0": 1, "below 0": 1}}
FAMILY_ROWS = [
    {"dataset": "alpha", "n_queries": 4, "n_groups": 3, "comparison": "blend-ce", "role": "family",
     "mean": 0.25, "p": 0.0123456, "p_holm": 0.0246912, "p_bh": 0.0246912},
    {"dataset": "alpha", "n_queries": 4, "n_groups": 3, "comparison": "blend-rrf", "role": "exploratory",
     "mean": -0.5, "p": 0.5, "p_holm": None, "p_bh": None}]
FAMILY_BLOCK = {"declared": ["blend-ce"], "m": 1, "test": "grouped sign-flip", "B": 50,
                "adjustment": "Holm and BH", "rows": FAMILY_ROWS}


def test_the_rows_are_each_dataset_then_the_pooled_fixed_and_random_effects():
    assert synthesis_report.rows(RESULT) == [
        ("alpha", 4, 3, 0.25, 0.125, 0.0, 0.5, "covers 0"),
        ("beta", 6, 2, -0.5, 0.25, -1.0, -0.25, "below 0"),
        ("pooled (queries)", 10, 5, -0.2, "", -0.5, 0.125, ""),
        ("fixed effect", 10, 5, 0.1, 0.05, "", "", ""),
        ("random effects (paule-mandel, HKSJ)", 10, 5, 0.0625, 0.5, -1.5, 2.0, "")]
    predicted = {**RESULT, "meta_analysis": {**RESULT["meta_analysis"], "prediction_interval": [-3.0, 3.0]}}
    assert synthesis_report.rows(predicted)[-1] == ("prediction (a new dataset)", "", "", 0.0625, "", -3.0,
                                                    3.0, "")


def test_the_tsv_writes_floats_exactly_and_a_test_row_after_the_pooled_rows():
    lines = synthesis_report.tsv({**RESULT, "family": FAMILY_BLOCK}).split("\n")
    assert lines[0] == "row\tn_queries\tn_groups\testimate\tse\tlower\tupper\tsign\tcomparison\trole\tp\t" \
                       "p_holm\tp_bh"
    assert lines[1] == "alpha\t4\t3\t0.25\t0.125\t0.0\t0.5\tcovers 0\tblend-ce\t\t\t\t"
    assert lines[3] == "pooled (queries)\t10\t5\t-0.2\t\t-0.5\t0.125\t\tblend-ce\t\t\t\t"
    assert lines[6:] == ["alpha\t4\t3\t0.25\t\t\t\t\tblend-ce\tfamily\t0.0123456\t0.0246912\t0.0246912",
                         "alpha\t4\t3\t-0.5\t\t\t\t\tblend-rrf\texploratory\t0.5\t\t", ""]


def test_the_tsv_refuses_a_number_that_is_not_finite():
    bad = {**RESULT, "pooled": {**RESULT["pooled"], "estimate": float("nan")}}
    with pytest.raises(ValueError, match="non-finite"):
        synthesis_report.tsv(bad)


def test_the_markdown_section_states_the_pooled_answer_with_six_decimals():
    lines = synthesis_report.markdown(RESULT)
    assert lines[:3] == ["## Across datasets", "",
                         "Pooled primary Δ (queries weighting, declared before results): **-0.200000**, "
                         "interval [-0.500000, 0.125000] from 100 stratified grouped bootstrap replicates "
                         "(seed 3). The plain mean of the datasets' means is -0.125000."]
    assert lines[4] == ("Random effects (paule-mandel): 0.062500, HKSJ interval [-1.500000, 2.000000]; "
                        "I² = 0.500, Cochran's Q = 2.000 on 1 df (p = 0.157).")
    assert lines[6] == "Datasets whose grouped interval lies above 0: 0, covers 0: 1, below 0: 1."
    assert lines[10:13] == ["| alpha | 4 | 3 | 0.250000 | 0.125000 | 0.000000 | 0.500000 | covers 0 |",
                           "| beta | 6 | 2 | -0.500000 | 0.250000 | -1.000000 | -0.250000 | below 0 |",
                           "| pooled (queries) | 10 | 5 | -0.200000 |  | -0.500000 | 0.125000 |  |"]
    assert lines[-3:] == ["", synthesis_report.FOREST_LINE, ""]  # no family block: no family section


def test_the_family_section_gives_four_significant_digits_and_na_for_an_unadjusted_row():
    assert synthesis_report.family_markdown({**RESULT, "family": FAMILY_BLOCK}) == [
        "### The declared family of tests", "",
        "Declared before results: blend-ce in every dataset, m = 1 tests. p: grouped sign-flip (B = 50); "
        "adjusted: Holm and BH.", "",
        "| dataset | comparison | role | mean Δ | p | p Holm | p BH |", "|---|---|---|---|---|---|---|",
        "| alpha | blend-ce | family | 0.250000 | 0.01235 | 0.02469 | 0.02469 |",
        "| alpha | blend-rrf | exploratory | -0.500000 | 0.5 | NA | NA |", ""]
    assert synthesis_report.family_tex(RESULT) == ""
