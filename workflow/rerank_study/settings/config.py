"""Load and validate the experiment configuration.

The schema (``workflow/schemas/config.schema.yaml``) is JSON-schema; every key is required and
unknown keys are errors, so a typo never silently falls back to a default. Errors name the key.
"""

from __future__ import annotations

import copy
from pathlib import Path

from ..core.errors import ConfigError
from ..core.names import CROSS_ENCODER, RUN_FILE, STAND_IN, TORCH_BACKEND

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # workflow/rerank_study
SCHEMA_PATH = PACKAGE_DIR.parent / "schemas" / "config.schema.yaml"


def load_yaml(path):
    """The YAML file's data (PyYAML's safe loader)."""
    import yaml

    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def _key_path(err) -> str:
    parts = [str(p) for p in err.absolute_path]
    if err.validator == "additionalProperties":
        # name the offending extra key(s)
        extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
        return ", ".join(".".join(parts + [e]) for e in extra) or ".".join(parts)
    if err.validator == "required":
        missing = [m for m in err.validator_value if m not in err.instance]
        return ", ".join(".".join(parts + [m]) for m in missing) or ".".join(parts)
    return ".".join(parts) or "<top level>"


BOOLEAN_SWITCHES = ("smoke", "allow_standin_for_testing", "allow_dirty_for_testing")
_TRUE, _FALSE = {"true", "True", "yes", "1"}, {"false", "False", "no", "0"}


def normalize_switches(cfg: dict) -> dict:
    """``snakemake --config smoke=true`` passes the string 'true': turn such strings into booleans
    (in place); anything else is left for the schema to reject."""
    for key in BOOLEAN_SWITCHES:
        val = cfg.get(key)
        if isinstance(val, str) and val in _TRUE | _FALSE:
            cfg[key] = val in _TRUE
    return cfg


def _strict_validator_class():
    """JSON Schema counts 100.0 as an "integer"; this project does not (B: 100.0 must stop at validation,
    not crash the bootstrap after scoring). Booleans are not integers either."""
    import jsonschema

    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine(
        "integer", lambda _checker, x: isinstance(x, int) and not isinstance(x, bool))
    return jsonschema.validators.extend(base, type_checker=checker)


def validate_config(cfg: dict, schema_path=SCHEMA_PATH) -> dict:
    """Normalise command-line switches, then validate ``cfg`` against the schema and the
    cross-key rules (in place); return it."""

    normalize_switches(cfg)
    _check_schema(cfg, load_yaml(schema_path))
    problems = _cross_key_problems(cfg)
    if problems:
        raise ConfigError("INVALID CONFIG (fix config/config.yaml or the --config value):\n  "
                          + "\n  ".join(problems))
    return cfg


def _check_schema(cfg: dict, schema: dict) -> None:
    """Raise ConfigError listing every schema violation of ``cfg`` (one line per distinct problem)."""
    validator = _strict_validator_class()(schema)
    errors = sorted(validator.iter_errors(cfg), key=lambda e: list(e.absolute_path))
    if errors:
        lines = []
        for err in errors:  # (one line per distinct problem)
            key = _key_path(err)
            if err.validator == "additionalProperties":
                msg = ("unknown key (typo?); "
                       "allowed here: ") + ", ".join(sorted(err.schema.get("properties", {})))
            elif err.validator == "required":
                msg = "required key is missing"
            else:
                msg = err.message
            line = f"  config key '{key}': {msg}"
            if line not in lines:
                lines.append(line)
        raise ConfigError("INVALID CONFIG (fix config/config.yaml or the --config value):\n"
                          + "\n".join(lines))


