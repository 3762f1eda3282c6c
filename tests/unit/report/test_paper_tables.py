"""Paper-ready tables (rerank_study.report.paper_tables) of a tiny summary, against the text written out by
hand here
from the layout docs/outputs.md documents; and the audit's own renderer (scripts/audit/checks/tables.py),
written from the same documentation, gives the same bytes."""

import re
import shutil
import subprocess

import pytest
from conftest import audit_module

from rerank_study.report import paper_tables

SUMMARY = {
    "metric": "ndcg@10", "n_queries": 4, "n_groups": 3, "primary": "blend-ce", "threshold": 0.01,
    "scorer": "STAND-IN", "bootstrap": {"B": 1000, "percentiles": [2.5, 97.5], "seed": 1},
    "methods": {  # deliberately not in METHODS order: the tables put rrf, ce, blend
        "blend": {"mean": 0.5, "mean_recall@10": 0.75, "mean_mrr@10": 0.4375},
        "rrf": {"mean": 0.6125, "mean_recall@10": 1.0, "mean_mrr@10": 0.5},
        "ce": {"mean": 0.25, "mean_recall@10": 0.5, "mean_mrr@10": 0.0625},
    },
    "comparisons": {
        "blend-ce": {"a": "blend", "b": "ce", "mean": 0.25, "grouped_interval": [0.0625, 0.4375],
                     "query_interval": [0.125, 0.375], "wins": 2, "ties": 1, "losses": 1,
                     "grouped_covers_0": False, "grouped_covers_threshold": False},
        "ce-rrf": {"a": "ce", "b": "rrf", "mean": -0.3625, "grouped_interval": [-0.5, -0.0005],
                   "query_interval": [-0.4375, -0.25], "wins": 0, "ties": 0, "losses": 4,
                   "grouped_covers_0": False, "grouped_covers_threshold": False},
    },
}

METHODS_CSV = ("method,ndcg@10,recall@10,mrr@10,n_queries\n"
               "rrf,0.6125,1.0,0.5,4\n"
               "ce,0.25,0.5,0.0625,4\n"
               "blend,0.5,0.75,0.4375,4\n")
COMPARISONS_CSV = ("comparison,a,b,primary,mean_delta,grouped_lower,grouped_upper,query_lower,query_upper,"
                   "wins,ties,losses,grouped_covers_0,grouped_covers_threshold,threshold\n"
                   "blend-ce,blend,ce,true,0.25,0.0625,0.4375,0.125,0.375,2,1,1,false,false,0.01\n"
                   "ce-rrf,ce,rrf,false,-0.3625,-0.5,-0.0005,-0.4375,-0.25,0,0,4,false,false,0.01\n")
STANDIN = ("STAND-IN scorer: the CE and blend numbers say nothing about the pinned cross-encoder (a seeded "
           "stand-in head).")
# graphicx: the box's width is the table's natural width (\width) unless that exceeds the line
SHRINK = r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%"
# 3 decimals of the binary value, as printf: 0.6125 is 0.61250000000000004... -> 0.613; 0.4375 is exact and
# rounds half to even -> 0.438; 0.0625 exact -> 0.062; -0.3625 is -0.36249999999999998... -> -0.362; -0.0005
# is -0.00050000000000000001... -> -0.001
METHODS_TEX = "\n".join([
    r"\begin{table}[t]", r"\centering",
    r"\caption{Mean per-query effectiveness over 4 queries. " + STANDIN + "}", r"\label{tab:methods}",
    SHRINK, r"\begin{tabular}{lrrr}", r"\toprule", r"Method & ndcg@10 & recall@10 & mrr@10 \\", r"\midrule",
    r"RRF (frozen candidates) & 0.613 & 1.000 & 0.500 \\", r"Cross-encoder & 0.250 & 0.500 & 0.062 \\",
    r"Blend & 0.500 & 0.750 & 0.438 \\", r"\bottomrule", r"\end{tabular}}", r"\end{table}"]) + "\n"
