"""The files a passing audit vouches for, each read once: the audit verdict (audit.json), the manifest whose
sha256 the verdict records (info.manifest_sha256), and any artefact as that manifest lists it (its sha256).
What a later step takes from a run (the ledger's completed line, the cross-study table) is parsed from these
checked bytes; a file changed after its audit stops it."""

from __future__ import annotations

from .errors import PipelineError
from .fileio import VerifiedFile, input_bytes, read_json
from .pins import verify_against

FIX = "re-run the run (snakemake) so that its audit is of these files"


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
