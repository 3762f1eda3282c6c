"""report.md's statistical body as the report's specification writes it, rendered by the audit from what the
audit itself recomputed: ``s`` is ``expected_summary`` in the form summary.json holds it (canonical JSON:
every mapping in key order) - the head sentences, the methods and comparisons tables, the group-size
histogram, the worst queries of the primary comparison, the repair counts and the evaluation statistics
section (guardrail verdicts, McNemar, recall and chance, slices, exploratory tests, power). Each function
returns the report's lines in order; ``report_check`` compares them with report.md line by line."""

from __future__ import annotations

import report_prose as prose
from definitions import METHODS
from report_lines import Free


def f6(x) -> str:
    return "NA" if x is None else f"{x:.6f}"


def interval_text(iv) -> str:
    return f"[{f6(iv[0])}, {f6(iv[1])}]"


def yn(b: bool) -> str:
    return "yes" if b else "no"


def p3(x) -> str:
    """A p-value: 3 significant digits, or 2 decimals in exponent notation below 1e-4."""
    return "NA" if x is None else (f"{x:.3g}" if x >= 1e-4 else f"{x:.2e}")


def head_lines(s: dict, title: str, standin: bool) -> list[str]:
    """The title, the STAND-IN banner (exactly when the scorer is the stand-in) and the two head sentences."""
    out = [title, ""] + ([prose.STANDIN_BANNER] if standin else [])
    prim, bs = s["comparisons"][s["primary"]], s["bootstrap"]
    out += [
        f"Queries analysed: **{s['n_queries']}**, evidence groups: **{s['n_groups']}**, metric: "
        f"**{s['metric']}** (trec_eval ndcg_cut definition), bootstrap B = {bs['B']}, seed {bs['seed']}, "
        f"percentiles {bs['percentiles']} (linear interpolation).", "",
        f"Primary comparison **{s['primary']}**: mean Δ = {f6(prim['mean'])}; grouped interval "
        f"{interval_text(prim['grouped_interval'])}; query-level interval "
        f"{interval_text(prim['query_interval'])}; the mean "
        f"{'reaches' if prim['mean_reaches_threshold'] else 'does not reach'} the practical threshold "
        f"{s['threshold']}. {prose.DEVELOPMENT_CAVEAT}", ""]
    return out


def methods_table(s: dict) -> list[str]:
    rrf = s["methods"]["rrf"]
    others = [k for k in rrf if k.startswith("mean_")]
    out = [f"| method | mean {s['metric']} | " + " | ".join(f"mean {k[5:]}" for k in others) + " |",
           "|" + "---|" * (1 + len(rrf))]
    for m in sorted(s["methods"], key=METHODS.index):
        vals = s["methods"][m]
        out.append(f"| {m} | {f6(vals['mean'])} | "
                   + " | ".join(f6(v) for k, v in vals.items() if k.startswith("mean_")) + " |")
    return out


