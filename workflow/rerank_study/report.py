"""The markdown report and its figures. Every statistical number comes from summary.json; every
measurement (time, memory) from measurements.json; both are shown with their source."""

from __future__ import annotations

from typing import Mapping

STANDIN_BANNER = (
    "> **STAND-IN SCORER.** The cross-encoder scores in this run come from the STAND-IN (the pinned\n"
    "> model's architecture with all-MiniLM-L6-v2 encoder weights and a seeded classification head).\n"
    "> They carry NO meaning: every CE and blend number below says nothing about\n"
    "> cross-encoder/ms-marco-MiniLM-L6-v2. Token counts, shapes and timings are real.\n"
)


def f6(x) -> str:
    return "NA" if x is None else f"{x:.6f}"


def interval_text(iv) -> str:
    return f"[{f6(iv[0])}, {f6(iv[1])}]"


def yn(b: bool) -> str:
    return "yes" if b else "no"


def summary_table(summary: Mapping) -> list[str]:
    metric = summary["metric"]
    lines = [f"| method | mean {metric} | " + " | ".join(f"mean {k[5:]}" for k in summary["methods"]["rrf"]
                                                        if k.startswith("mean_")) + " |"]
    lines.append("|" + "---|" * (1 + len(summary["methods"]["rrf"])))
    for m in sorted(summary["methods"], key=lambda x: ("rrf", "ce", "blend").index(x)):
        vals = summary["methods"][m]
        lines.append(f"| {m} | {f6(vals['mean'])} | " + " | ".join(f6(v) for k, v in vals.items() if k.startswith("mean_"))
                     + " |")
    return lines


