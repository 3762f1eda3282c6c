"""What report.md must show, from the audit's own recomputation (``shown_summary``: ``expected_summary`` as
summary.json holds it; the calibration record the audit vouches for; the anchor's pins; the run's file
hashes): its tables row by row and its numeric lines (``report_numbers`` compares them). A line fact is
(the few words that find the line, its numbers in order, verdict words it must hold, words it must not)."""

from __future__ import annotations

import json
import math

from checks.calibration import calibration_view
from checks.statistics import LIBRARY_P_KEYS, P_ULPS
from expected.definitions import METHODS, STANDIN
from expected.expected_summary import expected_summary
from read.layout import RUN_FILE
from read.readers import read_json, sha256_of

from report import report_opening
from report.report_numbers import ANY, Loose


def shown_summary(run, want) -> dict:
    """The audit's summary as summary.json holds it (canonical JSON: mappings in key order). A p-value
    computed by a library is shown as the run's summary.json has it when it is within the summary check's
    tolerance of the recomputed one; the exploratory tests in the run's order when the run lists the same
    tests (their order follows a mapping's order the anchor need not share)."""
    s = json.loads(json.dumps(expected_summary(run, want), sort_keys=True))
    ran, mine = run.summary.get("evalstats", {}), s["evalstats"]
    for name, c in mine["mcnemar"]["comparisons"].items():
        _accept_p(c, ran.get("mcnemar", {}).get("comparisons", {}).get(name, {}))
    key = lambda e: (e.get("family"), e.get("slice"), e.get("comparison"))  # noqa: E731
    theirs = {key(e): e for e in ran.get("plan", {}).get("exploratory", []) if isinstance(e, dict)}
    for e in mine["plan"]["exploratory"]:
        _accept_p(e, theirs.get(key(e), {}))
    if set(theirs) == {key(e) for e in mine["plan"]["exploratory"]} and len(theirs) == \
            len(mine["plan"]["exploratory"]):
        order = {k: i for i, k in enumerate(theirs)}
        mine["plan"]["exploratory"].sort(key=lambda e: order[key(e)])
    return s


def _accept_p(mine: dict, theirs: dict) -> None:
    for k in LIBRARY_P_KEYS & set(mine):
        a, b = mine[k], theirs.get(k)
        if isinstance(a, float) and isinstance(b, float) and abs(a - b) <= P_ULPS * math.ulp(max(abs(a),
                                                                                                  abs(b))):
            mine[k] = b


def yn(b: bool) -> str:
    return "yes" if b else "no"


def means(vals: dict, recall_only: bool = False) -> list:
    return [v for k, v in vals.items() if k.startswith("mean_") and (not recall_only or "recall" in k)]


def comparison_rows(s: dict) -> list:
    rows = []
    for name, c in s["comparisons"].items():
        logo = c["leave_one_group_out"]
        rows.append([f"{name} (primary)" if name == s["primary"] else name, c["mean"],
                     tuple(c["grouped_interval"]), tuple(c["query_interval"]), yn(c["grouped_covers_0"]),
                     yn(c["grouped_covers_threshold"]), yn(c["query_covers_0"]),
                     yn(c["query_covers_threshold"]), (c["wins"], c["ties"], c["losses"]),
                     None if logo is None else (logo["min"], logo["max"])])
    return rows


def worst_rows(s: dict) -> list:
    a, b, metric = s["comparisons"][s["primary"]]["a"], s["comparisons"][s["primary"]]["b"], s["metric"]
    return [[w["qid"], w["delta"], w[f"{a}_{metric}"], w[f"{b}_{metric}"],
             w.get(f"{a}_first_rel_rank") or "none", w.get(f"{b}_first_rel_rank") or "none"]
            for w in s["worst_primary"]]


def slice_rows(f: dict) -> list:
    rows = [[name, v["n"], v["population_share"], v["weight"], *[v["means"][m] for m in METHODS]]
            for name, v in f["slices"].items()]
    return rows + [[ANY, "", "", "", *[f[key][m] for m in METHODS]]
                   for key in ("raw_mean", "declared_weight_mean")]


def statistics_tables(s: dict) -> dict:
    """The tables of the statistical body, keyed as report_numbers.parse finds them."""
    ev = s["evalstats"]
    tables = {("method", 0): [[m, s["methods"][m]["mean"], *means(s["methods"][m])] for m in METHODS],
              ("comparison", 0): comparison_rows(s),
              ("group size", 0): [[k, v] for k, v in s["group_size_histogram"].items()],
              ("qid", 0): worst_rows(s),
              ("comparison", 1): [[n, c["gained"], c["lost"], c["unchanged"], c["p"],
                                   c["discordant_in_multi_query_groups"]]
                                  for n, c in ev["mcnemar"]["comparisons"].items()],
              ("method", 1): [[m, *means(s["methods"][m], True)] for m in METHODS],
              ("family", 0): [[e["family"], e["slice"], e["comparison"], e["n"], e["mean_delta"],
                               (e["wins"], e["ties"], e["losses"]), e["p"], e["p_holm"], e["p_bh"]]
                              for e in ev["plan"]["exploratory"]]}
    for i, fam in enumerate(ev["slices"].values()):
        tables[("slice", i)] = slice_rows(fam)
    return tables


