"""synthesis.html (rerank_study.synthesis.synthesis_report.page) of a hand-written synthesis.md and a
stand-in PNG's bytes: one self-contained page, the figure inlined, the text and numbers as written; and
synthesis.md links the forest plot beside it."""

import base64
import re

import pytest

from rerank_study.core.errors import PipelineError
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