def _cross_key_problems(cfg: dict) -> list[str]:
    """The rules between keys that the schema cannot say, each broken one as a line."""
    problems = []
    comps = cfg["comparisons"]
    if comps["primary"] not in comps["all"]:
        problems.append(f"config key 'comparisons.primary': {comps['primary']!r} is not one of "
                        f"{sorted(comps['all'])}")
    for name, (a, b) in comps["all"].items():
        if a == b:
            problems.append(f"config key 'comparisons.all.{name}': compares {a!r} with itself")
    lo, hi = cfg["bootstrap"]["percentiles"]
    if not lo < hi:
        problems.append(f"config key 'bootstrap.percentiles': {lo} must be < {hi}")
    cand = cfg["candidates"]
    if cand["depth"] > min(cand["bm25"]["depth"], cand["dense"]["depth"]) * 2:
        problems.append("config key 'candidates.depth': larger than the fused pool can hold")
    if cfg["smoke_settings"]["depth"] > cand["depth"]:
        problems.append(f"config key 'smoke_settings.depth': {cfg['smoke_settings']['depth']} > "
                        f"candidates.depth {cand['depth']}")
    if cfg["smoke_settings"]["queries"] > cfg["splits"]["dev_size"]:
        problems.append("config key 'smoke_settings.queries': larger than splits.dev_size")
    if max(cfg["metrics"]["recall_ks"]) > cand["depth"]:
        problems.append("config key 'metrics.recall_ks': a cut-off deeper than the candidate lists")
    if cfg["study"]["reranker_kind"] == RUN_FILE and cfg["ce"]["backend"] != TORCH_BACKEND:
        problems.append(f"config key 'ce.backend': {cfg['ce']['backend']!r} derives a cross-encoder; this "
                        "study's reranker is a run file (study.reranker_kind: run), which infers nothing: "
                        "drop it")
    ev = cfg["evalstats"]
    from ..stats.evalstats import validate_slices

    try:
        validate_slices(ev["slices"])
    except ValueError as exc:
        problems.append(f"config key 'evalstats.slices': {exc}")
    for name in list(ev["guardrails"]) + list(ev["exploratory"]["comparisons"]):
        if name not in comps["all"]:
            problems.append(f"config key 'evalstats': comparison {name!r} is not one of "
                            f"{sorted(comps['all'])}")
    if comps["primary"] in ev["guardrails"]:
        problems.append("config key 'evalstats.guardrails': the primary comparison cannot also "
                        "be a guardrail")
    for fam in ev["exploratory"]["families"]:
        if fam not in ev["slices"]:
            problems.append(f"config key 'evalstats.exploratory.families': {fam!r} is not a declared "
                            "slice family")
    return problems


def load_config(path, overrides: dict | None = None) -> dict:
    cfg = load_yaml(path)
    if overrides:
        cfg = deep_update(cfg, overrides)
    return validate_config(cfg)