COMPARISONS_TEX = "\n".join([
    r"\begin{table}[t]", r"\centering",
    r"\caption{Paired differences over 4 queries in 3 evidence groups; intervals from 1000 bootstrap "
    r"replicates (grouped: whole groups drawn). " + STANDIN + "}", r"\label{tab:comparisons}",
    SHRINK, r"\begin{tabular}{lrccc}", r"\toprule",
    r"Comparison & Mean $\Delta$ ndcg@10 & Grouped 95\% interval & Query-level 95\% interval & W/T/L \\",
    r"\midrule",
    r"\textbf{blend - ce}$^\dagger$ & \textbf{0.250} & \textbf{[0.062, 0.438]} & \textbf{[0.125, 0.375]} & "
    r"\textbf{2/1/1} \\",
    r"ce - rrf & $-$0.362 & [$-$0.500, $-$0.001] & [$-$0.438, $-$0.250] & 0/0/4 \\",
    r"\bottomrule", r"\end{tabular}}",
    r"\par\smallskip{\footnotesize $^\dagger$ preregistered primary comparison; threshold 0.010.}",
    r"\end{table}"]) + "\n"
EXPECTED = {"methods.csv": METHODS_CSV, "comparisons.csv": COMPARISONS_CSV, "methods.tex": METHODS_TEX,
            "comparisons.tex": COMPARISONS_TEX}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_table_is_the_hand_written_text(name):
    assert paper_tables.render_all(SUMMARY)[name] == EXPECTED[name]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_audits_own_renderer_gives_the_same_bytes(name):
    assert audit_module("checks.tables").RENDER[name](SUMMARY) == EXPECTED[name]


def test_a_pinned_run_has_no_standin_warning_and_latex_specials_are_escaped():
    pinned = {**SUMMARY, "scorer": "pinned", "metric": "ndcg_cut_10"}
    tex = paper_tables.methods_tex(pinned)
    assert "STAND-IN" not in tex and r"Method & ndcg\_cut\_10 & recall@10" in tex
    assert paper_tables.tex_text("50% & $x_1$ #2 {a} ~^\\") == \
        (r"50\% \& \$x\_1\$ \#2 \{a\} \textasciitilde{}"
                                                                r"\textasciicircum{}\textbackslash{}")


def test_a_wide_table_fits_the_line_when_typeset(tmp_path):
    """Six metrics (a real run's methods table) in the article class: pdflatex reports no overfull box, and
    the one-column table is not blown up to the line (its box stays its natural width)."""
    pdflatex = shutil.which("pdflatex")
    if pdflatex is None:
        pytest.skip("pdflatex is not installed (Debian: apt-get install texlive-latex-recommended)")
    wide = {m: {"mean": 0.5, **{f"mean_{x}": 0.25 for x in ("capped_recall@10", "capped_recall@50", "mrr@10",
                                                           "recall@10", "recall@50")}}
            for m in ("rrf", "ce", "blend")}
    tables = paper_tables.render_all({**SUMMARY, "methods": wide})
    narrow = ("\\setbox0\\hbox{" + paper_tables.SHRINK_TO_LINE + "\n\\begin{tabular}{l}x\\end{tabular}}}"
              "\\typeout{NARROW=\\the\\wd0}")
    (tmp_path / "t.tex").write_text("\\documentclass{article}\n\\usepackage{booktabs,graphicx}\n"
                                    "\\begin{document}\n" + tables["methods.tex"] + tables["comparisons.tex"]
                                    + narrow + "\n\\end{document}\n", encoding="utf-8")
    proc = subprocess.run([pdflatex, "-interaction=nonstopmode", "-halt-on-error", "t.tex"], cwd=tmp_path,
                          capture_output=True, text=True)
    log = (tmp_path / "t.log").read_text(encoding="latin-1")
    assert proc.returncode == 0, log[-3000:]
    assert "Overfull" not in log
    width = float(re.search(r"NARROW=([0-9.]+)pt", log).group(1))
    assert width < 50, width  # "x" in a one-column tabular is about 17pt wide; \linewidth is 345pt
