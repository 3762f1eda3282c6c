"""What a passing audit vouches for (rerank_study.repro.audited): the verdict, the manifest whose sha256 it
records, an artefact as that manifest lists it, and whether its re-inference vouches for the logits. Hashes
are computed here with hashlib."""

import hashlib
import json
import re
from pathlib import Path

import pytest

from rerank_study.core.errors import PinMismatchError, PipelineError
from rerank_study.core.fileio import VerifiedFile
from rerank_study.repro import audited


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write(path, obj) -> bytes:
    data = json.dumps(obj).encode()
    path.write_bytes(data)
    return data


def test_a_passing_verdict_is_read_once_and_returned_with_its_bytes(tmp_path):
    data = write(tmp_path / "audit.json", {"ok": True, "info": {"manifest_sha256": "m"}})
    checked, verdict = audited.verdict_of(tmp_path / "audit.json")
    assert verdict == {"ok": True, "info": {"manifest_sha256": "m"}} and checked.data == data


@pytest.mark.parametrize("verdict", [{"ok": False, "failed_checks": ["manifest"]}, {"ok": "true"}, {}])
def test_an_audit_that_did_not_pass_stops_with_its_failed_checks(tmp_path, verdict):
    write(tmp_path / "audit.json", verdict)
    failed = re.escape(f"did not pass (failed: {verdict.get('failed_checks')!r}); nothing is taken")
    with pytest.raises(PipelineError, match=rf"the audit .*audit\.json {failed}"):
        audited.verdict_of(tmp_path / "audit.json")


def manifest(tmp_path, artefacts):
    data = write(tmp_path / "manifest.json", {"artefacts": artefacts})
    return {"ok": True, "info": {"manifest_sha256": sha(data)}}


def test_the_audited_manifest_and_an_artefact_it_lists(tmp_path):
    (tmp_path / "summary.json").write_bytes(b"{}\n")
    verdict = manifest(tmp_path, [{"key": "summary", "sha256": sha(b"{}\n")}])
    checked = audited.audited_manifest(verdict, tmp_path / "manifest.json", "run dev")
    assert json.loads(checked.data) == {"artefacts": [{"key": "summary", "sha256": sha(b"{}\n")}]}
    summary = audited.listed(checked, "summary", tmp_path / "summary.json", "run dev")
    assert summary.data == b"{}\n"


def test_a_manifest_changed_after_its_audit_is_refused_with_the_fix(tmp_path):
    verdict = manifest(tmp_path, [])
    write(tmp_path / "manifest.json", {"artefacts": [], "extra": 1})
    with pytest.raises(PinMismatchError) as info:
        audited.audited_manifest(verdict, tmp_path / "manifest.json", "run dev")
    msg = str(info.value)
    assert "PIN MISMATCH for run dev's manifest (the one its audit passed)" in msg
    assert f"expected: {verdict['info']['manifest_sha256']}" in msg
    assert msg.endswith("The manifest changed after its audit: " + audited.FIX + ".")


def test_an_artefact_changed_after_its_audit_or_not_listed_is_refused(tmp_path):
    (tmp_path / "summary.json").write_bytes(b"{}\n")
    manifest(tmp_path, [{"key": "summary", "sha256": sha(b"{}\n")}])
    checked = VerifiedFile(tmp_path / "manifest.json", (tmp_path / "manifest.json").read_bytes())
    (tmp_path / "summary.json").write_bytes(b"{\"x\": 1}\n")
    with pytest.raises(PinMismatchError, match=r"(?s)run dev's summary \(as its audited manifest lists it\)"
                                               r".*The file changed after its audit"):
        audited.listed(checked, "summary", tmp_path / "summary.json", "run dev")
    with pytest.raises(PinMismatchError, match=r"(?s)run dev's report.*expected: None"):  # not listed
        audited.listed(checked, "report", tmp_path / "summary.json", "run dev")


def test_the_fresh_draw_is_the_audits_own_record():
    """audited.FRESH_DRAW is the text the audit writes for a draw by fresh randomness (its source, read)."""
    source = (Path(__file__).resolve().parents[3] / "scripts" / "audit" / "reinfer" / "stage.py").read_text()
    assert f'else "{audited.FRESH_DRAW}"' in source


def test_a_verdict_vouches_for_logits_only_with_a_fresh_sample_of_pairs():
    def verdict(**stage):
        return {"info": {"reinfer": {"asked": True, "pairs": 20, "seed_source": audited.FRESH_DRAW,
                                     "note": "N", **stage}}}

    assert audited.reinfer_problem(verdict()) is None
    for stage in ({"asked": False}, {"pairs": 0}, {"pairs": None}):
        want = "its audit re-inferred nothing (info.reinfer: 'N')"
        assert audited.reinfer_problem(verdict(**stage)) == want
    assert audited.reinfer_problem({}) == "its audit re-inferred nothing (info.reinfer: None)"
    assert audited.reinfer_problem(verdict(seed_source="S")) == (
        f"its audit's re-inference drew its batches by 'S', not {audited.FRESH_DRAW!r}")
