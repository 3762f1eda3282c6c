"""The markdown report and its figures. Every statistical number comes from summary.json; every
measurement (time, memory) from measurements.json; both are shown with their source."""

from __future__ import annotations

from collections.abc import Mapping

from ..core.names import METHODS, STANDIN_LABEL

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
    for m in sorted(summary["methods"], key=lambda x: METHODS.index(x)):
        vals = summary["methods"][m]
        lines.append(f"| {m} | {f6(vals['mean'])} | " + " | ".join(f6(v) for k, v in vals.items()
                                                                   if k.startswith("mean_"))
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
                     f"{yn(c['query_covers_threshold'])} | {c['wins']}/{c['ties']}/{c['losses']} | "
                     f"{logo_txt} |")
    return lines


DEVELOPMENT_NOTE = ("These queries were used to develop the method: the interval describes resampling "
                    "sensitivity of this sample, not generalisation. The sealed confirmation set decides.")
CONFIRMATION_NOTE = ("These are the sealed confirmation queries, opened under the frozen protocol: this is "
                     "the preregistered test of the method, read against the protocol's threshold and "
                     "decision rule.")


def render(summary: Mapping, measurements: Mapping, provenance: Mapping,
           extra_sections: list[str] | None = None, figures: Mapping[str, str] | None = None,
           title: str = "Development analysis", run: str = "", confirmation: bool = False) -> str:
    out = [f"# {title} — `{run}`", ""]
    if summary.get("scorer") == STANDIN_LABEL:
        out += [STANDIN_BANNER]
    prim = summary["comparisons"][summary["primary"]]
    out += [
        f"Queries analysed: **{summary['n_queries']}**, evidence groups: **{summary['n_groups']}**, "
        f"metric: **{summary['metric']}** (trec_eval ndcg_cut definition), bootstrap B = "
        f"{summary['bootstrap']['B']}, seed {summary['bootstrap']['seed']}, percentiles "
        f"{summary['bootstrap']['percentiles']} (linear interpolation).",
        "",
        f"Primary comparison **{summary['primary']}**: mean Δ = {f6(prim['mean'])}; grouped interval "
        f"{interval_text(prim['grouped_interval'])}; query-level interval "
        f"{interval_text(prim['query_interval'])}; the mean "
        f"{'reaches' if prim['mean_reaches_threshold'] else 'does not reach'} the practical threshold "
        f"{summary['threshold']}. {CONFIRMATION_NOTE if confirmation else DEVELOPMENT_NOTE}",
        "", "## Methods", "", *summary_table(summary), "",
        "## Paired comparisons", "", *comparison_table(summary), "",
        "Grouped interval: evidence groups resampled with replacement, replicate = Σ drawn groups' summed Δ "
        "/ Σ drawn group sizes (query-weighted ratio, never the mean of group means); one index matrix "
        "shared by all comparisons. Query-level interval: each query its own group (sensitivity check).", "",
        "## Evidence groups", "",
        "Queries linked by a shared judged relevant document (qrels only, relevant documents outside the "
        "candidates count); groups are connected components, written before any score was merged.", "",
        "| group size | number of groups |", "|---|---|",
        *[f"| {k} | {v} |" for k, v in summary["group_size_histogram"].items()], "",
        f"## Worst 3 queries of the primary comparison ({summary['primary']})", "",
    ]
    a, b = summary["comparisons"][summary["primary"]]["a"], summary["comparisons"][summary["primary"]]["b"]
    metric = summary["metric"]
    out += [f"| qid | Δ | {a} {metric} | {b} {metric} | first relevant rank ({a}) | first relevant "
            f"rank ({b}) |",
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
    out += ["", "### Measurements (this execution; not reproducible byte for byte)", "", "| item | value |",
            "|---|---|"]
    out += [f"| {k} | {'NA' if v is None else v} |" for k, v in measurements.items()]
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
    if summary.get("scorer") == STANDIN_LABEL:
        title += f" ({STANDIN_LABEL} scorer: meaningless)"
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
    ax.set_title("primary comparison, per query"
                 + (f" ({STANDIN_LABEL})" if summary.get("scorer") == STANDIN_LABEL
                                                    else ""))
    fig.tight_layout()
    fig.savefig(delta_path, dpi=100, metadata={"Software": None})
    plt.close(fig)


def _p(x) -> str:
    return "NA" if x is None else (f"{x:.3g}" if x >= 1e-4 else f"{x:.2e}")


def _plan_lines(summary: Mapping, plan: Mapping) -> list[str]:
    """The declared analysis plan: the primary comparison and each guardrail's verdict."""
    out = ["### Analysis plan (declared in config before results; frozen into the confirmation protocol)", "",
           f"- **PRIMARY**: {plan['primary']['comparison']} on {plan['primary']['metric']} (threshold "
           f"{summary['threshold']}) — see the table above."]
    for name, g in plan["guardrails"].items():
        out.append(f"- **GUARDRAIL** {name}: tolerated loss {g['tolerated_loss']}; grouped lower bound "
                   f"{f6(g['grouped_lower'])} → **{'PASS' if g['pass'] else 'FAIL'}** ({g['rule']}).")
    return out


def _mcnemar_lines(mcnemar: Mapping) -> list[str]:
    """The exact McNemar table and its independence warning."""
    out = ["", "### Exact McNemar on a binary outcome", "",
           f"Outcome: **{mcnemar['outcome']}** (the rank-1 document is judged relevant). Only discordant "
           "queries inform the test.", "",
           "| comparison | gained | lost | unchanged | exact two-sided p | discordant queries in "
           "multi-query groups |",
           "|---|---|---|---|---|---|"]
    for name, c in mcnemar["comparisons"].items():
        out.append(f"| {name} | {c['gained']} | {c['lost']} | {c['unchanged']} | {_p(c['p'])} | "
                   f"{c['discordant_in_multi_query_groups']} |")
    out += ["", f"> Warning: McNemar assumes independent queries. {mcnemar['assumption']}", ""]
    return out


def _recall_and_chance_lines(summary: Mapping, ch: Mapping) -> list[str]:
    """Recall@K beside capped Recall@K per method, and the chance level of the candidate pool."""
    k = ch["k"]
    out = ["### Recall done right, and the chance level of the candidate pool", "",
           "Recall@K divides by |P| (all judged relevant documents); **capped Recall@K** divides by min(|P|, "
           "K) and is a different metric, reported under its own name.", "",
           "| method | " + " | ".join(f"{c[5:]}" for c in summary["methods"]["rrf"] if c.startswith("mean_")
                                      and "recall" in c)
           + " |", "|---|" + "---|" * sum(1 for c in summary["methods"]["rrf"] if c.startswith("mean_")
                                          and "recall" in c)]
    for m in METHODS:
        vals = [v for c, v in summary["methods"][m].items() if c.startswith("mean_") and "recall" in c]
        out.append(f"| {m} | " + " | ".join(f6(v) for v in vals) + " |")
    out += ["", f"Chance level for a uniformly random ordering of the {ch['candidates_per_query']} "
            f"candidates: success@{k} (≥1 relevant in the top {k}) = {f6(ch['mean_chance_success'])}, "
            f"Recall@{k} = {f6(ch['mean_chance_recall'])} (mean over queries; {ch['definition']}). Observed "
            f"success@{k}: "
            + ", ".join(f"{m} {f6(v)}" for m, v in ch["observed_success"].items())
            + ". Queries with no relevant document among the candidates: "
            f"{ch['queries_without_relevant_candidate']}.", ""]
    return out


def _slice_lines(slices: Mapping, metric: str) -> list[str]:
    """One table per declared slice family: per-slice means, raw and declared-weight means."""
    out = ["### Declared slices and weights", ""]
    for fam, f in slices.items():
        out += [f"**{fam}** — {metric}", "", "| slice | n | population share | declared weight | rrf | "
                "ce | blend |",
                "|---|---|---|---|---|---|---|"]
        for s, v in f["slices"].items():
            out.append(f"| {s} | {v['n']} | {f6(v['population_share'])} | {v['weight']} | "
                       + " | ".join(f6(v["means"][m]) for m in METHODS) + " |")
        out.append("| raw population mean | | | | " + " | ".join(f6(f["raw_mean"][m]) for m in METHODS)
                   + " |")
        out.append("| declared-weight mean Σ w_g m_g | | | | "
                   + " | ".join(f6(f["declared_weight_mean"][m]) for m in METHODS) + " |")
        out.append("")
    out += ["NA = an empty stratum with positive weight: the declared-weight mean is undefined, not zero.",
            ""]
    return out


def _exploratory_lines(plan: Mapping) -> list[str]:
    """The exploratory per-slice comparisons (NOT confirmatory) with their adjusted p-values."""
    out = ["### Exploratory per-slice comparisons (NOT confirmatory)", "",
           f"{plan['exploratory_test']}.", "",
           "| family | slice | comparison | n | mean Δ | W/T/L | p | p Holm | p BH |",
           "|---|---|---|---|---|---|---|---|---|"]
    for e in plan["exploratory"]:
        out.append(f"| {e['family']} | {e['slice']} | {e['comparison']} | {e['n']} | {f6(e['mean_delta'])} | "
                   f"{e['wins']}/{e['ties']}/{e['losses']} | {_p(e['p'])} | {_p(e['p_holm'])} | "
                   f"{_p(e['p_bh'])} |")
    return out


def _power_lines(pw: Mapping | None) -> list[str]:
    """The minimum detectable primary Δ of the confirmation set (or why it is not computable)."""
    out = ["", "### Power of the confirmation set", ""]
    if pw is None:
        out.append("Not computable: fewer than two evidence groups.")
    else:
        out += [f"Minimum detectable primary Δ on the {pw['n_confirmation']} confirmation queries at α = "
                f"{pw['alpha']}, power {pw['power']}: **{f6(pw['mde_confirmation'])}** (per-query SD implied "
                f"by the grouped variance of this run: {f6(pw['sd_eff'])}; {pw['formula']}).",
                "For two-proportion A/B sample sizes use "
                "`python -m rerank_study.evalstats sample-size`."]
    return out


def evalstats_section(summary: Mapping) -> str:
    """Report section for the evaluation statistics (numbers from summary['evalstats'])."""
    ev = summary["evalstats"]
    out = ["## Evaluation statistics (McNemar, slices, guardrails, exploratory tests, power)", ""]
    out += _plan_lines(summary, ev["plan"])
    out += _mcnemar_lines(ev["mcnemar"])
    out += _recall_and_chance_lines(summary, ev["chance"])
    out += _slice_lines(ev["slices"], summary["metric"])
    out += _exploratory_lines(ev["plan"])
    out += _power_lines(ev["power"])
    return "\n".join(out) + "\n"


PUBLISHED = {"BM25 (bm25s) top-100": ("BEIR paper, Anserini BM25", 0.665),
             "dense all-MiniLM-L6-v2 top-100": ("MTEB leaderboard, all-MiniLM-L6-v2", 0.6451)}


def fresh_scores_line(scoring: Mapping) -> str:
    """An opening's cross-encoder scores: inferred fresh (the scoring record's counts)."""
    return (f"- Scores inferred fresh for this opening: {scoring.get('pairs_inferred')} of "
            f"{scoring.get('pairs')} pairs (the score cache was not read: fresh_inference "
            f"{scoring.get('fresh_inference')}); {scoring.get('cache_entries_verified')} cached batches were "
            "re-inferred and found byte-identical.")


def run_file_scores_line(record: Mapping) -> str:
    """An opening's run-file reranker scores: read from the run submitted when the protocol was frozen."""
    return (f"- Scores read from the run file `{record['file']}`, sha256 `{record['sha256']}`: "
            "blind-submitted and pinned in the protocol when it was frozen, before any opening "
            f"({record['pairs']} scores of {record['queries']} queries; nothing was inferred).")


def reranker_run_section(record: Mapping) -> str:
    """A run-file reranker: what it is (the pinned file, its sha256), how it is read, and the queries it ties
    whole (a warning: those are ranked by document id)."""
    from ..reranker.reranker_run import TIE_WARNING

    tied = record["all_tied_queries"]
    return "\n".join([
        "## The reranker: a pinned run file", "",
        f"- `{record['identity']}`, sha256 `{record['sha256']}`: {record['pairs']} scores of "
        f"{record['queries']} queries, read in the order {record['tie_rule']}. No model was loaded, nothing "
        "was inferred.",
        f"- **WARNING: {len(tied)} quer{'y' if len(tied) == 1 else 'ies'} ({', '.join(tied)}): "
        f"{TIE_WARNING}.**" if tied
        else "- No query has one score for all its candidates."]) + "\n"


def opened_section(opening: Mapping, started: Mapping, scores_line: str) -> list[str]:
    """What was opened (the sealed file, its pinned hash, the data URL), when (the ledger's 'started'
    line, written before the judgements were copied), the protocol, earlier openings, where the scores came
    from."""
    import json

    e = started["entry"]
    unfinished = ", ".join(f"{u['opening']} (started {u['time']}, ledger line {u['line']})"
                           for u in opening["unfinished"])
    return ["## What was opened, when, under which protocol", "",
            f"- Sealed confirmation judgements **`{e['sealed_file']}`**, sha256 `{e['sealed_sha256']}` (its "
            f"pin in data_pins.json; order-independent content sha256 `{e['sealed_content_sha256']}`), from "
            f"the BEIR archive <{e['data_url']}>; this copy came from: {started['copied_from']}.",
            f"- Opened at **{e['time']}** (UTC): opening {e['opening']} of protocol "
            f"`{e['protocol_sha256']}`, recorded BEFORE the judgements were copied, in `{started['ledger']}` "
            f"line {started['line']}:", "",
            "```json", json.dumps(e, sort_keys=True, ensure_ascii=True), "```", "",
            f"- Earlier openings of this protocol: completed {opening['completed'] or 'none'}; started and "
            f"never completed: {unfinished or 'none'}.",
            scores_line, ""]


def confirmation_section(summary: Mapping, opening: Mapping, retrievers: Mapping[str, float],
                         started: Mapping, scores_line: str) -> str:
    """What was opened and when, the decision under the frozen protocol, whatever the outcome, and the
    retrievers for context."""
    prim = summary["comparisons"][summary["primary"]]
    thr = summary["threshold"]
    out = []
    if opening["labels"]:
        out += [f"> **{' / '.join(opening['labels'])}** — this opening was let through by test-only "
                "switches; it is not a confirmation result.", ""]
    out += opened_section(opening, started, scores_line)
    out += ["## Decision under the frozen protocol", "",
            f"Protocol sha256 `{opening['protocol_sha256']}`, opening {opening['opening']}. "
            f"Bootstrap seed {summary['bootstrap']['seed']}, B = {summary['bootstrap']['B']}.", "",
            f"- Mean {summary['primary']} Δ {summary['metric']} = **{f6(prim['mean'])}**; the practical "
            f"threshold {thr} is **{'REACHED' if prim['mean_reaches_threshold'] else 'NOT REACHED'}** "
            f"({'supports' if prim['mean_reaches_threshold'] else 'does not support'} the practical "
            "hypothesis).",
            f"- Grouped interval {interval_text(prim['grouped_interval'])}: covers 0 — "
            f"{yn(prim['grouped_covers_0'])}; covers {thr} — {yn(prim['grouped_covers_threshold'])}.",
            f"- Query-level interval {interval_text(prim['query_interval'])}: covers 0 — "
            f"{yn(prim['query_covers_0'])}; covers {thr} — {yn(prim['query_covers_threshold'])}.",
            "- This result is final for this protocol: no re-tuning and re-testing on these queries.", "",
            "### First-stage retrievers on the confirmation queries (context only)", "",
            "| retriever | nDCG@10 here | published | source |", "|---|---|---|---|"]
    for name, v in retrievers.items():
        src, val = PUBLISHED.get(name, ("—", None))
        out.append(f"| {name} | {f6(v)} | {'' if val is None else val} | {src} |")
    return "\n".join(out) + "\n"
