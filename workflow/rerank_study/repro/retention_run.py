"""A derived backend's conclusion retention between two audited runs (rule ``retention``, and the
cross-study table's retention section): each side read from the files its passing audit vouches for
(rerank_study.repro.audited), held to what it claims (rerank_study.repro.retention.side_problems), both
compared on
the same queries, inputs, groups and settings but the backend; then rerank_study.repro.retention's conclusion
and logit agreement."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..core.errors import PipelineError
from ..core.fileio import json_equal, read_json, read_tsv
from ..stats import analysis, run_tables
from . import audited, retention

INPUT_KEYS = ("candidates", "split_dev", "qrels_dev", "corpus", "queries")  # same pairs, texts, judgements


def side(paths: Mapping, run_name: str) -> dict:
    """One run's audited manifest, per-query table, logits and groups; ``paths`` names its ``SIDE_FILES``."""
    what = f"run {run_name}"
    _, verdict = audited.verdict_of(paths["audit"])
    man = audited.audited_manifest(verdict, paths["manifest"], what)
    files = {k: audited.listed(man, k, paths[k], what) for k in ("per_query", "pairs", "groups")}
    scoring = read_json(audited.listed(man, "scoring_measurements", paths["scoring"], what))
    rows, pairs = read_tsv(files["per_query"]), read_tsv(files["pairs"])
    logits: dict = {}
    for r in pairs:
        logits.setdefault(r["qid"], {})[r["doc_id"]] = float(r["logit"])
    return {
        "manifest": read_json(man),
        "qids": [r["qid"] for r in rows],
        "table": run_tables.metric_table(rows),
        "logits": logits,
        "groups": run_tables.read_groups(files["groups"])[1],
        "name": run_name,
        "verdict": verdict,
        "labels": {r["model"] for r in pairs},
        "scoring": scoring.get("settings"),
    }


def check_comparable(ref: dict, other: dict) -> None:
    """Same analysed queries, inputs (every one of INPUT_KEYS, listed by both manifests), groups and settings
    but the backend (and the study's name: two studies of one invocation are twins); else a stop naming the
    difference."""
    inputs = [
        {a["key"]: a["sha256"] for a in s["manifest"]["artefacts"] if a["key"] in INPUT_KEYS}
        for s in (ref, other)
    ]
    for s, found in zip((ref, other), inputs):
        if set(found) != set(INPUT_KEYS):
            raise PipelineError(f"run {s['name']}: its manifest lists inputs {sorted(found)}, the retention "
                                f"compares {sorted(INPUT_KEYS)}: not a run of this pipeline's layout.")
    settings = [settings_but_backend(s["manifest"]["settings"]) for s in (ref, other)]
    scoring = [scoring_but_backend(s["scoring"], s["name"]) for s in (ref, other)]
    for what, a, b in (
        ("analysed queries", ref["qids"], other["qids"]),
        ("inputs (sha256)", *inputs),
        ("evidence groups", ref["groups"], other["groups"]),
        ("settings but the backend", *settings),
        ("scoring settings but the backend (measurements/scoring.json)", *scoring),
    ):
        if not json_equal(a, b):  # type-strict: a batch size 32.0 is not 32
            raise PipelineError(
                f"NOT COMPARABLE: runs {ref['name']} and {other['name']} differ in their {what}; "
                "the retention compares two scorers of the SAME pairs: rerun both with the same "
                "--config (the backend's --configfile only for the backend's run)."
            )


BACKEND_SCORING_KEYS = ("backend", "numerics")  # the only scoring-record keys a backend changes


def scoring_but_backend(settings: Mapping | None, run_name: str) -> dict:
    """A run's scoring settings (measurements/scoring.json: batch size, seed, truncation, dtype, batching,
    ...) without the backend and the numerics text it sets; a record without settings stops."""
    if not isinstance(settings, Mapping):
        raise PipelineError(f"run {run_name}: its measurements/scoring.json holds no 'settings' object, so "
                            "its batch size, seed and truncation cannot be compared: not a run of this "
                            "pipeline's scoring; re-run its scoring.")
    return {k: v for k, v in settings.items() if k not in BACKEND_SCORING_KEYS}


def settings_but_backend(settings: Mapping) -> dict:
    """A run's settings without its backend and its study's name: what two scorers of the same pairs share."""
    out = {k: v for k, v in settings.items() if k != "backend"}
    out["study"] = {k: v for k, v in (out.get("study") or {}).items() if k != "name"}
    return out


