"""The synthesis across datasets as a table (TSV), a LaTeX table like the study's, a markdown section for the
cross-study report (synthesis.md, which links forest.png), a forest plot, and synthesis.md as one
self-contained page (synthesis.html: report_html's renderer, forest.png inlined): renderings of
``synthesis.json``, no number computed here.

The TSV: the rows of the pooled answer (``role`` empty), then one row per (dataset × comparison) test of the
family block (``role`` ``family`` with its Holm and BH adjusted p-values, or ``exploratory`` without)."""

from __future__ import annotations

from collections.abc import Mapping

from ..core.fileio import fmt_float
from ..report import report_html
from ..report.paper_tables import interval_tex, table_float, tex_number, tex_text
from ..report.report import f6

TSV_HEADER = ("row", "n_queries", "n_groups", "estimate", "se", "lower", "upper", "sign")
TEST_HEADER = ("comparison", "role", "p", "p_holm", "p_bh")
FOREST = "forest.png"  # the forest plot, beside synthesis.md (its link) and inlined in synthesis.html
FOREST_LINE = (f"![forest plot: each dataset's primary Δ with its grouped interval, the pooled Δ and the "
               f"random-effects estimate]({FOREST})")


def blank(x) -> object:
    return "" if x is None else x


def table_rows(result: Mapping) -> list[tuple]:
    """The pooled answer's rows (their comparison, no test), then one row per test of the family block."""
    out = [(*r, result.get("comparison", ""), "", "", "", "") for r in rows(result)]
    return out + [(t["dataset"], t["n_queries"], t["n_groups"], t["mean"], "", "", "", "", t["comparison"],
                   t["role"], t["p"], blank(t["p_holm"]), blank(t["p_bh"]))
                  for t in result.get("family", {}).get("rows", [])]


def rows(result: Mapping) -> list[tuple]:
    """One row per dataset, then the pooled Δ, the fixed effect, the random effect (HKSJ interval) and the
    prediction interval for a new dataset."""
    out = [(d["dataset"], d["n_queries"], d["n_groups"], d["mean"], d["se"], *d["grouped_interval"],
            d["sign"]) for d in result["datasets"]]
    p, m = result["pooled"], result["meta_analysis"]
    n = sum(d["n_queries"] for d in result["datasets"])
    g = sum(d["n_groups"] for d in result["datasets"])
    out.append((f"pooled ({p['weighting']})", n, g, p["estimate"], "", *p["interval"], ""))
    out.append(("fixed effect", n, g, m["fixed_effect"], m["fixed_effect_se"], "", "", ""))
    out.append((f"random effects ({m['tau2_method']}, HKSJ)", n, g, m["random_effect"],
                m["random_effect_se"], *m["hksj_interval"], ""))
    if m["prediction_interval"] is not None:
        out.append(("prediction (a new dataset)", "", "", m["random_effect"], "", *m["prediction_interval"],
                    ""))
    return out


def tsv(result: Mapping) -> str:
    def cell(x):
        return fmt_float(x) if isinstance(x, float) else str(x)
    return "".join("\t".join(cell(x) for x in row) + "\n"
                   for row in [TSV_HEADER + TEST_HEADER, *table_rows(result)])


def tex(result: Mapping) -> str:
    level = f"{100 * result['declared']['level']:g}\\% interval"
    head = ["Dataset", "$n$", "Groups", "Mean $\\Delta$", "SE", level]
    body = [" & ".join([tex_text(d["dataset"]), str(d["n_queries"]), str(d["n_groups"]),
                        tex_number(d["mean"]), tex_number(d["se"]), interval_tex(d["grouped_interval"])])
            for d in result["datasets"]]
    p, m = result["pooled"], result["meta_analysis"]
    body.append(" & ".join([f"\\textbf{{Pooled ({tex_text(p['weighting'])})}}", "", "",
                            f"\\textbf{{{tex_number(p['estimate'])}}}", "", interval_tex(p["interval"])]))
    body.append(" & ".join([tex_text(f"Random effects ({m['tau2_method']}, HKSJ)"), "", "",
                            tex_number(m["random_effect"]), tex_number(m["random_effect_se"]),
                            interval_tex(m["hksj_interval"])]))
    tau2 = m["tau2_" + m["tau2_method"].replace("-", "_")]
    caption = tex_text(f"The primary Δ across {len(result['datasets'])} datasets; pooled interval from "
                       f"{p['B']} stratified grouped bootstrap replicates (groups drawn within each "
                       f"dataset); I² = {m['i2']:.2f}, τ² = {tau2:.2g}.")
    return table_float(caption, "tab:synthesis", "lrrrrc", head, body) + family_tex(result)


