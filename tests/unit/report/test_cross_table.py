"""The cross-study report's section "Across datasets"
(rerank_study.report.cross_table.across_datasets_section) on a hand-written synthesis.md: the text is
carried as written, its figure link made relative to the cross-study report, and no synthesis declared gives
a line saying so."""

import pytest

from rerank_study.core.errors import PipelineError
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