def statistics_lines(s: dict) -> list:
    prim, bs, ev = s["comparisons"][s["primary"]], s["bootstrap"], s["evalstats"]
    reached = prim["mean_reaches_threshold"]
    out = [("Queries analysed", [s["n_queries"], s["n_groups"], bs["B"], bs["seed"]], [], []),
           ("Primary comparison", [prim["mean"], *prim["grouped_interval"], *prim["query_interval"],
                                   s["threshold"]],
            ["reaches" if reached else "does not reach"], ["does not reach" if reached else "reaches"])]
    for name, g in ev["plan"]["guardrails"].items():
        verdict = ["**PASS**", "**FAIL**"][::1 if g["pass"] else -1]
        out.append((f"**GUARDRAIL** {name}", [g["tolerated_loss"], g["grouped_lower"]], verdict[:1],
                    verdict[1:]))
    r, ch = s["repair"], ev["chance"]
    out += [("CE losses against RRF", [r["ce_losses_vs_rrf"], r["repaired_by_blend"]], [], []),
            ("CE wins against RRF", [r["ce_wins_vs_rrf"], r["weakened_by_blend"]], [], []),
            ("Chance level", [ch["candidates_per_query"], ch["mean_chance_success"], ch["mean_chance_recall"],
                              *ch["observed_success"].values(), ch["queries_without_relevant_candidate"]],
             [], [])]
    pw = ev["power"]
    if pw is not None:
        out.append(("Minimum detectable", [pw["n_confirmation"], pw["alpha"], pw["power"],
                                           pw["mde_confirmation"], pw["sd_eff"]], [], []))
    return out


def pct(x):
    return None if x is None else 100 * x


def calibration_facts(run, want, au) -> tuple[dict, list]:
    """The calibration section's table and lines, from the calibration record the audit vouches for."""
    cal = calibration_view(run, want, au)
    if not cal["computable"]:
        return {}, []
    st, comp = cal["settings"], cal["comparisons"][cal["primary"]]
    rows = [[ANY, (pct(c["coverage"]), *map(pct, c["wilson"])), (pct(t["rate"]), *map(pct, t["wilson"])),
             c["mean_width"], (c["undefined"], t["undefined"])]
            for c, t in ((comp["coverage"][m], comp["type_i_error"][m]) for m in cal["methods"])]
    c = comp["coverage"]["percentile"]
    verdict = ("too narrow" if c["wilson"][1] < st["nominal_coverage"] else "wider than needed"
               if c["wilson"][0] > st["nominal_coverage"] else "as nominal")
    point = next(p for p in comp["power"] if p["n"] == cal["confirmation_n"])
    others = [pct(comp["coverage"][m]["coverage"]) for m in cal["methods"] if m != "percentile"]
    power = [cal["confirmation_n"], point["m_groups"], st["threshold"],
             pct(point["p_mean_reaches_threshold"]), *map(pct, point["wilson_reaches"]),
             pct(point["p_lower_above_0"]), *map(pct, point["wilson_lower_above_0"])]
    p_values = [Loose(cal["comparisons"][n]["randomization"]["p"]) for n in sorted(cal["comparisons"])]
    settings = [st["seed"], st["S"], st["B_inner"], st["R"], st["S_power"]]
    lines = [("Calibration on this run", settings, [], []),
             ("Reading:", [pct(c["coverage"]), *map(pct, c["wilson"]), *others], [verdict], []),
             ("randomization test", [st["R"], *p_values], [], []),
             ("Power of a confirmation of", power, [], [])]
    return {("method", 2): rows}, lines


def pins(run, want) -> dict:
    """The pins table's rows the audit knows: the anchor's data, split and candidate pins, the scorer's
    label and weights, the run tables' hashes."""
    data, derived = want.anchor.lock("data_pins.json"), want.anchor.lock("derived_pins.json")
    files = {n: p for n, p in data["files"].items() if not p.get("sealed")}
    splits, cand = derived["splits"], derived["candidates"]["sha256"]
    if run.kind == "confirmation":
        protocol = read_json(want.anchor.lockdir / "protocol.json")
        files, splits, cand = protocol["data"], protocol["splits"], protocol["candidates"]["sha256"]
    scores = "reranker_scores" if run.reranker_kind == RUN_FILE else "pairs"
    out = {**{f"data {n} sha256": p["sha256"] for n, p in files.items()},
           "split dev sha256": splits["dev"]["sha256"], "split confirm sha256": splits["confirm"]["sha256"],
           "split seed / sizes": (splits["seed"], splits["dev_size"], splits["confirm_size"]),
           "candidates sha256 (frozen pin)": cand,
           f"{run.path(scores).name} sha256": sha256_of(run.path(scores)),
           "per_query.tsv sha256": sha256_of(run.path("per_query")),
           "summary.json sha256": sha256_of(run.path("summary"))}
    if run.reranker_kind != RUN_FILE:
        standin = run.scorer == STANDIN
        identity = str(run.manifest.get("model_identity"))

        def scorer(cell: str) -> bool:
            """the manifest's model identity, (STAND-IN) exactly when the scorer is the stand-in"""
            return cell.startswith(identity) and ("(STAND-IN)" in cell) == standin
        out["scorer"] = scorer
        out["scorer weights sha256"] = run.manifest.get("model_weights_sha256")
    return out


def measurements(run) -> dict:
    """The measurements table: each row as measurements/report.json records it (held to scoring.json by
    check 'measurements'; None, e.g. the rate when every pair came from the cache, is shown NA)."""
    recorded = read_json(run.path("report_measurements"))
    return {k: (v if v is None or isinstance(v, str) else (v,)) for k, v in recorded.items() if k != "_note"}


def facts(run, want, au) -> dict:
    s = shown_summary(run, want)
    cal_tables, cal_lines = calibration_facts(run, want, au)
    out = {"standin": run.scorer == STANDIN, "tables": {**statistics_tables(s), **cal_tables},
           "labelled": {("item", 0): pins(run, want), ("item", 1): measurements(run)},
           "lines": statistics_lines(s) + cal_lines}
    if run.kind == "confirmation":
        report_opening.add_facts(out, run, want, au, s)
    return out
