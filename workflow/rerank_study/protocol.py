"""The sealed confirmation: a frozen protocol, guarded unsealing, an append-only ledger.

* ``freeze``: every value that decides the confirmation result is written to
  ``<lockdir>/protocol.json`` (canonical JSON) with its sha256 in ``<lockdir>/protocol.sha256``
  and a preregistration note ``<lockdir>/PREREGISTRATION.md`` that states the minimum
  detectable effect of the confirmation set. Freezing reads no confirmation data.
* ``check_unseal``: the only gate to the sealed confirmation qrels. It refuses - before any job
  runs, so nothing partial is written - when the token is missing or wrong, the protocol file
  or any pin/setting changed since freezing, the scorer is the STAND-IN, the working tree has
  uncommitted changes to code/config/lockfiles, or an opening under a different protocol exists.
  Two test-only switches (``allow_standin_for_testing``, ``allow_dirty_for_testing``) exist
  for the test suite; whatever they let through is labelled TEST-ONLY in report and ledger.
* the ledger ``<lockdir>/confirmation_ledger.jsonl`` gets one line per completed opening; a
  re-opening of the same protocol must reproduce the first opening byte for byte and says so.
"""

from __future__ import annotations

import datetime as _dt
import json
import subprocess
from pathlib import Path

from . import scoring
from .errors import SealError
from .names import PINNED, STANDIN_LABEL
from .fileio import atomic_write_text, canonical_json, read_json, sha256_file, sha256_text

SEALED_QRELS = "qrels/test.tsv"  # BEIR's test split = the sealed confirmation judgements
PROTOCOL = "protocol.json"
PROTOCOL_SHA = "protocol.sha256"
PREREG = "PREREGISTRATION.md"
LEDGER = "confirmation_ledger.jsonl"
GUARDED_PATHS = ("Snakefile", "workflow", "scripts", "config", "lockfiles", "pyproject.toml")


# ------------------------------------------------------------------ what the protocol freezes --
def frozen_fields(cfg: dict, lockdir) -> dict:
    """Every value that decides the confirmation result, derived from the config and lockfiles
    NOW. Freezing stores it; unsealing recomputes it and requires equality."""
    lockdir = Path(lockdir)
    data = read_json(lockdir / "data_pins.json")["files"]
    models = read_json(lockdir / "model_pins.json")
    derived = read_json(lockdir / "derived_pins.json")
    ce = models["cross_encoder"]
    return {
        "question": (f"Does the blend reach a mean {cfg['comparisons']['primary']} gain in "
                     f"ndcg@{cfg['metrics']['ndcg_k']} of at least {cfg['threshold']} on the "
                     f"{cfg['splits']['confirm_size']} sealed confirmation queries?"),
        "model": {"repo": ce["repo"], "revision": ce["revision"],
                  "files_sha256": {n: p["sha256"] for n, p in sorted(ce["files"].items()) if not n.startswith("_")},
                  "scorer": PINNED},
        "data": {n: {k: p[k] for k in ("sha256", "content_sha256") if k in p} for n, p in sorted(data.items())},
        "splits": {k: derived["splits"][k] for k in ("dev", "confirm", "seed", "dev_size", "confirm_size")},
        "candidates": {"sha256": derived["candidates"]["sha256"], "params": derived["candidates"]["params"]},
        "text_template": 'query text as given; document (title + " " + text).strip()',
        "scoring": scoring.contract(cfg["ce"]),  # settings, batching, numeric mode (threads/shards: speed only)
        "blend": {"k": cfg["blend"]["k"], "formula": "s = 1/(k + r0) + 1/(k + r1), float64, in that order"},
        "tie_rule": "score descending, then document id as a string descending",
        "grouping_rule": "queries linked by >= 1 shared judged relevant document (qrels only, documents outside the "
                         "candidates count); groups = connected components; written before scores are merged",
        "metrics": cfg["metrics"],
        "bootstrap": {"B": cfg["bootstrap"]["B"], "seed": cfg["bootstrap"]["confirm_seed"],
                      "percentiles": cfg["bootstrap"]["percentiles"], "interpolation": "linear",
                      "estimator": "sum over drawn groups of summed delta / sum of drawn group sizes; query-level "
                                   "bootstrap as sensitivity; one index matrix shared by the comparisons"},
        "threshold": cfg["threshold"],
        "comparisons": cfg["comparisons"],
        "evalstats": cfg["evalstats"],
        "decision_rule": ("Report the mean primary delta, whether it reaches the threshold, and whether each "
                          "interval covers 0 and the threshold, whatever the outcome. If the mean is below the "
                          "threshold the practical hypothesis is not supported. Never re-tune and re-test on the "
                          "confirmation set."),
    }


