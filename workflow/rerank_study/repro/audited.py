"""The files a passing audit vouches for, each read once: the audit verdict (audit.json), the manifest whose
sha256 the verdict records (info.manifest_sha256), and any artefact as that manifest lists it (its sha256).
What a later step takes from a run (the ledger's completed line, the cross-study table) is parsed from these
checked bytes; a file changed after its audit stops it."""

from __future__ import annotations

from ..core.errors import PipelineError
from ..core.fileio import VerifiedFile, input_bytes, read_json
from ..data.pins import verify_against

FIX = "re-run the run (snakemake) so that its audit is of these files"
# the audit's record of a draw by fresh randomness (scripts/audit/reinfer/stage.py, info.reinfer.seed_source)
FRESH_DRAW = "secrets.randbits(64), drawn at audit time"


def verdict_of(audit_path) -> tuple[VerifiedFile, dict]:
    """audit.json read once, and its verdict; an audit that did not pass stops here."""
    audit = VerifiedFile(audit_path, input_bytes(audit_path))
    verdict = read_json(audit)
    if verdict.get("ok") is not True:
        raise PipelineError(f"the audit {audit_path} did not pass (failed: {verdict.get('failed_checks')}); "
                            "nothing is taken from this run")
    return audit, verdict


def audited_manifest(verdict: dict, manifest_path, what: str) -> VerifiedFile:
    """The manifest the verdict vouches for (its sha256 = info.manifest_sha256)."""
    return verify_against(manifest_path, (verdict.get("info") or {}).get("manifest_sha256"),
                          f"{what}'s manifest (the one its audit passed)",
                          f"The manifest changed after its audit: {FIX}.")


def listed(manifest: VerifiedFile, key: str, path, what: str) -> VerifiedFile:
    """The artefact ``key`` as the audited manifest lists it (its sha256)."""
    shas = {a["key"]: a["sha256"] for a in read_json(manifest)["artefacts"]}
    return verify_against(path, shas.get(key), f"{what}'s {key} (as its audited manifest lists it)",
                          f"The file changed after its audit: {FIX}.")


def reinfer_problem(verdict: dict) -> str | None:
    """Why a passing audit of a scored run does not vouch for its logits: its re-inference stage was not
    asked for, re-inferred no pair, or drew its batches by a seed chosen by hand (the DAG's audit draws them
    by fresh randomness); None when it re-inferred a fresh sample."""
    stage = (verdict.get("info") or {}).get("reinfer") or {}
    if not (stage.get("asked") and stage.get("pairs")):
        return f"its audit re-inferred nothing (info.reinfer: {stage.get('note')!r})"
    if stage.get("seed_source") != FRESH_DRAW:
        return (f"its audit's re-inference drew its batches by {stage.get('seed_source')!r}, not "
                f"{FRESH_DRAW!r}")
    return None
