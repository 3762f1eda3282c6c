"""summary.json as the definitions and the anchor say it must be (prose fields excepted): the method
means, each comparison's statistics, the worst queries, the repair counts and the evalstats section
(McNemar, chance, slices, the plan's guardrails and exploratory tests, power). Every number here is
recomputed by ``expected.Expected`` or taken from the anchor; ``checks.statistics.compare_tree``
compares it leaf by leaf with the run's summary.json."""

from __future__ import annotations

import math
from statistics import NormalDist

from expected.definitions import (
    METHODS,
    benjamini_hochberg,
    chance_hit,
    exact_mcnemar,
    group_label,
    holm,
    mean,
    seq_sum,
    sign_counts,
    slice_of,
)


def expected_summary(run, want) -> dict:
    """summary.json as the definitions and the anchor say it must be (prose fields excepted)."""
    st, rc, metric, qids = want.settings, want.recomputed, want.metric, run.analysed
    ms = st["metrics"]
    others = ([f"recall@{k}" for k in ms["recall_ks"]] + [f"capped_recall@{k}" for k in ms["recall_ks"]]
              + [f"mrr@{ms['mrr_k']}"])
    hist: dict[str, int] = {}
    for g in sorted(want.groups, key=len):
        hist[str(len(g))] = hist.get(str(len(g)), 0) + 1
    comps = _comparisons(want)
    primary = st["comparisons"]["primary"]
    worst = _worst_primary(want, qids, primary)
    ce_loss = [q for q in qids if rc[q][f"ce_{metric}"] < rc[q][f"rrf_{metric}"]]
    ce_win = [q for q in qids if rc[q][f"ce_{metric}"] > rc[q][f"rrf_{metric}"]]
    out = {
        "metric": metric, "n_queries": len(qids), "n_groups": len(want.groups),
        "group_size_histogram": dict(sorted(hist.items(), key=lambda kv: int(kv[0]))),
        "bootstrap": {"B": st["bootstrap_B"], "seed": st["bootstrap_seed"], "percentiles": st["percentiles"]},
        "threshold": st["threshold"], "primary": primary,
        "methods": {m: {"mean": want.method_means[m], **{f"mean_{x}": mean(rc[q][f"{m}_{x}"] for q in qids)
                                                         for x in others}} for m in METHODS},
        "comparisons": comps, "worst_primary": worst,
        "repair": {"ce_losses_vs_rrf": len(ce_loss),
                   "repaired_by_blend": sum(rc[q][f"blend_{metric}"] > rc[q][f"ce_{metric}"]
                                            for q in ce_loss),
                   "ce_wins_vs_rrf": len(ce_win),
                   "weakened_by_blend": sum(rc[q][f"blend_{metric}"] < rc[q][f"ce_{metric}"]
                                            for q in ce_win)},
        "scorer": run.scorer,
        "inputs": {"per_query_sha256": run.art["per_query"]["sha256"],
                   "groups_sha256": run.art["groups"]["sha256"]},
        "comparisons_definition": {k: f"{x} - {y} (per-query {metric})"
                                   for k, (x, y) in want.comparisons.items()},
    }
    out["evalstats"] = expected_evalstats(run, want, comps)
    return out


def _comparisons(want) -> dict:
    """summary.json's ``comparisons``: each comparison's statistics and its leave-one-group-out range."""
    n_groups = len(want.groups)
    comps = {}
    for name, (a, b) in want.comparisons.items():
        exp = dict(want.expected_comparisons[name])
        logo = None
        if "leave_one_group_out.min" in exp:
            d = want.deltas[name]
            vals = [seq_sum(d[i] for i in range(len(d)) if i not in set(mem)) / (len(d) - len(mem))
                    for mem in want.members]
            logo = {"min": min(vals), "max": max(vals),
                    "min_group": group_label(vals.index(min(vals)), n_groups),
                    "max_group": group_label(vals.index(max(vals)), n_groups)}
        exp.pop("leave_one_group_out.min", None)
        exp.pop("leave_one_group_out.max", None)
        comps[name] = {"a": a, "b": b, **exp, "leave_one_group_out": logo}
    return comps


def _worst_primary(want, qids, primary) -> list[dict]:
    """The three queries with the lowest primary delta (ties by query order)."""
    rc, metric = want.recomputed, want.metric
    a, b = want.comparisons[primary]
    d = want.deltas[primary]
    return [{"qid": qids[i], "delta": d[i], f"{a}_{metric}": rc[qids[i]][f"{a}_{metric}"],
             f"{b}_{metric}": rc[qids[i]][f"{b}_{metric}"],
             f"{a}_first_rel_rank": rc[qids[i]][f"{a}_first_rel_rank"],
             f"{b}_first_rel_rank": rc[qids[i]][f"{b}_first_rel_rank"]}
            for i in sorted(range(len(d)), key=lambda i: (d[i], i))[:3]]


def expected_evalstats(run, want, summary_comparisons: dict) -> dict:
    """summary.json's ``evalstats`` section."""
    st, qids = want.settings, run.analysed
    ev = st["evalstats"]
    mc = _mcnemar(want, qids)
    rc = want.recomputed
    counts = {q: (rc[q]["n_relevant"], rc[q]["n_relevant_in_candidates"]) for q in qids}
    chance = _chance(want, qids, counts, ev["chance_k"], st["depth"])
    slices = {family: _slice_family(want, qids, counts, family, weights)
              for family, weights in ev["slices"].items()}
    guard = {name: {"tolerated_loss": loss, "grouped_lower": summary_comparisons[name]["grouped_interval"][0],
                    "mean": summary_comparisons[name]["mean"],
                    "pass": summary_comparisons[name]["grouped_interval"][0] >= -loss}
             for name, loss in ev["guardrails"].items()}
    explo = _exploratory(want, qids, counts, ev)
    out = {"mcnemar": {"outcome": ev["binary_outcome"], "comparisons": mc}, "chance": chance,
           "slices": slices, "plan": {"primary": {"comparison": st["comparisons"]["primary"],
                                                  "metric": want.metric},
                    "guardrails": guard, "exploratory": explo}}
    out["power"] = _power(want, len(qids), ev["power"])
    return out