def freeze(cfg: dict, lockdir, dev_summary_path, allow_standin_for_testing: bool = False,
           now: str | None = None) -> dict:
    """Write protocol.json, protocol.sha256 and PREREGISTRATION.md; refuse to overwrite."""
    lockdir = Path(lockdir)
    if (lockdir / PROTOCOL).exists():
        raise SealError(f"{lockdir / PROTOCOL} already exists: a protocol is frozen once. (Freezing a new one is a "
                        "new preregistration: move the old files away in a commit that says why.)")
    dev = read_json(dev_summary_path)
    if dev.get("scorer") == STANDIN_LABEL and not allow_standin_for_testing:
        raise SealError(f"{dev_summary_path} comes from the STAND-IN scorer: its variance says nothing about the "
                        "pinned cross-encoder, so it cannot size the confirmation. Run the development analysis "
                        "with the pinned model first.")
    power = dev.get("evalstats", {}).get("power")
    if not power:
        raise SealError(f"{dev_summary_path} has no grouped variance (evalstats.power): cannot state the MDE")
    protocol = {
        "protocol_version": 1,
        "frozen_at": now or _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        "test_only": bool(allow_standin_for_testing),
        **frozen_fields(cfg, lockdir),
        "power": {k: power[k] for k in ("alpha", "power", "n_development", "n_confirmation", "sd_eff",
                                        "grouped_variance_of_mean", "mde_confirmation", "formula")},
        "development_evidence": {"summary_sha256": sha256_file(dev_summary_path), "run": Path(dev_summary_path).parent.name,
                                 "scorer": dev.get("scorer"),
                                 "primary_mean": dev["comparisons"][dev["primary"]]["mean"],
                                 "primary_grouped_interval": dev["comparisons"][dev["primary"]]["grouped_interval"]},
    }
    text = canonical_json(protocol)
    sha = sha256_text(text)
    atomic_write_text(lockdir / PROTOCOL, text)
    atomic_write_text(lockdir / PROTOCOL_SHA, f"{sha}  {PROTOCOL}\n")
    atomic_write_text(lockdir / PREREG, preregistration_note(protocol, sha))
    return {"sha256": sha, "protocol": protocol}


def preregistration_note(p: dict, sha: str) -> str:
    pw = p["power"]
    label = "\n> TEST-ONLY protocol (frozen from a STAND-IN development run): not a preregistration.\n" \
        if p["test_only"] else ""
    return f"""# Preregistration of the confirmation analysis
{label}
Protocol: `protocol.json`, sha256 `{sha}`, frozen {p['frozen_at']}.
Unseal with: `snakemake confirm --cores 4 --config unseal={sha}`

**Question.** {p['question']}

**Frozen.** Model {p['model']['repo']} @ {p['model']['revision']} (weights sha256
{p['model']['files_sha256']['model.safetensors']}); data, split and candidate pins; text template
`{p['text_template']}`; blend k = {p['blend']['k']}; tie rule: {p['tie_rule']}; grouping: {p['grouping_rule']};
B = {p['bootstrap']['B']}, seed {p['bootstrap']['seed']}, percentiles {p['bootstrap']['percentiles']} (linear);
threshold {p['threshold']}; primary {p['comparisons']['primary']}; guardrails {p['evalstats']['guardrails']};
declared slices and weights {p['evalstats']['slices']}.

**Decision rule.** {p['decision_rule']}

**Power.** Minimum detectable mean primary difference on the {pw['n_confirmation']} confirmation queries at
α = {pw['alpha']} (two-sided) and power {pw['power']}:

    MDE = (z_(1-α/2) + z_power) * sd_eff / sqrt(n_conf) = {pw['mde_confirmation']:.6f}

with sd_eff = {pw['sd_eff']:.6f} = sqrt(n_dev * Var(mean Δ_dev)), n_dev = {pw['n_development']}, and the grouped
(cluster-robust, linearised) variance Var(mean Δ_dev) = G/(G-1) * Σ_g (S_g - n_g * mean Δ)^2 / n_dev^2
= {pw['grouped_variance_of_mean']:.3e} of the development run ({p['development_evidence']['run']}, scorer
{p['development_evidence']['scorer']}, summary sha256 {p['development_evidence']['summary_sha256']}).
A true gain smaller than the MDE will often be missed; the threshold {p['threshold']} is the practical question.
"""