def markdown(rec: dict) -> str:
    c, a = rec["conclusion"], rec["agreement"]
    ref, oth, d = c["reference"], c["other"], c["difference"]
    rows = [
        ("primary", f"{c['primary']} ({c['metric']})", ""),
        ("primary mean Δ", f"{ref['primary_mean']:.6f}", f"{oth['primary_mean']:.6f}"),
        (
            "grouped interval",
            f"[{ref['grouped_interval'][0]:.6f}, {ref['grouped_interval'][1]:.6f}]",
            f"[{oth['grouped_interval'][0]:.6f}, {oth['grouped_interval'][1]:.6f}]",
        ),
        (
            "its Δ − torch's Δ (grouped paired interval)",
            "",
            f"{d['mean']:+.6f} [{d['grouped_interval'][0]:+.6f}, {d['grouped_interval'][1]:+.6f}]",
        ),
        ("verdicts changed", "", ", ".join(c["verdicts_changed"]) or "none"),
        ("conclusion retained", "", "yes" if c["conclusion_retained"] else "NO"),
        (
            "Kendall τ-b of the logits per query: min / median / mean",
            "",
            " / ".join(f"{a['kendall_tau_b'][k]:.4f}" for k in ("min", "median", "mean")),
        ),
        (
            "top-10 overlap per query: min / mean",
            "",
            f"{a['top10_overlap']['min']:.2f} / {a['top10_overlap']['mean']:.4f}",
        ),
        ("largest abs Δ logit", "", f"{a['max_abs_delta_logit']:.3e}"),
        ("pairs with the same logit", "", f"{a['pairs_equal']} of {a['pairs']}"),
    ]
    head = [
        f"# Conclusion retention: backend `{rec['backend']}` against fp32 torch",
        "",
        f"Runs: `{rec['runs'][0]}` (torch) and `{rec['runs'][1]}` ({rec['backend']}); the same "
        f"{len(rec['queries'])} queries, candidates, groups and bootstrap draws.",
        "",
        "| | torch | " + rec["backend"] + " |",
        "|---|---|---|",
    ]
    return "\n".join(head + [f"| {k} | {x} | {y} |" for k, x, y in rows]) + "\n"


def pinned_sha256(pins_path, backend: str, model_identity: str) -> str:
    """The sha256 the lock folder pins for ``backend`` of the model ``model_identity``."""
    found = [p["sha256"] for p in ((read_json(pins_path).get("backends") or {}).get(backend) or {}).values()
             if (p.get("source") or {}).get("identity") == model_identity]
    if len(found) != 1:
        raise PipelineError(f"{pins_path}: pins backend {backend!r} of {model_identity} {len(found)} times "
                            "(exactly once expected): restore the committed lock folder.")
    return found[0]


SIDE_FILES = (("audit", "audit.json"), ("manifest", "manifest.json"), ("per_query", "per_query.tsv"),
              ("pairs", "pairs.tsv"), ("groups", "groups.tsv"), ("scoring", "measurements/scoring.json"))


def run_files(rundir) -> dict:
    """A run folder's SIDE_FILES."""
    return {key: f"{rundir}/{name}" for key, name in SIDE_FILES}


def record(ref: dict, other: dict, backend: str, pins_path, runs) -> dict:
    """The retention record of the torch side ``ref`` and the ``backend`` side ``other`` (each a ``side``);
    a stop, naming every problem, unless they are the torch and the backend run of one model, comparable."""
    check_comparable(ref, other)
    pin = pinned_sha256(pins_path, backend, ref["manifest"].get("model_identity"))
    problems = retention.side_problems(backend, pin, ref, other)
    if problems:
        raise PipelineError(f"NOT THE TORCH AND THE {backend} RUN OF ONE MODEL: {list(runs)}:\n  "
                            + "\n  ".join(problems) + "\n  fix: run both with the README's command (the "
                            "backend's run with its --configfile), each to its audit with its re-inference; "
                            "nothing was written.")
    settings = ref["manifest"]["settings"]
    plan = analysis.AnalysisPlan.from_settings(settings)
    return {
        "backend": backend,
        "runs": list(runs),
        "queries": ref["qids"],
        "conclusion": retention.conclusion(ref["qids"], ref["groups"], ref["table"], other["table"], plan,
                                           settings["evalstats"]["guardrails"]),
        "agreement": retention.logit_agreement(ref["qids"], ref["logits"], other["logits"]),
    }


def rule_inputs(torch_rundir: str, rundir: str, derived_pins: str, backend: str) -> dict:
    """Rule retention's inputs: both runs' audited files and the lock folder's pins; the torch run must exist
    (it is read, never made, by the backend's invocation)."""
    if not Path(f"{torch_rundir}/audit.json").is_file():
        raise PipelineError(f"RETENTION of backend {backend!r} compares this run with the fp32 torch run of "
                            f"the same study, queries and candidates, {torch_rundir}, which does not exist "
                            f"(no {torch_rundir}/audit.json). Fix: run it first, with the same --config but "
                            "without the backend's --configfile; or ask for this run's audit alone: "
                            f"snakemake {rundir}/audit.json (with this invocation's options).")
    sides = (("torch", torch_rundir), ("backend", rundir))
    files = {f"{side}_{key}": path for side, folder in sides for key, path in run_files(folder).items()}
    return {**files, "derived_pins": derived_pins}