def _mcnemar(want, qids) -> dict:
    """Per comparison: the paired success counts (first relevant document at rank 1) and the exact p."""
    rc, n = want.recomputed, len(qids)
    multi = {q for g in want.groups if len(g) > 1 for q in g}
    group_of = {q: i for i, g in enumerate(want.groups) for q in g}
    succ = {m: [rc[q][f"{m}_first_rel_rank"] == 1 for q in qids] for m in METHODS}
    mc = {}
    for name, (a, b) in want.comparisons.items():
        x, y = succ[a], succ[b]
        gained = sum(1 for i in range(n) if x[i] and not y[i])
        lost = sum(1 for i in range(n) if y[i] and not x[i])
        disc = [qids[i] for i in range(n) if x[i] != y[i]]
        mc[name] = {"gained": gained, "lost": lost, "unchanged": n - gained - lost,
                    "both_yes": sum(1 for i in range(n) if x[i] and y[i]),
                    "both_no": sum(1 for i in range(n) if not x[i] and not y[i]),
                    "p": exact_mcnemar(gained, lost),
                    "discordant_in_multi_query_groups": sum(1 for q in disc if q in multi),
                    "discordant_groups": len({group_of[q] for q in disc})}
    return mc


def _chance(want, qids, counts, k, depth) -> dict:
    """What a random order of the candidates would reach, next to what each method reached."""
    rc, n = want.recomputed, len(qids)
    return {"k": k, "candidates_per_query": depth,
            "mean_chance_success": mean(chance_hit(depth, counts[q][1], k) for q in qids),
            "mean_chance_recall": mean(min(k, depth) / depth * counts[q][1] / counts[q][0] for q in qids),
            "observed_success": {m: sum(1 for q in qids if rc[q][f"{m}_first_rel_rank"] is not None
                                        and rc[q][f"{m}_first_rel_rank"] <= k) / n for m in METHODS},
            "queries_without_relevant_candidate": sum(1 for q in qids if counts[q][1] == 0)}


def _slice_family(want, qids, counts, family, weights) -> dict:
    """One slice family: each slice's size, weight and method means; the raw and the declared-weight mean."""
    rc, metric, n = want.recomputed, want.metric, len(qids)
    members = {s_: [q for q in qids if slice_of(family, *counts[q]) == s_] for s_ in weights}
    fam = {"slices": {}, "raw_mean": {}, "declared_weight_mean": {}}
    for s_, qs in members.items():
        fam["slices"][s_] = {"n": len(qs), "weight": weights[s_], "population_share": len(qs) / n,
                             "means": {m: (mean(rc[q][f"{m}_{metric}"] for q in qs) if qs else None)
                                       for m in METHODS}}
    for m in METHODS:
        fam["raw_mean"][m] = mean(rc[q][f"{m}_{metric}"] for q in qids)
        total = 0.0
        for s_ in sorted(weights):
            if weights[s_] == 0:
                continue
            if fam["slices"][s_]["means"][m] is None:
                total = None
                break
            total += weights[s_] * fam["slices"][s_]["means"][m]
        fam["declared_weight_mean"][m] = total
    return fam


def _exploratory(want, qids, counts, ev) -> list[dict]:
    """The plan's exploratory sign tests per (family, slice, comparison), with Holm and BH adjusted p."""
    rc, metric = want.recomputed, want.metric
    explo = []
    for family in ev["exploratory"]["families"]:
        for s_ in ev["slices"][family]:
            qs = [q for q in qids if slice_of(family, *counts[q]) == s_]
            for name in ev["exploratory"]["comparisons"]:
                a, b = want.comparisons[name]
                d = [rc[q][f"{a}_{metric}"] - rc[q][f"{b}_{metric}"] for q in qs]
                w, l = sign_counts(d)
                explo.append({"family": family, "slice": s_, "comparison": name, "n": len(qs),
                              "mean_delta": mean(d) if d else None, "wins": w, "losses": l,
                              "ties": len(d) - w - l, "p": exact_mcnemar(w, l) if d else None})
    tested = [e for e in explo if e["p"] is not None]
    for e in explo:
        e["p_holm"] = e["p_bh"] = None
    for e, h, q in zip(tested, holm([e["p"] for e in tested]), benjamini_hochberg([e["p"] for e in tested])):
        e["p_holm"], e["p_bh"] = h, q
    return explo


def _power(want, n, pw):
    """The confirmation's minimal detectable effect from the grouped variance of the primary mean (None with
    fewer than two groups)."""
    if len(want.groups) < 2:
        return None
    d = want.deltas[want.settings["comparisons"]["primary"]]
    g_count, dbar = len(want.members), math.fsum(d) / n
    resid = [math.fsum(d[i] for i in mem) - len(mem) * dbar for mem in want.members]
    var = g_count / (g_count - 1) * math.fsum(r * r for r in resid) / n ** 2
    sd = math.sqrt(n * var)
    z = NormalDist().inv_cdf(1 - pw["alpha"] / 2) + NormalDist().inv_cdf(pw["power"])
    return {"alpha": pw["alpha"], "power": pw["power"], "n_development": n,
            "n_confirmation": pw["confirm_n"], "grouped_variance_of_mean": var, "sd_eff": sd,
            "mde_confirmation": z * sd / math.sqrt(pw["confirm_n"])}
