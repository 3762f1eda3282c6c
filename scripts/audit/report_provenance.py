"""report.md's provenance: the pins-and-hashes table and the measurements table, as the audit expects them.

Each row is a ``report_lines.Row``. A ``value`` the audit knows
(a pin of the ANCHOR - the lock folder, or the frozen protocol of an opening -, a hash of a run file, a
setting, a count recomputed from pairs.tsv) must be shown exactly; ``value`` None marks declared provenance
the audit cannot recompute (library versions, python, the machine): the row must carry its label and a value.
A measurement (threads, timings, memory) is shown as the run's measurement files recorded it, and those files
are cross-checked against what the audit recomputes where it can (pair counts, truncated pairs, scoring
settings); every cross-check is recorded under 'report' with its own item."""

from __future__ import annotations

import re

import backend
import report_prose as prose
from checks_reranker_run import run_file_pin
from definitions import STANDIN
from layout import RUN_FILE
from readers import read_json, read_table, sha256_of
from report_lines import Free, row

CHECK = "report"


def pins_of(run, want) -> dict:
    """The pins the report must show: a development run's from the anchor's lock folder; an opening's data,
    splits and candidates from its frozen protocol (the lock folder may have been re-pinned since)."""
    data_pins, derived = want.anchor.lock("data_pins.json"), want.anchor.lock("derived_pins.json")
    if run.kind != "confirmation":
        files = {n: p for n, p in data_pins["files"].items() if not p.get("sealed")}
        return {"files": files, "zip": data_pins.get("zip"), "splits": derived["splits"],
                "candidates": derived["candidates"]}
    protocol = read_json(want.anchor.lockdir / "protocol.json")
    cand = {**derived["candidates"], "sha256": protocol["candidates"]["sha256"],
            "params": protocol["candidates"]["params"]}
    return {"files": protocol["data"], "zip": data_pins.get("zip"), "splits": protocol["splits"],
            "candidates": cand, "protocol": protocol}


def candidate_params_text(pin: dict) -> str:
    p = pin["params"]
    if pin.get("source") == "trec":
        return (f"a user's TREC run ({pin['provenance']['run_file']}, sha256 "
                f"{pin['provenance']['run_sha256']}), top {p['depth']} in trec_eval order ({p['tie_rule']})")
    return (f"RRF k={p['rrf_k']}, depth {p['depth']}, BM25 top {p['bm25']['depth']}, dense top "
            f"{p['dense']['depth']}")


def data_rows(run, want, pins: dict, opened: list) -> list:
    st = want.settings["study"]
    out = [row("study", f"{st['name']}: dataset {st['dataset']}, reranker {st['reranker']}, candidates "
                        f"{st['candidates']}")]
    out += [row(f"data {n} sha256", p["sha256"]) for n, p in sorted(pins["files"].items())]
    z = pins["zip"]
    out += ([row("data URL (pinned archive)", z["url"]), row("data zip md5 / sha256", f"{z['md5']} / "
                                                             f"{z['sha256']}")]
            if z else [row("data archive", prose.NO_ARCHIVE)])
    out += opened if run.kind == "confirmation" else [row(*prose.SEALED_ROW)]
    sp, cand = pins["splits"], pins["candidates"]
    return out + [row("split dev sha256", sp["dev"]["sha256"]),
                  row("split confirm sha256", sp["confirm"]["sha256"]),
                  row("split seed / sizes", f"{sp['seed']} / {sp['dev_size']} dev, "
                      f"{sp['confirm_size']} confirm"), row("candidates sha256 (frozen pin)", cand["sha256"]),
                  row("candidates params", candidate_params_text(cand))]


def is_standin(run, want, au) -> bool:
    """The scorer is the stand-in: the manifest's scorer says so, and its model identity, summary.json and
    every pair's model label agree (each recorded; a derived backend's label names its pinned file)."""
    f, standin = str(run.manifest_path), run.scorer == STANDIN
    identity = str(run.manifest.get("model_identity"))
    au.check(CHECK, identity.startswith(f"{STANDIN}:") == standin, f, "scorer: the model identity agrees "
             "with the manifest's scorer", f"{'a' if standin else 'no'} {STANDIN} identity", identity)
    au.check(CHECK, run.summary.get("scorer") == run.scorer, str(run.path("summary")), "scorer: summary.json "
             "agrees with the manifest", run.scorer, run.summary.get("scorer"))
    if run.reranker_kind == RUN_FILE:  # no pairs: the identity names the run file (check 'scorer_label')
        return standin
    labels = {r["model"] for r in run.pair_rows}
    want_label = (f"{backend.scorer_identity(want, identity)} "
                  f"weights-sha256:{run.manifest.get('model_weights_sha256')}")
    au.check(CHECK, labels == {want_label}, str(run.path("pairs")), "scorer: every pair's model label is the "
             "manifest's identity (with the anchor's derived backend) and weights", want_label,
             sorted(labels)[:3])
    return standin


