"""What freezing needs from a development run: its manifest and a passing audit of exactly that manifest,
the full development split, the pinned model (by its weights' hash), the current code, the pinned inputs;
and the power block, recomputed from the run's per_query.tsv and groups.tsv with the analysis's own function
(``evalstats.power_block``), which must equal the run's summary.json."""

from __future__ import annotations

from pathlib import Path

from ..core import layout
from ..core.errors import SealError
from ..core.fileio import VerifiedFile, read_json, read_once, read_tsv, sha256_file
from ..core.names import PINNED, STANDIN_LABEL, column, primary_measure
from ..stats import evalstats as es
from . import locations as loc
from . import method as meth
from .protocol import diff_keys


def _pinned_weights(lockdir, cfg: dict) -> str:
    """The reranker's pinned sha256: a cross-encoder's weights, or a run-file reranker's development run."""
    from ..core.names import RUN_FILE
    from ..reranker.reranker_run import PIN_NAME

    if cfg["study"]["reranker_kind"] == RUN_FILE:
        return read_json(Path(lockdir) / layout.DERIVED_PINS)[PIN_NAME]["sha256"]
    ce = read_json(Path(lockdir) / layout.MODEL_PINS)["cross_encoder"]
    return ce["files"][ce["weights"]]["sha256"]


def _audit_problems(run_dir: Path, audit: dict, manifest_file: VerifiedFile) -> list[str]:
    mpath, apath = run_dir / "manifest.json", run_dir / "audit.json"
    out = []
    if audit.get("ok") is not True:
        out.append(f"{apath}: the audit did not pass (failed checks {audit.get('failed_checks')}); fix the "
                   "run and audit it again")
    audited, m_sha = (audit.get("info") or {}).get("manifest_sha256"), sha256_file(manifest_file)
    if audited != m_sha:
        out.append(f"{apath} audited a manifest with sha256 {audited}, but {mpath} has sha256 {m_sha} "
                   f"(changed after its audit?): run python3 -I -S scripts/audit {run_dir}")
    return out


def _shape_problems(mpath: Path, manifest: dict, cfg: dict) -> list[str]:
    from ..settings.config import run_settings

    if manifest.get("kind") != "development":
        return [f"{mpath}: kind {manifest.get('kind')!r}, expected 'development'"]
    settings = manifest.get("settings") or {}
    if settings.get("n_queries") is not None:
        return [f"{mpath}: a smoke/partial run ({settings.get('n_queries')} development queries x "
                f"{settings.get('depth')} candidates); the MDE must come from the FULL development split: "
                "run the development analysis without smoke=true"]
    changed = diff_keys(settings, run_settings(cfg, confirmation=False))
    return [f"{mpath}: its analysis settings differ from the config being frozen: {', '.join(changed)}; "
            "rerun the development analysis with this config"] if changed else []


def _scorer_problems(mpath: Path, manifest: dict, lockdir: Path, allow_standin: bool, cfg: dict) -> list[str]:
    scorer, pinned = manifest.get("scorer"), _pinned_weights(lockdir, cfg)
    if scorer == PINNED:
        if manifest.get("model_weights_sha256") != pinned:
            return [f"{mpath}: model weights sha256 {manifest.get('model_weights_sha256')}, expected the "
                    f"pinned {pinned} ({lockdir})"]
        return []
    if scorer == STANDIN_LABEL:
        return [] if allow_standin else [
            f"{mpath}: the run comes from the STAND-IN scorer: its variance says nothing about the pinned "
            "cross-encoder, so it cannot size the confirmation. Run the development analysis with the pinned "
            "model first."]
    return [f"{mpath}: unknown scorer {scorer!r}"]


EVIDENCE_FILES = ("summary", "per_query", "groups")


def read_evidence(run_dir: Path, manifest: dict) -> dict[str, VerifiedFile]:
    """summary, per_query and groups as the manifest names them, each read once (what is checked against the
    manifest is what the power block and the evidence are computed from)."""
    art = {a["key"]: a for a in manifest.get("artefacts", [])}
    return {key: read_once(run_dir / art[key]["path"]) for key in EVIDENCE_FILES
            if key in art and (run_dir / art[key]["path"]).exists()}