# --------------------------------------------------------------------------------- the guards --
def git_state(root) -> dict:
    """{"commit": sha or None, "dirty": [paths with uncommitted changes], "is_repo": bool}."""
    root = Path(root)
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True)
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--", *GUARDED_PATHS],
                                cwd=root, capture_output=True, text=True, check=True)
    except (subprocess.CalledProcessError, FileNotFoundError):
        return {"is_repo": False, "commit": None, "dirty": []}
    dirty = [line[3:] for line in status.stdout.splitlines() if line.strip()]
    return {"is_repo": True, "commit": commit.stdout.strip(), "dirty": dirty}


def read_ledger(lockdir) -> list[dict]:
    p = Path(lockdir) / LEDGER
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]


def _diff_keys(a, b, prefix=""):
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += _diff_keys(a.get(k), b.get(k), f"{prefix}.{k}" if prefix else k)
        return out
    return [] if a == b else [prefix]


def check_unseal(cfg: dict, lockdir, root) -> dict:
    """Run every guard; return {"sha256", "protocol", "opening", "previous", "git", "labels"} or raise SealError."""
    lockdir = Path(lockdir)
    token = str(cfg.get("unseal") or "").strip()
    how = "Unseal with: snakemake confirm --cores 4 --config unseal=<sha256 in lockfiles/protocol.sha256>"
    if not token:
        raise SealError(f"THE CONFIRMATION IS SEALED: no unseal token. {how}")
    if not (lockdir / PROTOCOL).exists():
        raise SealError(f"THE CONFIRMATION IS SEALED: no frozen protocol at {lockdir / PROTOCOL}. Freeze one first: "
                        "python scripts/confirm.py freeze --dev-run results/dev")
    actual = sha256_file(lockdir / PROTOCOL)
    recorded = (lockdir / PROTOCOL_SHA).read_text().split()[0] if (lockdir / PROTOCOL_SHA).exists() else None
    if recorded != actual:
        raise SealError(f"REFUSED: {lockdir / PROTOCOL} changed since it was frozen (sha256 now {actual}, recorded "
                        f"{recorded}). Restore the frozen protocol from git.")
    if token != actual:
        raise SealError(f"REFUSED: the unseal token {token!r} is not the frozen protocol's sha256 {actual}. {how}")
    protocol = read_json(lockdir / PROTOCOL)
    current = frozen_fields(cfg, lockdir)
    changed = [k for k in _diff_keys({k: protocol.get(k) for k in current}, current)]
    if changed:
        raise SealError("REFUSED: pins or settings changed since the protocol was frozen: " + ", ".join(changed[:12])
                        + ". Restore them (config/config.yaml, lockfiles/) to the frozen values; never re-tune on the "
                          "confirmation set.")
    labels = []
    if protocol.get("test_only"):
        labels.append("TEST-ONLY PROTOCOL")
    if cfg["scorer"] != PINNED:
        if not cfg.get("allow_standin_for_testing"):
            raise SealError("REFUSED: the confirmation cannot be run with the STAND-IN scorer (its scores mean "
                            "nothing). Supply the pinned cross-encoder (--config model_dir=...) and use scorer=pinned.")
        labels.append("TEST-ONLY STAND-IN")
    git = git_state(root)
    if not git["is_repo"] or git["dirty"]:
        if not cfg.get("allow_dirty_for_testing"):
            what = "is not a git checkout" if not git["is_repo"] else \
                "has uncommitted changes in " + ", ".join(git["dirty"][:10])
            raise SealError(f"REFUSED: the working tree {what}. The opening must be traceable to a commit: commit "
                            "(or stash) first. For the TEST SUITE ONLY: --config allow_dirty_for_testing=true "
                            "(labelled in the report and the ledger).")
        labels.append("TEST-ONLY UNCOMMITTED CODE")
    ledger = read_ledger(lockdir)
    other = sorted({e["protocol_sha256"] for e in ledger if e["protocol_sha256"] != actual})
    if other:
        raise SealError(f"REFUSED: {lockdir / LEDGER} records an opening under a different protocol ({other[0]}). "
                        "The confirmation set has been opened; it cannot be used to test a re-tuned protocol.")
    previous = [e for e in ledger if e["protocol_sha256"] == actual]
    return {"sha256": actual, "protocol": protocol, "opening": len(previous) + 1, "previous": previous,
            "git": git, "labels": labels}


def append_ledger(lockdir, entry: dict) -> None:
    """Append one JSON line (never rewrites earlier lines)."""
    p = Path(lockdir) / LEDGER
    line = json.dumps(entry, sort_keys=True, ensure_ascii=True) + "\n"
    with open(p, "a", encoding="utf-8") as fh:
        fh.write(line)
        fh.flush()