def comparisons_table(s: dict) -> list[str]:
    lo, hi = s["bootstrap"]["percentiles"]
    thr = s["threshold"]
    out = [f"| comparison | mean Δ | grouped {lo}–{hi} % interval | query-level {lo}–{hi} % interval | "
           f"grouped covers 0 | grouped covers {thr} | query covers 0 | query covers {thr} | W/T/L | "
           "leave-one-group-out range (influence, not an interval) |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for name, c in s["comparisons"].items():
        tag = " (primary)" if name == s["primary"] else ""
        logo = c["leave_one_group_out"]
        logo_txt = "NA (one group)" if logo is None else f"{f6(logo['min'])} … {f6(logo['max'])}"
        out.append(f"| {name}{tag} | {f6(c['mean'])} | {interval_text(c['grouped_interval'])} | "
                   f"{interval_text(c['query_interval'])} | {yn(c['grouped_covers_0'])} | "
                   f"{yn(c['grouped_covers_threshold'])} | {yn(c['query_covers_0'])} | "
                   f"{yn(c['query_covers_threshold'])} | {c['wins']}/{c['ties']}/{c['losses']} | "
                   f"{logo_txt} |")
    return out


def groups_and_worst(s: dict) -> list[str]:
    """The group-size histogram, the worst 3 queries of the primary comparison and the repair counts."""
    out = ["## Evidence groups", "", prose.EVIDENCE_GROUPS_NOTE, "", "| group size | number of groups |",
           "|---|---|", *[f"| {k} | {v} |" for k, v in s["group_size_histogram"].items()], "",
           f"## Worst 3 queries of the primary comparison ({s['primary']})", ""]
    a, b = s["comparisons"][s["primary"]]["a"], s["comparisons"][s["primary"]]["b"]
    metric = s["metric"]
    out += [f"| qid | Δ | {a} {metric} | {b} {metric} | first relevant rank ({a}) | first relevant "
            f"rank ({b}) |",
            "|---|---|---|---|---|---|"]
    for w in s["worst_primary"]:
        out.append(f"| {w['qid']} | {f6(w['delta'])} | {f6(w[f'{a}_{metric}'])} | {f6(w[f'{b}_{metric}'])} | "
                   f"{w.get(f'{a}_first_rel_rank') or 'none'} | {w.get(f'{b}_first_rel_rank') or 'none'} |")
    r = s["repair"]
    out += ["", "## What the blend repairs and what it costs", "",
            f"- CE losses against RRF: {r['ce_losses_vs_rrf']}; repaired by the blend (blend > CE): "
            f"{r['repaired_by_blend']}.",
            f"- CE wins against RRF: {r['ce_wins_vs_rrf']}; weakened by the blend (blend < CE): "
            f"{r['weakened_by_blend']}."]
    return out


def body_lines(s: dict) -> list[str]:
    """From the methods table to the repair counts (after the head sentences)."""
    return ["## Methods", "", *methods_table(s), "", "## Paired comparisons", "", *comparisons_table(s), "",
            prose.GROUPED_INTERVAL_NOTE, "", *groups_and_worst(s)]


def plan_lines(s: dict, plan: dict) -> list[str]:
    """The declared analysis plan: the primary comparison and each guardrail's verdict."""
    out = ["### Analysis plan (declared in config before results; frozen into the confirmation protocol)", "",
           f"- **PRIMARY**: {plan['primary']['comparison']} on {plan['primary']['metric']} (threshold "
           f"{s['threshold']}) — see the table above."]
    for name, g in plan["guardrails"].items():
        out.append(f"- **GUARDRAIL** {name}: tolerated loss {g['tolerated_loss']}; grouped lower bound "
                   f"{f6(g['grouped_lower'])} → **{'PASS' if g['pass'] else 'FAIL'}** "
                   f"({prose.GUARDRAIL_RULE}).")
    return out


def mcnemar_lines(mc: dict) -> list[str]:
    out = ["", "### Exact McNemar on a binary outcome", "",
           f"Outcome: **{mc['outcome']}** (the rank-1 document is judged relevant). Only discordant queries "
           "inform the test.", "",
           "| comparison | gained | lost | unchanged | exact two-sided p | discordant queries in "
           "multi-query groups |",
           "|---|---|---|---|---|---|"]
    for name, c in mc["comparisons"].items():
        out.append(f"| {name} | {c['gained']} | {c['lost']} | {c['unchanged']} | {p3(c['p'])} | "
                   f"{c['discordant_in_multi_query_groups']} |")
    return out + ["", f"> Warning: McNemar assumes independent queries. {prose.MCNEMAR_ASSUMPTION}", ""]


def recall_and_chance_lines(s: dict, ch: dict) -> list[str]:
    k = ch["k"]
    cols = [c for c in s["methods"]["rrf"] if c.startswith("mean_") and "recall" in c]
    out = ["### Recall done right, and the chance level of the candidate pool", "", prose.RECALL_NOTE, "",
           "| method | " + " | ".join(c[5:] for c in cols) + " |", "|---|" + "---|" * len(cols)]
    for m in METHODS:
        vals = [v for c, v in s["methods"][m].items() if c.startswith("mean_") and "recall" in c]
        out.append(f"| {m} | " + " | ".join(f6(v) for v in vals) + " |")
    out += ["", f"Chance level for a uniformly random ordering of the {ch['candidates_per_query']} "
            f"candidates: success@{k} (≥1 relevant in the top {k}) = {f6(ch['mean_chance_success'])}, "
            f"Recall@{k} = {f6(ch['mean_chance_recall'])} (mean over queries; {prose.CHANCE_DEFINITION}). "
            f"Observed success@{k}: "
            + ", ".join(f"{m} {f6(v)}" for m, v in ch["observed_success"].items())
            + ". Queries with no relevant document among the candidates: "
            f"{ch['queries_without_relevant_candidate']}.",
            ""]
    return out


def slice_lines(slices: dict, metric: str) -> list[str]:
    out = ["### Declared slices and weights", ""]
    for fam, f in slices.items():
        out += [f"**{fam}** — {metric}", "", "| slice | n | population share | declared weight | rrf | "
                "ce | blend |",
                "|---|---|---|---|---|---|---|"]
        for name, v in f["slices"].items():
            out.append(f"| {name} | {v['n']} | {f6(v['population_share'])} | {v['weight']} | "
                       + " | ".join(f6(v["means"][m]) for m in METHODS) + " |")
        out.append("| raw population mean | | | | " + " | ".join(f6(f["raw_mean"][m]) for m in METHODS)
                   + " |")
        out.append("| declared-weight mean Σ w_g m_g | | | | "
                   + " | ".join(f6(f["declared_weight_mean"][m]) for m in METHODS) + " |")
        out.append("")
    return out + [prose.SLICES_NOTE, ""]


def exploratory_lines(plan: dict) -> list[str]:
    out = ["### Exploratory per-slice comparisons (NOT confirmatory)", "", f"{prose.EXPLORATORY_TEST}.", "",
           "| family | slice | comparison | n | mean Δ | W/T/L | p | p Holm | p BH |",
           "|---|---|---|---|---|---|---|---|---|"]
    for e in plan["exploratory"]:
        out.append(f"| {e['family']} | {e['slice']} | {e['comparison']} | {e['n']} | {f6(e['mean_delta'])} | "
                   f"{e['wins']}/{e['ties']}/{e['losses']} | {p3(e['p'])} | {p3(e['p_holm'])} | "
                   f"{p3(e['p_bh'])} |")
    return out


def power_lines(pw) -> list:
    """The confirmation set's minimum detectable effect; its last sentence names the pipeline's package (a
    ``Free`` part: one Python name, the same as the provenance table's library source row names)."""
    out: list = ["", "### Power of the confirmation set", ""]
    if pw is None:
        return out + ["Not computable: fewer than two evidence groups."]
    out.append(f"Minimum detectable primary Δ on the {pw['n_confirmation']} confirmation queries at "
               f"α = {pw['alpha']}, power {pw['power']}: **{f6(pw['mde_confirmation'])}** (per-query SD "
               f"implied by the grouped variance of this run: {f6(pw['sd_eff'])}; {prose.POWER_FORMULA}).")
    return out + [Free(*prose.SAMPLE_SIZE_SENTENCE, prose.PACKAGE_PATTERN, "the pipeline's package",
                       "package")]


def evalstats_lines(s: dict) -> list:
    """The evaluation statistics section (numbers from the recomputed evalstats tree)."""
    ev = s["evalstats"]
    return (["## Evaluation statistics (McNemar, slices, guardrails, exploratory tests, power)", ""]
            + plan_lines(s, ev["plan"]) + mcnemar_lines(ev["mcnemar"])
            + recall_and_chance_lines(s, ev["chance"])
            + slice_lines(ev["slices"], s["metric"]) + exploratory_lines(ev["plan"])
            + power_lines(ev["power"]))


def figure_lines() -> list[str]:
    return ["", "## Figures", ""] + [f"![{name}]({path})" for name, path in prose.FIGURES]