def tied_queries(run) -> list[str]:
    """The analysed queries whose candidates all have one reranker score (recomputed from the scores)."""
    return [q for q in run.analysed if len(run.cands.get(q, [])) > 1
            and len({run.logits.get(q, {}).get(d) for d in run.cands[q]}) == 1]


def run_file_rows(run, want) -> list:
    """A run-file reranker: the pinned file (the anchor's pin), its sha256, the order it is read in, the
    ties."""
    pin = run_file_pin(run, want)
    return [row("reranker", f"{want.settings['study']['reranker']} run:{pin['file']}"),
            row("reranker run sha256", pin["sha256"]), row("reranker run order", prose.RUN_FILE_ORDER),
            row("reranker: queries with one score for all candidates",
                ", ".join(tied_queries(run)) or "none")]


def run_file_section(run, want) -> list[str]:
    """The report's section on a run-file reranker (before the evaluation statistics)."""
    pin, tied = run_file_pin(run, want), tied_queries(run)
    n = sum(len(run.cands.get(q, [])) for q in run.analysed)
    ident = f"{want.settings['study']['reranker']} run:{pin['file']}"
    return [prose.RUN_FILE_HEADING, "",
            f"- `{ident}`, sha256 `{pin['sha256']}`: {n} scores of {len(run.analysed)} queries, read in the "
            f"order {prose.RUN_FILE_ORDER}. {prose.RUN_FILE_NOTHING_INFERRED}",
            f"- **WARNING: {len(tied)} quer{'y' if len(tied) == 1 else 'ies'} ({', '.join(tied)}): "
            f"{prose.TIE_WARNING}.**"
            if tied
            else prose.RUN_FILE_NO_TIES]


def scorer_rows(run, want, au, pins: dict, standin: bool) -> list:
    """The scorer's identity and weights (the manifest's, cross-checked with the pins) and the scoring
    settings (the anchor's scoring contract; the scoring record must say the same)."""
    f, identity = str(run.manifest_path), run.manifest.get("model_identity")
    weights = run.manifest.get("model_weights_sha256")
    if standin:
        au.check(CHECK, re.fullmatch(rf"{STANDIN}:standin-sha256:[0-9a-f]{{64}}", str(identity)) is not None,
                 f, "scorer identity", f"{STANDIN}:standin-sha256:<64 hex>", identity)
    else:
        pin = pins["protocol"]["model"] if "protocol" in pins \
            else want.anchor.lock("model_pins.json")["cross_encoder"]
        li = want.settings["study"].get("label_index")
        pinned_id = f"{pin['repo']}@{pin['revision']}" + ("" if li is None else f"#logit{li}")
        pinned_w = (pin["files_sha256"]["model.safetensors"] if "files_sha256" in pin
                    else pin["files"][pin["weights"]]["sha256"])
        au.check(CHECK, identity == pinned_id, f, "scorer identity (the pinned model)", pinned_id, identity)
        au.check(CHECK, weights == pinned_w, f, "scorer weights (the pinned model)", pinned_w, weights)
    contract = scoring_contract(run, want, pins)
    recorded = read_json(run.path("scoring_measurements")).get("settings")
    au.check(CHECK, recorded == contract, str(run.path("scoring_measurements")), "scoring settings (the "
             "anchor's scoring contract)", contract, recorded)
    return [row("scorer", f"{identity} ({STANDIN})" if standin else identity),
            row("scorer weights sha256", weights),
            row("scoring settings", ", ".join(f"{k}={v}" for k, v in sorted(contract.items())))]


def scoring_contract(run, want, pins: dict) -> dict:
    """What decides a logit: a development run's from the anchor's ``ce`` block, an opening's from its
    protocol."""
    if "protocol" in pins:
        return {k: v for k, v in pins["protocol"]["scoring"].items() if k != "inference"}
    ce, name = want.anchor.config["ce"], backend.backend_of(want)
    derived = {} if name == backend.TORCH else {"backend": name, "numerics": backend.DERIVED_NUMERICS}
    return {"batch_size": ce["batch_size"], "batching": prose.SCORING_BATCHING, "dtype": ce["dtype"],
            "max_length": want.settings["max_length"], "numerics": prose.SCORING_NUMERICS, "seed": ce["seed"],
            "truncation": ce["truncation"], **derived}


def shape_rows(run, want) -> list:
    """A cross-encoder's shape check: the shapes the anchor's architecture gives."""
    arch = want.anchor.lock("model_pins.json")["cross_encoder"]["architecture"]
    n = min(want.anchor.config["ce"]["shape_check_pairs"], len(run.cands[run.analysed[0]]))
    length = want.settings["max_length"]
    shapes = f"{[n, length]} / {[n, length, arch['hidden_size']]} / {[n, arch['num_labels']]}"
    return [row("shape check (input_ids / last hidden / logits)", shapes)]