def deep_update(base: dict, extra: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in extra.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_update(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def run_name(cfg: dict) -> str:
    """The development run's folder name (a confirmation opening is named by its protocol)."""
    if cfg["run_name"]:
        return cfg["run_name"]
    backend = cfg["ce"]["backend"]
    return (("smoke" if cfg["smoke"] else "dev") + ("-standin" if cfg["scorer"] == STAND_IN else "")
            + ("" if backend == TORCH_BACKEND else f"-{backend}"))


def run_shape(cfg: dict, confirmation: bool = False) -> tuple[int | None, int]:
    """(number of queries analysed, None for the whole split; candidates per query)."""
    if cfg["smoke"] and not confirmation:
        return cfg["smoke_settings"]["queries"], cfg["smoke_settings"]["depth"]
    return None, cfg["candidates"]["depth"]


def run_settings(cfg: dict, confirmation: bool = False) -> dict:
    """Every setting the analysis of a run uses, in one place: recorded in the run's manifest,
    frozen into the confirmation protocol, and compared by the audit with its anchor."""
    n_queries, depth = run_shape(cfg, confirmation)
    b = cfg["bootstrap"]
    # a cross-encoder's input length (a run-file reranker has none: nothing is tokenised here)
    scoring = ({"max_length": cfg["ce"]["max_length"], **backend_setting(cfg["ce"])}
               if cfg["study"]["reranker_kind"] == CROSS_ENCODER else {})
    return {"study": cfg["study"], "n_queries": n_queries, "depth": depth, "blend_k": cfg["blend"]["k"],
            "metrics": cfg["metrics"],
            "bootstrap_B": b["B"], "bootstrap_seed": b["confirm_seed"] if confirmation else b["seed"],
            "percentiles": b["percentiles"], "threshold": cfg["threshold"], "comparisons": cfg["comparisons"],
            **scoring, "evalstats": cfg["evalstats"],
            **verify_settings(cfg), "calibration": calibration_settings(cfg, confirmation)}


def backend_setting(ce: dict) -> dict:
    """A derived backend in the run's settings (none for the model itself, whose runs keep their bytes)."""
    return {} if ce["backend"] == TORCH_BACKEND else {"backend": ce["backend"]}


def verify_settings(cfg: dict) -> dict:
    """Which batches rule verify_scores re-infers, in a development run and an opening alike: the seeded
    sample of ``verify.batches``, or every batch (``verify_batches`` None) with ``verify.every_batch``."""
    v = cfg["verify"]
    return {"verify_batches": None if v["every_batch"] else v["batches"], "verify_seed": v["seed"]}


CALIBRATION_SIZES = ("S", "B_inner", "R", "S_power", "n_audit")


def calibration_settings(cfg: dict, confirmation: bool = False) -> dict:
    """The calibration's settings (rule calibrate): the seed of the run's kind, the sizes (a smoke run's
    from ``smoke_settings.calibration``), the power sizes with the confirmation size added (sorted). Also
    frozen into the confirmation protocol (``seal.protocol``) with ``confirmation=True``."""
    c = cfg["calibration"]
    sizes = cfg["smoke_settings"]["calibration"] if cfg["smoke"] and not confirmation else c
    confirm_n = cfg["evalstats"]["power"]["confirm_n"]
    return {"seed": c["confirm_seed"] if confirmation else c["seed"],
            **{k: sizes[k] for k in CALIBRATION_SIZES},
            "power_n": sorted(set(c["power_n"]) | {confirm_n}), "confirmation_n": confirm_n}


# Config keys that cannot change a result (where files are, how fast, how jobs are placed, one invocation's
# switches, what the development run alone uses); every other key is a frozen setting of the confirmation
# protocol (config/README.md lists these; a run-file study also sets RUN_FILE_ONLY_SPEED aside)
NOT_RESULT_KEYS = ("smoke", "scorer", "data_mirror", "data_zip", "data_dir", "model_dir", "revision",
                   "hf_cache", "repin", "run_name", "studies", "study_file", "trec_run", "run_file", "unseal",
                   "family", "allow_standin_for_testing", "allow_dirty_for_testing", "lockdir", "resources",
                   "results", "smoke_settings", "audit", "data.url", "data.download_timeout_s",
                   "candidates.dense.threads", "ce.threads", "ce.shards", "synthesis")
NOT_RESULT_FOR_A_RUN_FILE = ("ce", "verify", "standin")  # a run-file reranker infers nothing


def result_settings(cfg: dict) -> dict:
    """The config without the keys that cannot change a result: what the frozen protocol compares."""
    drop = NOT_RESULT_KEYS + (NOT_RESULT_FOR_A_RUN_FILE if cfg["study"]["reranker_kind"] == RUN_FILE else ())
    out = copy.deepcopy(cfg)
    for key in drop:
        *parents, leaf = key.split(".")
        node = out
        for p in parents:
            node = node.get(p, {})
        node.pop(leaf, None)
    return out


def repin_set(cfg: dict) -> set[str]:
    """The pins this invocation may rewrite (``--config repin=splits,candidates``); empty normally."""
    return {p for p in cfg["repin"].split(",") if p}


TIE_RULE = "score desc, doc id string desc"


def candidate_params(cfg: dict) -> dict:
    """The settings that decide the candidate table (recorded in its pin; threads are speed only). For a
    TREC-run study (study.candidates: trec) the run file decides the order; the depth and the order rule are
    the settings."""
    c = cfg["candidates"]
    if cfg["study"]["candidates"] == "trec":  # a user's TREC run: only the depth kept and the order rule
        return {"source": "trec", "depth": c["depth"], "tie_rule": TIE_RULE}
    return {"rrf_k": c["rrf_k"], "depth": c["depth"], "bm25": dict(c["bm25"]),
            "dense": {k: v for k, v in c["dense"].items() if k != "threads"}, "tie_rule": TIE_RULE}


def config_arg(cfg: dict) -> str:
    """How a fix command names this study on the command line ('' for the default study of config.yaml)."""
    return f"studies=[{cfg['study_file']}] " if cfg.get("study_file") else ""
