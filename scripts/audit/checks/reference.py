"""Check 'reference': the run's logits against the committed REFERENCE RUNS of the stand-in scorer, an anchor
OUTSIDE the run (``<lockdir>/reference/<name>/``: ``reference.json`` with the identity - the inputs' sha256,
the model identity and weights, the kind and shape - and ``logits.tsv``, the logit of every pair). Signature:
see checks.provenance.

* A run whose identity (re-derived here: the sha256 of its input FILES, its manifest's model identity,
  weights, kind and shape) equals a reference's must score exactly the reference's pairs, each within
  ``TOLERANCE`` of the reference logit. A forged logit fails even when the run's own verification record was
  forged with it.
* A run with the reference's model (identity and weights) on the same texts but another shape, split,
  candidate list or kind (a smoke run, a ``--configfile`` with another depth) scores some of the reference's
  pairs: each pair in common must be within ``TOLERANCE`` of the reference logit (a pair's logit depends on
  its two texts and the model; its batch moves it by < 5e-8, measured). Changing the shape does not switch the
  anchor off.
* Otherwise (other data, another model, a confirmation opening) NO REFERENCE APPLIES: the check compares
  nothing and its note says so and why (never a pass of a comparison).

The tolerance is absolute because the cross-CPU differences are: they come from the order of the float32 sums
of O(1) hidden values (oneMKL's AVX2 vs AVX-512 kernels), not from the size of the final logit, so near zero
they are hundreds of float32 ULPs (measured: up to 252) while staying below 1e-7 in absolute value.
"""

from __future__ import annotations

from pathlib import Path

from read.readers import read_json, read_table, sha256_of

TOLERANCE = 1e-6
EVIDENCE = ("cross-CPU evidence: the committed smoke reference (AMD EPYC, AVX2, torch 2.13.0+cpu, oneMKL "
            "2024.2, strict CNR) vs an Intel Xeon (AVX-512), the same 50 smoke pairs: 49 of 50 logits "
            "differ, max |Δ| = 5.77e-8 (up to 252 float32 ULPs; the stand-in's logits are ~0.02 in size); "
            "the same pairs in the smoke vs the dev reference (other batches, one machine): 25 of 50 differ, "
            "max |Δ| = 4.47e-8. The tolerance is 17x the largest measured difference and 1/130000 of a "
            "+0.13 forgery")
INPUT_ROLES = ("corpus", "queries", "qrels_dev", "qrels_confirm", "split_dev", "split_confirm", "candidates")
TEXTS = ("corpus", "queries")  # what a pair's texts are made of: equal files, equal (query, document) texts
CHECK = "reference"


def run_identity(run) -> dict:
    """What must be equal for the run to be compared with a reference: the sha256 of its input files as they
    are (not as the manifest says), the model identity and weights its manifest names, its kind and shape."""
    derived = {"backend": run.manifest_settings["backend"]} if "backend" in run.manifest_settings else {}
    return {"inputs": {k: sha256_of(run.path(k)) for k in INPUT_ROLES if k in run.art}, **derived,
            "model_identity": run.manifest.get("model_identity"),
            "model_weights_sha256": run.manifest.get("model_weights_sha256"), "kind": run.kind,
            "shape": {"n_queries": run.manifest_settings.get("n_queries"),
                      "depth": run.manifest_settings.get("depth")}}


