"""Reference results: "does my machine reproduce it?", answered to the bit.

A reference is a finished run's fingerprint committed under ``lockfiles/reference/<name>/``:

* ``reference.json`` — the sha256 of every deterministic artefact (from the run's manifest),
  the run's shape and scorer identity, the primary comparison's numbers, and the facts of the
  machine and numeric libraries that made it;
* ``logits.tsv`` (``qid doc_id logit``) and ``per_query.tsv`` — the values behind the two
  artefacts that carry floats, so a difference can be measured, not only detected.

``compare`` reads a user's finished run and says IDENTICAL (every deterministic artefact has
the reference's bytes); where bytes differ, REPRODUCED or DIFFERENT in the reproducibility measures of
``repro_run`` (every mean within Pyserini's OK/OKish bands and the primary interval verdicts unchanged, or
what failed), with per artefact what differs and by how much (largest |Δ logit|, pairs whose CE rank
moves, per-query metric changes, the primary mean and interval); or NOT-COMPARABLE (other inputs, model or
shape: there is nothing to compare). A missing reference is its own verdict, NO-REFERENCE, never a pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..core.errors import MissingInputError
from ..core.fileio import read_json, read_tsv, write_json, write_tsv
from ..core.names import PINNED, STAND_IN
from ..rankings.ranking import order_by_score
from . import repro_run

VERDICTS = ("IDENTICAL", repro_run.REPRODUCED, repro_run.DIFFERENT, "NOT-COMPARABLE", "NO-REFERENCE")
INPUT_ROLES = ("corpus", "queries", "qrels_dev", "qrels_confirm", "split_dev", "split_confirm", "candidates")
LOGIT_HEADER = ("qid", "doc_id", "logit")


def reference_name(scorer: str, smoke: bool) -> str:
    """Folder name of the reference a run compares with, e.g. ``standin-smoke`` or ``pinned-dev``."""
    return f"{'standin' if scorer == STAND_IN else PINNED}-{'smoke' if smoke else 'dev'}"


def deterministic_hashes(manifest: Mapping) -> dict[str, str]:
    return {a["key"]: a["sha256"] for a in manifest["artefacts"] if a["deterministic"]}


def identity(manifest: Mapping) -> dict:
    """What must be equal for two runs to be comparable at all."""
    hashes = deterministic_hashes(manifest)
    return {"inputs": {k: hashes[k] for k in INPUT_ROLES if k in hashes},
            "model_identity": manifest["model_identity"],
            "model_weights_sha256": manifest["model_weights_sha256"], "kind": manifest["kind"],
            "shape": {"n_queries": manifest["settings"]["n_queries"],
                                                "depth": manifest["settings"]["depth"]}}


def read_logits(path) -> dict[tuple[str, str], float]:
    return {(r["qid"], r["doc_id"]): float(r["logit"]) for r in read_tsv(path)}


def read_per_query(path) -> dict[str, dict[str, str]]:
    return {r["qid"]: r for r in read_tsv(path)}


def write_reference(rundir, dest, machine_facts: dict, threads: int) -> dict:
    """Fingerprint the finished run ``rundir`` into the folder ``dest`` (a maintainer's act: commit it)."""
    rundir, dest = Path(rundir), Path(dest)
    manifest = read_json(rundir / "manifest.json")
    audit = read_json(rundir / "audit.json")
    if not audit.get("ok"):
        raise MissingInputError(f"{rundir}/audit.json does not say ok: only an audited run can "
                                "be a reference")
    summary = read_json(rundir / "summary.json")
    prim = summary["comparisons"][summary["primary"]]
    ref = {"run": manifest["run"], "scorer": manifest["scorer"], "identity": identity(manifest),
           "artefacts_sha256": deterministic_hashes(manifest),
           "primary": {"comparison": summary["primary"], "mean": prim["mean"],
                       "grouped_interval": prim["grouped_interval"],
                       "query_interval": prim["query_interval"]},
           "machine": machine_facts, "threads": threads}
    pairs = read_tsv(rundir / "pairs.tsv")
    write_tsv(dest / "logits.tsv", LOGIT_HEADER, [(r["qid"], r["doc_id"], float(r["logit"])) for r in pairs])
    (dest / "per_query.tsv").write_bytes((rundir / "per_query.tsv").read_bytes())
    write_json(dest / "reference.json", ref)
    return ref


def _ce_ranks(logits: Mapping[tuple[str, str], float]) -> dict[tuple[str, str], int]:
    by_q: dict[str, dict[str, float]] = {}
    for (q, d), x in logits.items():
        by_q.setdefault(q, {})[d] = x
    return {(q, d): i for q, scores in by_q.items() for i, d in enumerate(order_by_score(scores), start=1)}


def compare_logits(run: Mapping, ref: Mapping) -> dict:
    common = sorted(set(run) & set(ref))
    deltas = [abs(run[k] - ref[k]) for k in common]
    r_run, r_ref = _ce_ranks(run), _ce_ranks(ref)
    moved = [k for k in common if r_run[k] != r_ref[k]]
    return {"pairs_compared": len(common), "pairs_only_in_one": len(set(run) ^ set(ref)),
            "pairs_with_different_logit": sum(1 for x in deltas if x != 0.0),
            "largest_abs_logit_delta": max(deltas, default=0.0),
            "pairs_whose_ce_rank_changes": len(moved),
            "queries_whose_ce_order_changes": len({q for q, _ in moved})}


def _abs_change(a: str, b: str) -> float | None:
    """|a - b| of two table cells, None when one is empty or not a number (e.g. no relevant rank)."""
    try:
        return abs(float(a) - float(b))
    except ValueError:
        return None


def compare_per_query(run: Mapping, ref: Mapping) -> dict:
    common = sorted(set(run) & set(ref))
    cols = [c for c in ref[common[0]] if c != "qid"] if common else []
    changed_cells, changed_queries, largest = 0, set(), {}
    for q in common:
        for c in cols:
            if run[q].get(c) == ref[q][c]:
                continue
            changed_cells += 1
            changed_queries.add(q)
            delta = _abs_change(run[q].get(c) or "", ref[q][c])
            largest[c] = None if delta is None or largest.get(c, 0.0) is None else max(largest.get(c, 0.0),
                                                                                       delta)
    return {"queries_compared": len(common), "queries_only_in_one": len(set(run) ^ set(ref)),
            "changed_cells": changed_cells, "queries_with_a_change": len(changed_queries),
            "largest_abs_change_by_column": dict(sorted(largest.items()))}


def compare(rundir, refdir, blend_k: int) -> dict:
    """Compare the finished run ``rundir`` with the reference folder ``refdir`` (reads only); ``blend_k`` is
    the run's blend constant (the rankings of both sides are made with it)."""
    rundir, refdir = Path(rundir), Path(refdir)
    manifest = read_json(rundir / "manifest.json")
    if not (refdir / "reference.json").exists():
        return {"verdict": "NO-REFERENCE", "reference": str(refdir),
                "detail": f"no reference at {refdir}: nobody has committed one for this scorer and run shape "
                          "yet (for the pinned model: run it, audit it, then `python scripts/reference.py "
                          f"write {rundir}` and commit). This is not a pass."}
    ref = read_json(refdir / "reference.json")
    mine = identity(manifest)
    if mine != ref["identity"]:
        diff = sorted(k for k in set(mine) | set(ref["identity"]) if mine.get(k) != ref["identity"].get(k))
        return {"verdict": "NOT-COMPARABLE", "reference": str(refdir), "differs_in": diff,
                "detail": "the run's inputs, model or shape differ from the reference's: nothing to compare"}
    hashes = deterministic_hashes(manifest)
    expected = ref["artefacts_sha256"]
    rows = [{"artefact": k, "identical": hashes.get(k) == v, "reference_sha256": v,
             "run_sha256": hashes.get(k)}
            for k, v in sorted(expected.items())]
    # artefacts newer than the reference: listed, not compared (identical: null); the verdict is about the
    # reference's artefacts
    rows += [{"artefact": k, "identical": None, "reference_sha256": None, "run_sha256": v}
             for k, v in sorted(hashes.items()) if k not in expected]
    out = {"verdict": "IDENTICAL", "reference": str(refdir), "artefacts": rows,
           "not_in_reference": [r["artefact"] for r in rows if r["identical"] is None],
           "reference_machine": ref["machine"]}
    if any(r["identical"] is False for r in rows):
        out.update(measured_difference(rundir, refdir, ref, blend_k))
    return out


def measured_difference(rundir: Path, refdir: Path, ref: Mapping, blend_k: int) -> dict:
    """Where bytes differ: by how much (logits, per-query cells, the primary numbers) and whether the
    experiment reproduced (``repro_run``): the verdict, what failed, every measure."""
    run_logits, ref_logits = read_logits(rundir / "pairs.tsv"), read_logits(refdir / "logits.tsv")
    run_pq, ref_pq = read_per_query(rundir / "per_query.tsv"), read_per_query(refdir / "per_query.tsv")
    summary = read_json(rundir / "summary.json")
    prim = summary["comparisons"][summary["primary"]]
    primary = {"reference": ref["primary"],
               "run": {"mean": prim["mean"], "grouped_interval": prim["grouped_interval"],
                       "query_interval": prim["query_interval"]}, "threshold": summary["threshold"]}
    primary["verdicts"] = repro_run.primary_verdicts(ref["primary"], primary["run"], summary["threshold"])
    measures = repro_run.measures(run_pq, ref_pq, run_logits, ref_logits, rundir / "inputs/candidates.tsv",
                                  summary, blend_k)
    verdict, failed = repro_run.verdict(measures, primary["verdicts"])
    return {"verdict": verdict, "failed": failed, "logits": compare_logits(run_logits, ref_logits),
            "per_query": compare_per_query(run_pq, ref_pq), "primary": primary, "measures": measures}


IDENTICAL_CELL = {True: "yes", False: "NO", None: "not in the reference (newer): not compared"}


def render(result: Mapping, run: str) -> str:
    """The verdict line and the per-artefact table (markdown)."""
    v = result["verdict"]
    lines = [f"# Reproduction check of `{run}`", "", f"**Verdict: {v}** — reference `{result['reference']}`",
             ""]
    if v in ("NO-REFERENCE", "NOT-COMPARABLE"):
        lines += [result["detail"] + (f" (differs in: {', '.join(result['differs_in'])})"
                                      if "differs_in" in result
                                      else ""), ""]
        return "\n".join(lines)
    lines += ["| artefact | identical | reference sha256 | run sha256 |", "|---|---|---|---|"]
    lines += [f"| {r['artefact']} | {IDENTICAL_CELL[r['identical']]} | "
              f"`{(r['reference_sha256'] or '-')[:16]}` | `{(r['run_sha256'] or '-')[:16]}` |"
              for r in result["artefacts"]]
    if v in (repro_run.REPRODUCED, repro_run.DIFFERENT):
        lg, pq, pr = result["logits"], result["per_query"], result["primary"]
        lines += ["", "## By how much", "",
                  f"- logits: {lg['pairs_with_different_logit']} of {lg['pairs_compared']} pairs differ; "
                  f"largest |Δ logit| = {lg['largest_abs_logit_delta']!r}; "
                  f"{lg['pairs_whose_ce_rank_changes']} pairs in {lg['queries_whose_ce_order_changes']} "
                  "queries change CE rank",
                  f"- per-query metrics: {pq['changed_cells']} cells in {pq['queries_with_a_change']} "
                  f"queries change; largest |Δ| by column: {pq['largest_abs_change_by_column'] or 'none'}",
                  f"- primary mean: reference {pr['reference']['mean']!r}, run {pr['run']['mean']!r}; "
                  f"grouped interval: reference {pr['reference']['grouped_interval']}, run "
                  f"{pr['run']['grouped_interval']}"]
        lines += repro_run.render_measures(result)
    m = result["reference_machine"]
    lines += ["", f"Reference machine: {m['cpu']['model']}, {m['machine']}, torch "
                  f"{m.get('torch', {}).get('torch')}, MKL {m.get('torch', {}).get('mkl')}, CPU capability "
                  f"{m.get('torch', {}).get('cpu_capability')}.", ""]
    return "\n".join(lines)