def comparison_table(summary: Mapping) -> list[str]:
    lo, hi = summary["bootstrap"]["percentiles"]
    thr = summary["threshold"]
    lines = [f"| comparison | mean Δ | grouped {lo}–{hi} % interval | query-level {lo}–{hi} % interval | "
             f"grouped covers 0 | grouped covers {thr} | query covers 0 | query covers {thr} | W/T/L | "
             "leave-one-group-out range (influence, not an interval) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, c in summary["comparisons"].items():
        tag = " (primary)" if name == summary["primary"] else ""
        logo = c["leave_one_group_out"]
        logo_txt = "NA (one group)" if logo is None else f"{f6(logo['min'])} … {f6(logo['max'])}"
        lines.append(f"| {name}{tag} | {f6(c['mean'])} | {interval_text(c['grouped_interval'])} | "
                     f"{interval_text(c['query_interval'])} | {yn(c['grouped_covers_0'])} | "
                     f"{yn(c['grouped_covers_threshold'])} | {yn(c['query_covers_0'])} | "
                     f"{yn(c['query_covers_threshold'])} | {c['wins']}/{c['ties']}/{c['losses']} | {logo_txt} |")
    return lines


def render(summary: Mapping, measurements: Mapping, provenance: Mapping, extra_sections: list[str] | None = None,
           figures: Mapping[str, str] | None = None, title: str = "Development analysis") -> str:
    out = [f"# {title} — run `{summary['run']}`", ""]
    if summary.get("scorer") == "STAND-IN":
        out += [STANDIN_BANNER]
    prim = summary["comparisons"][summary["primary"]]
    out += [
        f"Queries analysed: **{summary['n_queries']}**, evidence groups: **{summary['n_groups']}**, "
        f"metric: **{summary['metric']}** (trec_eval ndcg_cut definition), bootstrap B = {summary['bootstrap']['B']}, "
        f"seed {summary['bootstrap']['seed']}, percentiles {summary['bootstrap']['percentiles']} (linear interpolation).",
        "",
        f"Primary comparison **{summary['primary']}**: mean Δ = {f6(prim['mean'])}; grouped interval "
        f"{interval_text(prim['grouped_interval'])}; query-level interval {interval_text(prim['query_interval'])}; "
        f"the mean {'reaches' if prim['mean_reaches_threshold'] else 'does not reach'} the practical threshold "
        f"{summary['threshold']}. These queries were used to develop the method: the interval describes resampling "
        "sensitivity of this sample, not generalisation. The sealed confirmation set decides.",
        "", "## Methods", "", *summary_table(summary), "",
        "## Paired comparisons", "", *comparison_table(summary), "",
        "Grouped interval: evidence groups resampled with replacement, replicate = Σ drawn groups' summed Δ / Σ drawn "
        "group sizes (query-weighted ratio, never the mean of group means); one index matrix shared by all "
        "comparisons. Query-level interval: each query its own group (sensitivity check).", "",
        "## Evidence groups", "",
        "Queries linked by a shared judged relevant document (qrels only, relevant documents outside the candidates "
        "count); groups are connected components, written before any score was merged.", "",
        "| group size | number of groups |", "|---|---|",
        *[f"| {k} | {v} |" for k, v in summary["group_size_histogram"].items()], "",
        f"## Worst 3 queries of the primary comparison ({summary['primary']})", "",
    ]
    a, b = summary["comparisons"][summary["primary"]]["a"], summary["comparisons"][summary["primary"]]["b"]
    metric = summary["metric"]
    out += [f"| qid | Δ | {a} {metric} | {b} {metric} | first relevant rank ({a}) | first relevant rank ({b}) |",
            "|---|---|---|---|---|---|"]
    for w in summary["worst_primary"]:
        out.append(f"| {w['qid']} | {f6(w['delta'])} | {f6(w[f'{a}_{metric}'])} | {f6(w[f'{b}_{metric}'])} | "
                   f"{w.get(f'{a}_first_rel_rank') or 'none'} | {w.get(f'{b}_first_rel_rank') or 'none'} |")
    if "repair" in summary:
        r = summary["repair"]
        out += ["", "## What the blend repairs and what it costs", "",
                f"- CE losses against RRF: {r['ce_losses_vs_rrf']}; repaired by the blend (blend > CE): "
                f"{r['repaired_by_blend']}.",
                f"- CE wins against RRF: {r['ce_wins_vs_rrf']}; weakened by the blend (blend < CE): "
                f"{r['weakened_by_blend']}."]
    for section in extra_sections or []:
        out += ["", section.rstrip()]
    if figures:
        out += ["", "## Figures", ""] + [f"![{k}]({v})" for k, v in figures.items()]
    out += ["", "## Provenance", "", "### Pins and input hashes", "", "| item | value |", "|---|---|"]
    out += [f"| {k} | `{v}` |" for k, v in provenance.items()]
    out += ["", "### Measurements (this execution; not reproducible byte for byte)", "", "| item | value |", "|---|---|"]
    out += [f"| {k} | {v} |" for k, v in measurements.items()]
    return "\n".join(out) + "\n"


def plots(summary: Mapping, primary_deltas, forest_path, delta_path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(summary["comparisons"])
    fig, ax = plt.subplots(figsize=(7, 0.9 + 0.9 * len(names)))
    for i, n in enumerate(names):
        c = summary["comparisons"][n]
        y = len(names) - 1 - i
        ax.plot(c["grouped_interval"], [y + 0.12] * 2, color="tab:blue", lw=3,
                label="grouped interval" if i == 0 else None)
        ax.plot(c["query_interval"], [y - 0.12] * 2, color="tab:orange", lw=3,
                label="query-level interval" if i == 0 else None)
        ax.plot([c["mean"]], [y], "ko", label="mean Δ" if i == 0 else None)
    ax.axvline(0.0, color="grey", ls="-", lw=1)
    ax.axvline(summary["threshold"], color="red", ls="--", lw=1, label=f"threshold {summary['threshold']}")
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(list(reversed(names)))
    ax.set_xlabel(f"mean Δ {summary['metric']}")
    title = "paired comparisons"
    if summary.get("scorer") == "STAND-IN":
        title += " (STAND-IN scorer: meaningless)"
    ax.set_title(title)
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(forest_path, dpi=100, metadata={"Software": None})
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.hist(primary_deltas, bins=21, color="tab:blue", edgecolor="white")
    ax.axvline(0.0, color="grey", lw=1)
    ax.set_xlabel(f"per-query Δ {summary['metric']} ({summary['primary']})")
    ax.set_ylabel("queries")
    ax.set_title("primary comparison, per query" + (" (STAND-IN)" if summary.get("scorer") == "STAND-IN" else ""))
    fig.tight_layout()
    fig.savefig(delta_path, dpi=100, metadata={"Software": None})
    plt.close(fig)
