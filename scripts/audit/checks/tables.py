"""Check 'tables': the paper-ready tables (tables/methods.csv, .tex; tables/comparisons.csv, .tex) are the
ones the audit renders from ITS recomputed summary (``report_facts.shown_summary``), byte for byte. The
renderer below is written from docs/outputs.md ("Paper-ready tables"), not from the pipeline's paper_tables
module. A differing file fails, naming its first differing line."""

from __future__ import annotations

from core.compare import first_difference, item_at
from expected.definitions import METHODS
from read.readers import text_of
from report.report_facts import shown_summary

CHECK = "tables"
KEYS = {"methods.csv": "table_methods_csv", "methods.tex": "table_methods_tex",
        "comparisons.csv": "table_comparisons_csv", "comparisons.tex": "table_comparisons_tex"}
NAMES = {"rrf": "RRF (frozen candidates)", "ce": "Cross-encoder", "blend": "Blend"}
STANDIN_NOTE = (" STAND-IN scorer: the CE and blend numbers say nothing about the pinned cross-encoder (a "
                "seeded stand-in head).")
LATEX_SPECIAL = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
                 "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "\\": r"\textbackslash{}"}


def esc(s: str) -> str:
    return "".join(LATEX_SPECIAL[c] if c in LATEX_SPECIAL else c for c in s)


def num3(x: float) -> str:
    s = format(x, ".3f")
    return s if s[0] != "-" else "$-$" + s[1:]


def cell(v) -> str:
    if v is True or v is False:
        return str(v).lower()
    return repr(v) if isinstance(v, float) else str(v)


def csv_lines(rows) -> str:
    return "".join(",".join(cell(v) for v in r) + "\n" for r in rows)


def metrics_after_primary(s) -> list[str]:
    return [k.removeprefix("mean_") for k in s["methods"]["rrf"] if k.startswith("mean_")]


def ordered_methods(s) -> list[str]:
    return [m for m in METHODS if m in s["methods"]]


def expected_methods_csv(s) -> str:
    extra = metrics_after_primary(s)
    rows = [["method", s["metric"], *extra, "n_queries"]]
    for m in ordered_methods(s):
        rows.append([m, s["methods"][m]["mean"]] + [s["methods"][m]["mean_" + x] for x in extra]
                    + [s["n_queries"]])
    return csv_lines(rows)


def expected_comparisons_csv(s) -> str:
    rows = [["comparison", "a", "b", "primary", "mean_delta", "grouped_lower", "grouped_upper", "query_lower",
             "query_upper", "wins", "ties", "losses", "grouped_covers_0", "grouped_covers_threshold",
             "threshold"]]
    for name, c in s["comparisons"].items():
        (gl, gu), (ql, qu) = c["grouped_interval"], c["query_interval"]
        rows.append([name, c["a"], c["b"], name == s["primary"], c["mean"], gl, gu, ql, qu, c["wins"],
                     c["ties"], c["losses"], c["grouped_covers_0"], c["grouped_covers_threshold"],
                     s["threshold"]])
    return csv_lines(rows)


def table_float(caption, label, columns, header, rows, after=()) -> str:
    out = ["\\begin{table}[t]", "\\centering", "\\caption{" + caption + "}", "\\label{" + label + "}",
           "\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}{%",
           "\\begin{tabular}{" + columns + "}", "\\toprule", " & ".join(header) + " \\\\", "\\midrule"]
    out += [r + " \\\\" for r in rows]
    out += ["\\bottomrule", "\\end{tabular}}", *after, "\\end{table}"]
    return "\n".join(out) + "\n"


def caption_of(s, text: str) -> str:
    return esc(text) + (STANDIN_NOTE if s["scorer"] == "STAND-IN" else "")


def expected_methods_tex(s) -> str:
    extra = metrics_after_primary(s)
    rows = [" & ".join([NAMES.get(m, esc(m)), num3(s["methods"][m]["mean"])]
                       + [num3(s["methods"][m]["mean_" + x]) for x in extra]) for m in ordered_methods(s)]
    return table_float(caption_of(s, "Mean per-query effectiveness over " + str(s["n_queries"])
                                  + " queries."),
                       "tab:methods", "l" + "r" * (len(extra) + 1), ["Method", esc(s["metric"])]
                       + [esc(x) for x in extra], rows)


def expected_comparisons_tex(s) -> str:
    lo, hi = s["bootstrap"]["percentiles"]
    width = format(hi - lo, "g")
    header = ["Comparison", "Mean $\\Delta$ " + esc(s["metric"]), "Grouped " + width + "\\% interval",
              "Query-level " + width + "\\% interval", "W/T/L"]
    rows = []
    for name, c in s["comparisons"].items():
        parts = [esc(c["a"] + " - " + c["b"]), num3(c["mean"]),
                 "[" + ", ".join(num3(x) for x in c["grouped_interval"]) + "]",
                 "[" + ", ".join(num3(x) for x in c["query_interval"]) + "]",
                 "/".join(str(c[k]) for k in ("wins", "ties", "losses"))]
        if name == s["primary"]:
            parts = ["\\textbf{" + parts[0] + "}$^\\dagger$"] + ["\\textbf{" + p + "}" for p in parts[1:]]
        rows.append(" & ".join(parts))
    text = ("Paired differences over {} queries in {} evidence groups; intervals from {} bootstrap "
            "replicates (grouped: whole groups drawn).").format(s["n_queries"], s["n_groups"],
                                                                s["bootstrap"]["B"])
    note = ("\\par\\smallskip{\\footnotesize $^\\dagger$ preregistered primary comparison; threshold "
            + num3(s["threshold"]) + ".}")
    return table_float(caption_of(s, text), "tab:comparisons", "lrccc", header, rows, [note])


RENDER = {"methods.csv": expected_methods_csv, "comparisons.csv": expected_comparisons_csv,
          "methods.tex": expected_methods_tex, "comparisons.tex": expected_comparisons_tex}


def check_tables(run, want, au) -> None:
    s = shown_summary(run, want)
    for name, key in KEYS.items():
        path = run.path(key)
        found, expect = text_of(path), RENDER[name](s)
        f_lines, e_lines = found.splitlines(), expect.splitlines()
        i = first_difference(e_lines, f_lines)
        au.check(CHECK, i is None, str(path),
                 "the whole file" if i is None else f"the whole file (first difference at line {i + 1})",
                 item_at(e_lines, i, "(end of file)"), item_at(f_lines, i, "(end of file)"))