def p_tex(p) -> str:
    return "" if p is None else f"{p:.3g}"


def family_tex(result: Mapping) -> str:
    """The family of tests as a second table ("" without a family block)."""
    if "family" not in result:
        return ""
    f = result["family"]
    head = ["Dataset", "Comparison", "Role", "Mean $\\Delta$", "$p$", "$p$ Holm", "$p$ BH"]
    body = [" & ".join([tex_text(t["dataset"]), tex_text(t["comparison"]), tex_text(t["role"]),
                        tex_number(t["mean"]), p_tex(t["p"]), p_tex(t["p_holm"]), p_tex(t["p_bh"])])
            for t in f["rows"]]
    names = ", ".join(f["declared"])
    caption = tex_text(f"The declared family of {f['m']} tests ({names} in every dataset): "
                       f"grouped sign-flip randomization p-values ({f['B']} sign patterns), Holm and "
                       "Benjamini-Hochberg adjusted over the family; exploratory rows are not adjusted.")
    return "\n" + table_float(caption, "tab:synthesis-family", "lllrrrr", head, body)


def markdown(result: Mapping) -> list[str]:
    """The section of the cross-study report."""
    p, m, c = result["pooled"], result["meta_analysis"], result["consistency"]
    lines = ["## Across datasets", "",
             f"Pooled primary Δ ({p['weighting']} weighting, declared before results): "
             f"**{f6(p['estimate'])}**, interval [{f6(p['interval'][0])}, {f6(p['interval'][1])}] from "
             f"{p['B']} stratified grouped bootstrap replicates (seed {p['seed']}). The plain mean of the "
             f"datasets' means is {f6(result['plain_mean_of_means'])}.", "",
             f"Random effects ({m['tau2_method']}): {f6(m['random_effect'])}, HKSJ interval "
             f"[{f6(m['hksj_interval'][0])}, {f6(m['hksj_interval'][1])}]; I² = {m['i2']:.3f}, Cochran's Q = "
             f"{m['q']:.3f} on {m['q_df']} df (p = {m['q_pvalue']:.3g}).", "",
             f"Datasets whose grouped interval lies above 0: {c['above 0']}, covers 0: {c['covers 0']}, "
             f"below 0: {c['below 0']}.", "", "| " + " | ".join(TSV_HEADER) + " |",
             "|" + "---|" * len(TSV_HEADER)]
    lines += ["| " + " | ".join(f6(x) if isinstance(x, float) else str(x) for x in row) + " |"
              for row in rows(result)]
    return lines + ["", FOREST_LINE, ""] + family_markdown(result)


def p_md(p) -> str:
    return "NA" if p is None else f"{p:.4g}"


def family_markdown(result: Mapping) -> list[str]:
    if "family" not in result:
        return []
    f = result["family"]
    lines = ["### The declared family of tests", "",
             f"Declared before results: {', '.join(f['declared'])} in every dataset, m = {f['m']} tests. "
             f"p: {f['test']} (B = {f['B']}); adjusted: {f['adjustment']}.", "",
             "| dataset | comparison | role | mean Δ | p | p Holm | p BH |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {t['dataset']} | {t['comparison']} | {t['role']} | {f6(t['mean'])} | {p_md(t['p'])} | "
              f"{p_md(t['p_holm'])} | {p_md(t['p_bh'])} |" for t in f["rows"]]
    return lines + [""]


def forest(result: Mapping, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rs = rows(result)
    fig, ax = plt.subplots(figsize=(7, 1.0 + 0.45 * len(rs)))
    for i, r in enumerate(rs):
        y = len(rs) - 1 - i
        if r[5] != "":
            ax.plot([r[5], r[6]], [y, y], color="tab:blue" if i < len(result["datasets"]) else "black", lw=2)
        ax.plot([r[3]], [y], "s" if i < len(result["datasets"]) else "D", color="black", ms=5)
    ax.axvline(0.0, color="grey", lw=1)
    ax.set_yticks(range(len(rs)))
    ax.set_yticklabels([str(r[0]) for r in reversed(rs)], fontsize=8)
    ax.set_xlabel("primary Δ")
    ax.set_title("across datasets")
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=100, metadata={"Software": None})  # no date in a PNG
    plt.close(fig)


def page(markdown_text: str, forest_png: bytes, studies) -> str:
    """synthesis.html: synthesis.md's text rendered by report_html's rules, forest.png's bytes inlined as a
    data URI (nothing loaded from outside the page), titled by the studies."""
    title = "Across datasets: " + " + ".join(studies)
    return report_html.document(markdown_text, {FOREST: forest_png}, title, source="synthesis.md")