def _artefact_problems(run_dir: Path, manifest: dict, lockdir: Path, files: dict) -> list[str]:
    mpath, out = run_dir / "manifest.json", []
    art = {a["key"]: a for a in manifest.get("artefacts", [])}
    for key in EVIDENCE_FILES:
        if key not in art:
            out.append(f"{mpath}: lists no artefact {key!r}")
            continue
        path = run_dir / art[key]["path"]
        actual = sha256_file(files[key]) if key in files else "missing"
        if actual != art[key]["sha256"]:
            out.append(f"{path}: sha256 {actual}, but the audited manifest says {art[key]['sha256']} (edited "
                       "after the run?)")
    data = read_json(lockdir / loc.DATA_PINS)["files"]
    derived = read_json(lockdir / loc.DERIVED_PINS)
    pins = {"corpus": data["corpus.jsonl"]["sha256"], "queries": data["queries.jsonl"]["sha256"],
            "qrels_dev": data[loc.pinned_with_role(lockdir, "qrels_dev")]["sha256"],
            "split_dev": derived["splits"]["dev"]["sha256"],
            "split_confirm": derived["splits"]["confirm"]["sha256"],
            "candidates": derived["candidates"]["sha256"]}
    for key, pin in pins.items():
        found = art.get(key, {}).get("sha256")
        if found != pin:
            out.append(f"{mpath}: {key} sha256 {found}, but {lockdir} pins {pin}")
    return out


def evidence_problems(run_dir: Path, manifest: dict, audit: dict, cfg: dict, lockdir: Path, root,
                      allow_standin: bool, read: dict) -> list[str]:
    """Every reason the run cannot be frozen from; ``read``: the run's files, each read once."""
    mpath = run_dir / "manifest.json"
    method = meth.method_sha256(root)[0]
    problems = (_audit_problems(run_dir, audit, read["manifest"]) + _shape_problems(mpath, manifest, cfg)
                + _scorer_problems(mpath, manifest, lockdir, allow_standin, cfg))
    if manifest.get("method_sha256") != method:
        problems.append(f"{mpath}: made with other code (method sha256 {manifest.get('method_sha256')}; this "
                        f"checkout: {method}); rerun the development analysis with the code being frozen")
    return problems + _artefact_problems(run_dir, manifest, lockdir, read)


def recompute_power(read: dict, summary: dict, cfg: dict) -> dict:
    """The power block from per_query.tsv and groups.tsv (as read and verified against the manifest), by the
    analysis's own function: it must equal summary.json's, which the audit does not recompute."""
    rows = read_tsv(read["per_query"])
    a, b = cfg["comparisons"]["all"][cfg["comparisons"]["primary"]]
    metric = primary_measure(cfg["metrics"])
    deltas = [float(r[column(a, metric)]) - float(r[column(b, metric)]) for r in rows]
    pos = {r["qid"]: i for i, r in enumerate(rows)}
    groups: dict[int, list[int]] = {}
    for g in read_tsv(read["groups"]):
        groups.setdefault(int(g["group_index"]), []).append(pos[g["qid"]])
    recomputed = es.power_block(deltas, [groups[i] for i in sorted(groups)], cfg["evalstats"]["power"])
    stored = (summary.get("evalstats") or {}).get("power")
    if recomputed is None or stored != recomputed:
        differ = [k for k in (recomputed or {}) if (stored or {}).get(k) != recomputed[k]] \
            or ["the whole block"]
        raise SealError(f"REFUSED: {read['summary']}: its power block differs from the one recomputed from "
                        f"per_query.tsv and groups.tsv in {', '.join(differ)} (recomputed {recomputed}, "
                        f"stored {stored}). Rerun the development analysis.")
    return recomputed


def development_evidence(run_dir, cfg: dict, lockdir, root, allow_standin: bool = False) -> tuple[dict, dict]:
    """(evidence, power) of a finished development run, or SealError listing every problem."""
    run_dir, lockdir = Path(run_dir), Path(lockdir)
    for name in ("manifest.json", "audit.json"):
        if not (run_dir / name).exists():
            raise SealError(f"REFUSED: {run_dir / name} does not exist. Freeze from a FINISHED development "
                            "run (its manifest and its passing audit.json), e.g. results/dev after "
                            "snakemake --cores 4.")
    read = {"manifest": read_once(run_dir / "manifest.json"), "audit": read_once(run_dir / "audit.json")}
    manifest, audit = read_json(read["manifest"]), read_json(read["audit"])
    read.update(read_evidence(run_dir, manifest))
    problems = evidence_problems(run_dir, manifest, audit, cfg, lockdir, root, allow_standin, read)
    if problems:
        raise SealError(f"REFUSED: cannot freeze from {run_dir}:\n  - " + "\n  - ".join(problems))
    summary = read_json(read["summary"])
    power = recompute_power(read, summary, cfg)
    prim = summary["comparisons"][summary["primary"]]
    evidence = {"run": run_dir.name, "scorer": manifest["scorer"],
                "model_weights_sha256": manifest["model_weights_sha256"],
                "manifest_sha256": sha256_file(read["manifest"]),
                "audit_sha256": sha256_file(read["audit"]),
                "summary_sha256": sha256_file(read["summary"]),
                "method_sha256": manifest["method_sha256"],
                "artefacts_sha256": {a["key"]: a["sha256"] for a in manifest["artefacts"]
                                     if a["deterministic"]}, "primary_mean": prim["mean"],
                "primary_grouped_interval": prim["grouped_interval"]}
    return evidence, power
