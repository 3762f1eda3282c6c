"""Check 'reference': the run's logits against the committed REFERENCE RUNS of the stand-in scorer, an anchor
OUTSIDE the run (``<lockdir>/reference/<name>/``: ``reference.json`` with the identity - the inputs' sha256,
the model identity and weights, the kind and shape - and ``logits.tsv``, the logit of every pair). Signature:
see checks_provenance.

* A run whose identity (re-derived here: the sha256 of its input FILES, its manifest's model identity,
  weights, kind and shape) equals a reference's must score exactly the reference's pairs, each within
  ``TOLERANCE`` of the reference logit. A forged logit fails even when the run's own verification record was
  forged with it.
* A run that claims ANOTHER model (identity or weights differ) on the same texts (corpus and queries equal)
  must not have the reference's logits: a query (>= ``MIN_PAIRS`` pairs in common) whose logits are an affine
  image ``a * reference + b`` of the reference's within the tolerance fails - a stand-in run relabelled as the
  pinned model, also when shifted or scaled to keep its rankings; and a query (>= ``ORDER_PAIRS`` in common)
  whose logits rank the pairs exactly as the reference's do fails too - the same, through any rank-preserving
  transform. (Two different models do not give affine images of each other's logits on 5 or more pairs, nor
  the same order of 10; a transform that reorders some pairs is beyond this check: the auditor's own
  re-inference, check 'reinfer', is the general answer.)
* A run with the reference's model (identity and weights) on the same texts but another shape, split,
  candidate list or kind (a smoke run, a ``--configfile`` with another depth) scores some of the reference's
  pairs: each pair in common must be within ``TOLERANCE`` of the reference logit (a pair's logit depends on
  its two texts and the model; its batch moves it by < 5e-8, measured). Changing the shape does not switch the
  anchor off.
* Otherwise (other data, a confirmation opening) NO REFERENCE APPLIES: the check compares nothing and its note
  says so and why (never a pass of a comparison).

The tolerance is absolute because the cross-CPU differences are: they come from the order of the float32 sums
of O(1) hidden values (oneMKL's AVX2 vs AVX-512 kernels), not from the size of the final logit, so near zero
they are hundreds of float32 ULPs (measured: up to 252) while staying below 1e-7 in absolute value.
"""

from __future__ import annotations

import math
from pathlib import Path

from readers import read_json, read_table, rows_by_query, sha256_of

TOLERANCE = 1e-6
EVIDENCE = ("cross-CPU evidence: the committed smoke reference (AMD EPYC, AVX2, torch 2.13.0+cpu, oneMKL "
            "2024.2, strict CNR) vs an Intel Xeon (AVX-512), the same 50 smoke pairs: 49 of 50 logits "
            "differ, max |Δ| = 5.77e-8 (up to 252 float32 ULPs; the stand-in's logits are ~0.02 in size); "
            "the same pairs in the smoke vs the dev reference (other batches, one machine): 25 of 50 differ, "
            "max |Δ| = 4.47e-8. The tolerance is 17x the largest measured difference and 1/130000 of a "
            "+0.13 forgery")
INPUT_ROLES = ("corpus", "queries", "qrels_dev", "qrels_confirm", "split_dev", "split_confirm", "candidates")
TEXTS = ("corpus", "queries")  # what a pair's texts are made of: equal files, equal (query, document) texts
MIN_PAIRS = 5
ORDER_PAIRS = 10  # two models ranking 10 pairs alike by chance: 1 / 10! = 2.8e-7 per query
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


def affine_image(xs: list[float], ys: list[float]):
    """(a, b, largest residual) when ``ys`` = a * ``xs`` + b within the tolerance (least squares), else None.
    Residual bound: TOLERANCE * max(1, |a|) (the reference's own cross-CPU noise, scaled) + 2^-22 * max |y|
    (the float32 rounding of a transformed value). Constant logits are nobody's image."""
    n = len(xs)
    mx, my = math.fsum(xs) / n, math.fsum(ys) / n
    sxx = math.fsum((x - mx) ** 2 for x in xs)
    if sxx == 0.0 or max(ys) - min(ys) <= TOLERANCE:
        return None
    a = math.fsum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    b = my - a * mx
    resid = max(abs(y - (a * x + b)) for x, y in zip(xs, ys))
    bound = TOLERANCE * max(1.0, abs(a)) + 2.0 ** -22 * max(abs(y) for y in ys)
    return (a, b, resid) if resid <= bound else None


def in_reference_order(xs: list[float], ys: list[float]) -> bool:
    """True when ``ys`` ranks the pairs exactly as the distinct reference logits ``xs`` do (a rank-preserving
    image of them: ties allowed, not all equal)."""
    if len(set(xs)) < len(xs) or max(ys) == min(ys):
        return False
    by_x = [y for _, y in sorted(zip(xs, ys))]
    return all(a <= b for a, b in zip(by_x, by_x[1:]))


def relabelled_as(xs: list[float], ys: list[float]) -> str | None:
    """How the run's logits ``ys`` of one query are the reference's ``xs`` under another label, or None."""
    image = affine_image(xs, ys)
    if image is not None:
        return (f"logit = {image[0]!r} * reference + {image[1]!r} within {image[2]!r}: the reference's "
                "logits under another label (or a stale reference)")
    if len(xs) >= ORDER_PAIRS and in_reference_order(xs, ys):
        return (f"the {len(xs)} logits rank the pairs exactly as the reference's do: the reference's logits "
                "through a rank-preserving transform, under another label")
    return None


def not_relabelled(run, name: str, ref_json: dict, folder: Path, au) -> str:
    """The run claims another model than the reference's on the same texts: no query's logits may be an affine
    image of the reference's (>= MIN_PAIRS pairs in common) or rank them exactly as it does
    (>= ORDER_PAIRS)."""
    f, ref = str(run.path("pairs")), reference_logits(folder)
    ident = ref_json["identity"]
    checked = 0
    for q, rows in rows_by_query(run.pair_rows).items():
        common = [r for r in rows if (q, r["doc_id"]) in ref]
        if len(common) < MIN_PAIRS:
            continue
        checked += 1
        how = relabelled_as([ref[(q, r["doc_id"])] for r in common], [float(r["logit"]) for r in common])
        au.check(CHECK, how is None, f, f"qid {q}: {len(common)} pairs in common with reference {name}",
                 f"the logits of the model the run names ({run.manifest.get('model_identity')}), not those "
                 f"of reference {name}'s ({ident.get('model_identity')})", how)
    return (f"reference {name} (model {ident.get('model_identity')}): the run names another model on the "
            f"same texts; {checked} queries with >= {MIN_PAIRS} pairs in common checked not to be an affine "
            f"image of the reference's logits (within {TOLERANCE!r}) nor, with >= {ORDER_PAIRS}, in exactly "
            "its order")


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
        if other_model and same_texts:
            notes.append(not_relabelled(run, name, ref_json, folder, au))
    if not applied:
        where = f"{want.anchor.lockdir}/reference"
        notes.insert(0, "NO REFERENCE APPLIES - no logit was compared with a reference's, this is not a pass "
                        "of that comparison: "
                        f"{'; '.join(none_apply) if none_apply else 'no reference runs in ' + where}")
    au.note(CHECK, " | ".join(notes + [f"tolerance {TOLERANCE!r} ({EVIDENCE})"]))
