"""Paper-ready tables of a run, from summary.json only (pure: summary -> text; the layout is docs/outputs.md).

* ``tables/methods.csv``: one row per method: its mean of the primary metric and of every other per-query
  metric (full precision, ``repr``), and the number of queries.
* ``tables/comparisons.csv``: one row per comparison (Δ = a - b): primary or not, mean Δ, both intervals,
  W/T/L, the interval verdicts.
* ``tables/methods.tex`` / ``tables/comparisons.tex``: the same as LaTeX ``table`` floats with booktabs rules
  (``\\toprule``, ``\\midrule``, ``\\bottomrule``) inside a ``\\resizebox`` that shrinks a table wider than
  the line to ``\\linewidth`` (needs ``\\usepackage{booktabs,graphicx}``), means to 3 decimals, intervals in
  brackets, a minus sign in math mode, the primary comparison in bold and marked with a dagger, the STAND-IN
  warning in the caption of a stand-in run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..core.names import METHODS, STANDIN_LABEL

STANDIN_CAPTION = ("STAND-IN scorer: the CE and blend numbers say nothing about the pinned cross-encoder "
                   "(a seeded stand-in head).")
METHOD_LABEL = {"rrf": "RRF (frozen candidates)", "ce": "Cross-encoder", "blend": "Blend"}
# graphicx's \resizebox with a width that is the natural width unless it exceeds the line: a wide table
# is scaled down to \linewidth, a narrow one is left as it is
SHRINK_TO_LINE = "\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}{%"
TEX_ESCAPES = {"\\": "\\textbackslash{}", "&": "\\&", "%": "\\%", "$": "\\$", "#": "\\#", "_": "\\_",
               "{": "\\{", "}": "\\}", "~": "\\textasciitilde{}", "^": "\\textasciicircum{}"}


def tex_text(text: str) -> str:
    return "".join(TEX_ESCAPES.get(c, c) for c in text)


def tex_number(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` decimals, a negative number with a math-mode minus ("$-$0.123")."""
    text = f"{x:.{digits}f}"
    return "$-$" + text[1:] if text.startswith("-") else text


def csv_cell(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def csv_text(header: Sequence[str], rows: Sequence[Sequence]) -> str:
    return "".join(",".join(csv_cell(v) for v in row) + "\n" for row in [header, *rows])


def methods_in_order(summary: Mapping) -> list[str]:
    return sorted(summary["methods"], key=METHODS.index)


def other_metrics(summary: Mapping) -> list[str]:
    """The per-query metrics besides the primary one, in summary.json's order (``mean_<metric>`` keys)."""
    return [k[len("mean_"):] for k in summary["methods"]["rrf"] if k.startswith("mean_")]


def methods_csv(summary: Mapping) -> str:
    metric, others = summary["metric"], other_metrics(summary)
    rows = [[m, summary["methods"][m]["mean"], *(summary["methods"][m][f"mean_{x}"] for x in others),
             summary["n_queries"]] for m in methods_in_order(summary)]
    return csv_text(["method", metric, *others, "n_queries"], rows)


COMPARISON_COLUMNS = ("comparison", "a", "b", "primary", "mean_delta", "grouped_lower", "grouped_upper",
                      "query_lower", "query_upper", "wins", "ties", "losses", "grouped_covers_0",
                      "grouped_covers_threshold", "threshold")


def comparisons_csv(summary: Mapping) -> str:
    rows = []
    for name, c in summary["comparisons"].items():
        rows.append([name, c["a"], c["b"], name == summary["primary"], c["mean"], *c["grouped_interval"],
                     *c["query_interval"], c["wins"], c["ties"], c["losses"], c["grouped_covers_0"],
                     c["grouped_covers_threshold"], summary["threshold"]])
    return csv_text(COMPARISON_COLUMNS, rows)


def _caption(summary: Mapping, text: str) -> str:
    standin = " " + STANDIN_CAPTION if summary["scorer"] == STANDIN_LABEL else ""
    return tex_text(text) + standin


def table_float(caption: str, label: str, spec: str, head: Sequence[str], body: Sequence[str],
           notes: Sequence[str] = ()) -> str:
    lines = ["\\begin{table}[t]", "\\centering", f"\\caption{{{caption}}}", f"\\label{{{label}}}",
             SHRINK_TO_LINE, f"\\begin{{tabular}}{{{spec}}}", "\\toprule", " & ".join(head) + " \\\\",
             "\\midrule",
             *(row + " \\\\" for row in body), "\\bottomrule", "\\end{tabular}}", *notes, "\\end{table}"]
    return "\n".join(lines) + "\n"


def methods_tex(summary: Mapping) -> str:
    metric, others = summary["metric"], other_metrics(summary)
    head = ["Method", tex_text(metric), *(tex_text(x) for x in others)]
    body = [" & ".join([METHOD_LABEL.get(m, tex_text(m)), tex_number(summary["methods"][m]["mean"]),
                        *(tex_number(summary["methods"][m][f"mean_{x}"]) for x in others)])
            for m in methods_in_order(summary)]
    caption = _caption(summary, f"Mean per-query effectiveness over {summary['n_queries']} queries.")
    return table_float(caption, "tab:methods", "l" + "r" * (1 + len(others)), head, body)


def interval_tex(iv: Sequence[float]) -> str:
    return f"[{tex_number(iv[0])}, {tex_number(iv[1])}]"


def comparisons_tex(summary: Mapping) -> str:
    lo, hi = summary["bootstrap"]["percentiles"]
    head = ["Comparison", f"Mean $\\Delta$ {tex_text(summary['metric'])}", f"Grouped {hi - lo:g}\\% interval",
            f"Query-level {hi - lo:g}\\% interval", "W/T/L"]
    body = []
    for name, c in summary["comparisons"].items():
        cells = [tex_text(f"{c['a']} - {c['b']}"), tex_number(c["mean"]), interval_tex(c["grouped_interval"]),
                 interval_tex(c["query_interval"]), f"{c['wins']}/{c['ties']}/{c['losses']}"]
        if name == summary["primary"]:
            cells = [f"\\textbf{{{cells[0]}}}$^\\dagger$", *(f"\\textbf{{{x}}}" for x in cells[1:])]
        body.append(" & ".join(cells))
    caption = _caption(summary, f"Paired differences over {summary['n_queries']} queries in "
                                f"{summary['n_groups']} evidence groups; intervals from "
                                f"{summary['bootstrap']['B']} bootstrap replicates (grouped: whole groups "
                                "drawn).")
    note = [f"\\par\\smallskip{{\\footnotesize $^\\dagger$ preregistered primary comparison; threshold "
            f"{tex_number(summary['threshold'])}.}}"]
    return table_float(caption, "tab:comparisons", "lrccc", head, body, note)


def render_all(summary: Mapping) -> dict[str, str]:
    """{file name inside tables/: text} of the four tables."""
    return {"methods.csv": methods_csv(summary), "comparisons.csv": comparisons_csv(summary),
            "methods.tex": methods_tex(summary), "comparisons.tex": comparisons_tex(summary)}
