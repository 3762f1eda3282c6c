"""seal.prereg: the preregistration note of a hand-written protocol - what is frozen, the decision rule, the
minimum detectable effect with its arithmetic - and its labels (TEST-ONLY, re-frozen, no calibration)."""

from __future__ import annotations

from rerank_study.seal.prereg import model_text, preregistration_note

SHA = "ab" * 32
CROSS_ENCODER = {"repo": "org/ce", "revision": "r1", "files_sha256": {"model.safetensors": "w" * 64},
                 "scorer": "pinned"}
RUN_FILE = {"reranker": "my-system", "scorer": "run file",
            "development_run": {"file": "reranker/dev.trec", "sha256": "d" * 64},
            "confirmation_run": {"file": "reranker/confirm.trec", "sha256": "c" * 64}}
PROTOCOL = {
    "frozen_at": "2026-12-01T00:00:00+00:00", "test_only": False, "question": "Does the blend help?",
    "model": CROSS_ENCODER, "candidates": {"file": "candidates/candidates.tsv", "file_sha256": "e" * 64},
    "method": {"files": {"a.py": "1", "b.py": "2", "c.py": "3"}, "sha256": "m" * 64},
    "text_template": "{title} {text}", "blend": {"k": 60}, "tie_rule": "doc id ascending",
    "grouping_rule": "shared relevant documents", "threshold": 0.02,
    "bootstrap": {"B": 10000, "seed": 7, "percentiles": [2.5, 97.5]}, "comparisons": {"primary": "blend-ce"},
    "evalstats": {"guardrails": ["ce-rrf"], "slices": {}},
    "calibration": {"seed": 1, "S": 200, "B_inner": 500, "R": 1000, "S_power": 100, "power_n": [100, 300],
                    "n_audit": 5},
    "decision_rule": "The lower bound lies above 0.02.",
    "power": {"n_confirmation": 300, "alpha": 0.05, "power": 0.8, "mde_confirmation": 0.0275,
              "sd_eff": 0.17, "n_development": 100, "grouped_variance_of_mean": 0.000289},
    "development_evidence": {"run": "dev", "scorer": "pinned", "manifest_sha256": "0" * 64}}


def test_a_cross_encoder_is_named_by_its_repo_revision_and_weights():
    assert model_text(CROSS_ENCODER) == f"Model org/ce @ r1 (weights sha256\n{'w' * 64}; scorer pinned)"


def test_a_run_file_reranker_is_named_by_both_runs_sha256():
    assert model_text(RUN_FILE) == (
        f"Reranker my-system, a run file: development run reranker/dev.trec (sha256\n{'d' * 64}), "
        f"confirmation run reranker/confirm.trec (sha256\n{'c' * 64}, submitted at this freeze; scorer run "
        "file)")


def test_the_note_names_the_protocol_the_unseal_command_and_the_frozen_values():
    note = preregistration_note(PROTOCOL, SHA)
    assert note.startswith("# Preregistration of the confirmation analysis\n\nProtocol: `protocol.json`, "
                           f"sha256 `{SHA}`, frozen 2026-12-01T00:00:00+00:00.\n")
    assert f"Unseal with: `snakemake confirm --cores 4 --config unseal={SHA}`" in note
    assert "(every file that can run: 3 files, combined sha256 " + "m" * 64 + ")" in note
    assert "B = 10000, seed 7, percentiles\n[2.5, 97.5] (linear); threshold 0.02; primary blend-ce;" in note
    assert ("Calibration (reported beside the interval, decides nothing): seed 1, S = 200, B_inner = 500, "
            "R = 1000, S_power = 100, power sizes [100, 300], 5 simulations per stream") in note
    assert "**Decision rule.** The lower bound lies above 0.02." in note
    assert "TEST-ONLY" not in note and "Re-frozen" not in note


def test_the_power_paragraph_prints_the_mde_sd_and_variance_at_their_precision():
    note = preregistration_note(PROTOCOL, SHA)
    assert "sd_eff / sqrt(n_conf) = 0.027500" in note
    assert "with sd_eff = 0.170000 = sqrt(n_dev * Var(mean Δ_dev)), n_dev = 100" in note
    assert "= 2.890e-04 of the development run (dev, scorer\npinned" in note


def test_a_test_only_re_frozen_protocol_without_calibration_says_so():
    p = {**PROTOCOL, "test_only": True, "refrozen_from": "f" * 12, "refreeze_reason": "a rename",
         "calibration": None}
    note = preregistration_note(p, SHA)
    assert note.startswith("# Preregistration of the confirmation analysis\n\n> TEST-ONLY protocol (frozen "
                           "from a STAND-IN development run): not a preregistration.\n")
    assert (f"Re-frozen from protocol `{'f' * 12}` (a code change with identical development results): "
            "a rename") in note
    assert "No calibration is frozen in this protocol." in note