def differences(mine: dict, ref: dict) -> list[str]:
    """The identity fields (dotted) in which the run differs from a reference."""
    out = []
    for key in sorted(set(mine) | set(ref)):
        a, b = mine.get(key), ref.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += [f"{key}.{k}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
        elif a != b:
            out.append(key)
    return out


def references(lockdir: Path) -> list[tuple[str, dict, Path]]:
    """Every committed reference: (name, reference.json, its folder)."""
    found = sorted((Path(lockdir) / "reference").glob("*/reference.json"))
    return [(p.parent.name, read_json(p), p.parent) for p in found]


def reference_logits(folder: Path) -> dict[tuple[str, str], float]:
    out = {}
    for row in read_table(folder / "logits.tsv"):
        out[(row["qid"], row["doc_id"])] = float(row["logit"])
    return out


def compare(run, name: str, folder: Path, au) -> str:
    """The run has the reference's identity: the reference's pairs, each within the tolerance."""
    f, ref = str(run.path("pairs")), reference_logits(folder)
    mine = {(r["qid"], r["doc_id"]): float(r["logit"]) for r in run.pair_rows}
    au.check(CHECK, set(mine) == set(ref), f, f"pair set (reference {name})", "the reference's "
             f"{len(ref)} pairs",
             f"{len(set(ref) - set(mine))} missing, {len(set(mine) - set(ref))} not in the reference")
    largest, moved = 0.0, 0
    for key in sorted(set(mine) & set(ref)):
        delta = abs(mine[key] - ref[key])
        largest, moved = max(largest, delta), moved + (delta != 0.0)
        au.check(CHECK, delta <= TOLERANCE, f, f"qid {key[0]} doc {key[1]} logit vs reference {name}",
                 f"{ref[key]!r} ± {TOLERANCE!r}", f"{mine[key]!r} (|Δ| = {delta!r})")
    return (f"reference {name} applies (identity equal): {len(ref)} pairs compared with |Δ logit| <= "
            f"{TOLERANCE!r}; {moved} differ at all, largest |Δ| = {largest!r}")


def common_pairs(run, name: str, folder: Path, au) -> str:
    """The run has the reference's model and texts but not its shape: every pair in common within
    tolerance."""
    f, ref = str(run.path("pairs")), reference_logits(folder)
    mine = {(r["qid"], r["doc_id"]): float(r["logit"]) for r in run.pair_rows}
    shared = sorted(set(mine) & set(ref))
    for key in shared:
        delta = abs(mine[key] - ref[key])
        au.check(CHECK, delta <= TOLERANCE, f, f"qid {key[0]} doc {key[1]} logit vs reference {name} (same "
                 "model and texts, other shape)", f"{ref[key]!r} ± {TOLERANCE!r}", f"{mine[key]!r} (|Δ| "
                 f"= {delta!r})")
    largest = max((abs(mine[k] - ref[k]) for k in shared), default=0.0)
    return (f"reference {name} shares the model and texts (not the shape): {len(shared)} pairs in common "
            f"compared with |Δ logit| <= {TOLERANCE!r}, largest |Δ| = {largest!r}")


def check_reference(run, want, au) -> None:
    if run.reranker_kind == "run":  # the anchor's study.reranker_kind: its scores ARE a pinned file
        au.note(CHECK, "NO REFERENCE APPLIES - a run-file reranker: its scores are the pinned run file's, "
                       "re-derived by check 'reranker_run' (no logit was inferred to compare with a "
                       "reference's)")
        return
    mine, notes, none_apply, applied = run_identity(run), [], [], False
    for name, ref_json, folder in references(want.anchor.lockdir):
        diff = differences(mine, ref_json["identity"])
        if "backend" in diff:  # the reference's model and texts, scored by a derived file: another reranker
            none_apply.append(f"{name} (its model scored by backend {mine.get('backend')!r}, another "
                              "reranker "
                              "whose logits differ from the model's by design: docs/backends.md)")
            continue
        if not diff:
            notes.append(compare(run, name, folder, au))
            applied = True
            continue
        other_model = {"model_identity", "model_weights_sha256"} & set(diff)
        same_texts = not {f"inputs.{k}" for k in TEXTS} & set(diff)
        if same_texts and not other_model:
            notes.append(common_pairs(run, name, folder, au))
            applied = True
            continue
        none_apply.append(f"{name} (differs in {', '.join(diff)})")
    if not applied:
        where = f"{want.anchor.lockdir}/reference"
        notes.insert(0, "NO REFERENCE APPLIES - no logit was compared with a reference's, this is not a pass "
                        "of that comparison: "
                        f"{'; '.join(none_apply) if none_apply else 'no reference runs in ' + where}")
    au.note(CHECK, " | ".join(notes + [f"tolerance {TOLERANCE!r} ({EVIDENCE})"]))