def run_rows(run, want) -> list:
    """The shape check (a cross-encoder), the run tables' hashes, the libraries and python (declared), and the
    library source hash (the manifest's)."""
    run_file = run.reranker_kind == RUN_FILE
    scores = "reranker_scores" if run_file else "pairs"
    versions = {} if run_file else read_json(run.path("scoring_measurements")).get("versions", {})
    out = ([] if run_file else shape_rows(run, want)) + [
           row(f"{run.path(scores).name} sha256", sha256_of(run.path(scores))),
           row("per_query.tsv sha256", sha256_of(run.path("per_query"))),
           row("summary.json sha256", sha256_of(run.path("summary")))]
    # the scoring record's versions cross-check torch, transformers and tokenizers
    for lib in prose.LIBRARIES:
        out.append(row(f"library {lib}", versions.get(lib), why="the executing machine's library version"))
    out.append(row("python", None, why="the executing machine's python version"))
    prefix, suffix = prose.LIBRARY_SOURCE_ROW
    return out + [Free(prefix, f"{suffix} | `{run.manifest.get('code_sha256')}` |", prose.PACKAGE_PATTERN,
                       "the pipeline's package", "package")]


def pin_rows(run, want, au, opened: list, standin: bool) -> list:
    """The whole pins-and-hashes table (``opened``: an opening's rows of what was opened, when)."""
    pins = pins_of(run, want)
    reranker = (run_file_rows(run, want) if run.reranker_kind == RUN_FILE
                else scorer_rows(run, want, au, pins, standin))
    return data_rows(run, want, pins, opened) + reranker + run_rows(run, want)


def benchmark_seconds(run, rules) -> dict:
    """The rules' seconds as their snakemake benchmarks recorded them (declared provenance)."""
    return {f"rule {k} seconds (snakemake benchmark)":
            float(read_table(run.rundir / "benchmarks" / f"{k}.tsv")[0]["s"]) for k in rules}


def run_file_measurements(run, au) -> list:
    """A run-file reranker's measurements: its rules' seconds and the machine, as measurements/report.json
    says."""
    values = benchmark_seconds(run, ("reranker_scores", "evaluate", "analyse"))
    return recorded_rows(run, au, values)


def recorded_rows(run, au, values: dict) -> list:
    """The measurements table: ``values`` equal to measurements/report.json's, then its machine (declared)."""
    recorded = read_json(run.path("report_measurements"))
    rf = str(run.path("report_measurements"))
    au.check(CHECK, sorted(recorded) == sorted([*values, "machine", "_note"]), rf, "measurement labels",
             sorted([*values, "machine", "_note"]), sorted(recorded))
    for label, val in values.items():
        au.check(CHECK, recorded.get(label) == val, rf, label, val, recorded.get(label))
    machine = recorded.get("machine")
    au.check(CHECK, re.fullmatch(r"[\w.+\-]+, [\w.+\-]+", str(machine)) is not None, rf, "machine",
             "<machine>, <system>", machine)
    return ([row(label, val, code=False) for label, val in values.items()]
            + [row("machine", machine, code=False, why="the executing machine, as "
                                                       "measurements/report.json says")])


def measurement_rows(run, want, au) -> list:
    """The measurements table: each value as measurements/scoring.json and the benchmarks recorded it, the
    pair counts and truncated pairs recomputed from pairs.tsv, and every value equal to
    measurements/report.json's."""
    if run.reranker_kind == RUN_FILE:
        return run_file_measurements(run, au)
    sf, scoring = str(run.path("scoring_measurements")), read_json(run.path("scoring_measurements"))
    n = len(run.pair_rows)
    truncated = sum(1 for r in run.pair_rows if int(r["total_tokens"]) > want.settings["max_length"])
    au.check(CHECK, scoring.get("pairs") == n, sf, "pairs scored (pairs.tsv's rows)", n, scoring.get("pairs"))
    au.check(CHECK, scoring.get("pairs_inferred", 0) + scoring.get("pairs_from_cache", 0) == n, sf,
             "pairs inferred + from cache", n, [scoring.get("pairs_inferred"),
                                                scoring.get("pairs_from_cache")])
    au.check(CHECK, scoring.get("truncated_pairs") == truncated, sf, "truncated pairs (pairs.tsv: "
             "total_tokens > max_length)", truncated, scoring.get("truncated_pairs"))
    values = {
        "torch threads (granted by the scheduler; speed only)": scoring["threads"],
        "pairs scored / inferred / from cache": f"{n} / {scoring['pairs_inferred']} / "
                                                f"{scoring['pairs_from_cache']}",
        "truncated pairs (> max_length tokens)": truncated,
        "model-load seconds": scoring["model_load_seconds"],
        "model-inference seconds": scoring["inference_seconds"],
        "scoring stage seconds": scoring["stage_seconds"],
        "pairs / second (inference)": scoring["pairs_per_second_inference"],
        "peak RSS of the scoring process (MiB)": scoring["peak_rss_mib"],
        **benchmark_seconds(run, ("score", "evaluate", "analyse"))}
    return recorded_rows(run, au, values)
