"""The preregistration note written beside a frozen protocol (PREREGISTRATION.md): what is frozen, the
decision rule, and the minimum detectable effect with its arithmetic."""

from __future__ import annotations


def _calibration_text(c) -> str:
    """The frozen calibration settings (reported beside the interval on the confirmation data; it decides
    nothing)."""
    if not c:
        return "No calibration is frozen in this protocol."
    return (f"Calibration (reported beside the interval, decides nothing): seed {c['seed']}, S = {c['S']}, "
            f"B_inner = {c['B_inner']}, R = {c['R']}, S_power = {c['S_power']}, power sizes {c['power_n']}, "
            f"{c['n_audit']} simulations per stream recomputed by the audit.")
def model_text(m: dict) -> str:
    """What the frozen reranker is: a cross-encoder (repo, revision, weights) or a run file (both runs'
    sha256)."""
    if "confirmation_run" in m:
        return (f"Reranker {m['reranker']}, a run file: development run {m['development_run']['file']} "
                f"(sha256\n{m['development_run']['sha256']}), confirmation run "
                f"{m['confirmation_run']['file']} (sha256\n{m['confirmation_run']['sha256']}, submitted at "
                f"this freeze; scorer {m['scorer']})")
    return (f"Model {m['repo']} @ {m['revision']} (weights sha256\n{m['files_sha256']['model.safetensors']}; "
            f"scorer {m['scorer']})")


def preregistration_note(p: dict, sha: str) -> str:
    pw = p["power"]
    label = "\n> TEST-ONLY protocol (frozen from a STAND-IN development run): not a preregistration.\n" \
        if p["test_only"] else ""
    refrozen = (f"\nRe-frozen from protocol `{p['refrozen_from']}` (a code change with identical development "
                f"results): {p['refreeze_reason']}\n" if p.get("refrozen_from") else "")
    return f"""# Preregistration of the confirmation analysis
{label}
Protocol: `protocol.json`, sha256 `{sha}`, frozen {p['frozen_at']}.
Unseal with: `snakemake confirm --cores 4 --config unseal={sha}`
{refrozen}
**Question.** {p['question']}

**Frozen.** {model_text(p['model'])}; data, split and candidate
pins (candidate table `{p['candidates']['file']}` sha256 {p['candidates']['file_sha256']}); the method
(every file that can run: {len(p['method']['files'])} files, combined sha256 {p['method']['sha256']}); text
template `{p['text_template']}`; blend k = {p['blend']['k']}; tie rule: {p['tie_rule']};
grouping: {p['grouping_rule']}; B = {p['bootstrap']['B']}, seed {p['bootstrap']['seed']}, percentiles
{p['bootstrap']['percentiles']} (linear); threshold {p['threshold']}; primary {p['comparisons']['primary']};
guardrails {p['evalstats']['guardrails']}; declared slices and weights {p['evalstats']['slices']}.
{_calibration_text(p.get('calibration'))}

**Decision rule.** {p['decision_rule']}

**Power.** Minimum detectable mean primary difference on the {pw['n_confirmation']} confirmation queries at
α = {pw['alpha']} (two-sided) and power {pw['power']}:

    MDE = (z_(1-α/2) + z_power) * sd_eff / sqrt(n_conf) = {pw['mde_confirmation']:.6f}

with sd_eff = {pw['sd_eff']:.6f} = sqrt(n_dev * Var(mean Δ_dev)), n_dev = {pw['n_development']}, and the
grouped (cluster-robust, linearised) variance Var(mean Δ_dev) = G/(G-1) * Σ_g (S_g - n_g * mean Δ)^2 / n_dev^2
= {pw['grouped_variance_of_mean']:.3e} of the development run ({p['development_evidence']['run']}, scorer
{p['development_evidence']['scorer']}, manifest sha256 {p['development_evidence']['manifest_sha256']},
audited). A true gain smaller than the MDE will often be missed; the threshold {p['threshold']} is the
practical question.
"""
