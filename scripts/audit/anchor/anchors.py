"""The anchors: what a run must have used, taken from OUTSIDE the run - every analysis setting from the
committed config (with a study file's values over it) for a development run, or from the frozen
protocol of a confirmation opening; and the pins of the lock folder. Never from what the run says
about itself."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from core.problems import Unreadable
from read.readers import read_json
from read.yamlsubset import read_simple_yaml

REPO = Path(__file__).resolve().parents[3]
DEFAULT_CONFIG = REPO / "config" / "config.yaml"  # the committed config


def merged(base: dict, over: dict) -> dict:
    """``over``'s values over ``base``'s, mapping by mapping (how a study file overrides config.yaml)."""
    out = dict(base)
    for key, val in over.items():
        out[key] = merged(out[key], val) if isinstance(val, dict) and isinstance(out.get(key), dict) else val
    return out


def settings_from_config(cfg: dict, smoke: bool) -> dict:
    """What config.run_settings gives for a development run (re-implemented: the anchor's side)."""
    shape = cfg["smoke_settings"] if smoke else None
    b = cfg["bootstrap"]
    return {"study": cfg["study"], "n_queries": shape["queries"] if shape else None,
            "depth": shape["depth"] if shape else cfg["candidates"]["depth"],
            "blend_k": cfg["blend"]["k"], "metrics": cfg["metrics"], "bootstrap_B": b["B"],
            "bootstrap_seed": b["seed"], "percentiles": b["percentiles"], "threshold": cfg["threshold"],
            "comparisons": cfg["comparisons"], **max_length(cfg["study"], cfg["ce"]),
            "evalstats": cfg["evalstats"],
            **verify_from(cfg["verify"]),
            "calibration": calibration_from_config(cfg, smoke, confirmation=False)}


def verify_from(v: dict) -> dict:
    """The re-inference sample (re-implemented): k = verify.batches, or every batch (None) with
    every_batch."""
    return {"verify_batches": None if v["every_batch"] else v["batches"], "verify_seed": v["seed"]}


def verify_from_protocol(protocol: dict, cfg: dict) -> dict:
    """A cross-encoder protocol's frozen re-inference sample (its ``verification`` block); a cross-encoder
    protocol frozen before that block existed re-inferred every batch at an opening. A run-file reranker
    infers nothing and its protocol has none: the config's, as the pipeline records it."""
    if "verification" in protocol:
        return verify_from(protocol["verification"])
    if protocol["study"].get("reranker_kind") == "run":
        return verify_from(cfg["verify"])
    return {"verify_batches": None, "verify_seed": cfg["verify"]["seed"]}


def max_length(study: dict, scoring: dict) -> dict:
    """A cross-encoder's input length setting and, when it is a derived file, its backend
    (config.run_settings: the model itself adds nothing); a run-file reranker (study.reranker_kind: run) has
    neither."""
    if study["reranker_kind"] == "run":
        return {}
    name = scoring.get("backend", "torch")
    return {"max_length": scoring["max_length"], **({} if name == "torch" else {"backend": name})}


def calibration_from_config(cfg: dict, smoke: bool, confirmation: bool) -> dict:
    """The calibration settings of a run (re-implemented): the kind's seed, the sizes (a smoke run's from
    smoke_settings.calibration), the power sizes with evalstats.power.confirm_n added, sorted."""
    c = cfg["calibration"]
    sizes = cfg["smoke_settings"]["calibration"] if smoke and not confirmation else c
    confirm_n = cfg["evalstats"]["power"]["confirm_n"]
    return {"seed": c["confirm_seed"] if confirmation else c["seed"],
            **{k: sizes[k] for k in ("S", "B_inner", "R", "S_power", "n_audit")},
            "power_n": sorted(set(c["power_n"]) | {confirm_n}), "confirmation_n": confirm_n}


def settings_from_protocol(protocol: dict, cfg: dict) -> dict:
    """The frozen protocol's settings, in the run-settings shape (a confirmation opening's anchor)."""
    return {"study": protocol["study"], "n_queries": None, "depth": protocol["candidates"]["params"]["depth"],
            "blend_k": protocol["blend"]["k"], "metrics": protocol["metrics"],
            "bootstrap_B": protocol["bootstrap"]["B"], "bootstrap_seed": protocol["bootstrap"]["seed"],
            "percentiles": protocol["bootstrap"]["percentiles"], "threshold": protocol["threshold"],
            "comparisons": protocol["comparisons"], **max_length(protocol["study"], protocol["scoring"]),
            "evalstats": protocol["evalstats"],
            **verify_from_protocol(protocol, cfg),
            # a protocol frozen before the calibration existed has none: the run's calibration then fails its
            # check
            "calibration": protocol.get("calibration")}


def committed_lockdir(config_anchor: Path, study_anchor: Path | None) -> Path:
    """The lock folder the committed anchors name: a study file's ``lockdir`` (relative to the file's folder),
    else config.yaml's (relative to the repository)."""
    if study_anchor is not None:
        study = read_simple_yaml(study_anchor)
        if "lockdir" in study:
            path = Path(study["lockdir"])
            return path if path.is_absolute() else (study_anchor.parent / path).resolve()
    path = Path(read_simple_yaml(config_anchor)["lockdir"])
    return path if path.is_absolute() else (config_anchor.resolve().parents[1] / path).resolve()


def pinned_role(files: dict, role: str) -> str:
    """The one data file a lock folder pins with ``role`` (qrels_dev / qrels_confirm: the study's qrels
    files)."""
    names = [n for n, pin in files.items() if pin.get("role") == role]
    if len(names) != 1:
        raise Unreadable("data_pins.json", f"must pin exactly one file with role {role!r}; it pins {names}")
    return names[0]


class Anchor:
    """What a run of ``kind`` must have used: its settings (read on first use) and its lock folder's pins.
    ``manifest_settings`` (the run's own) only tells whether it is a smoke run - a run that analysed a
    prefix of the split (n_queries set); the anchor then gives that prefix."""

    def __init__(self, kind: str, lockdir: Path, config_anchor: Path, study_anchor: Path | None,
                 manifest_settings: dict, lockdir_source: str = "--lockdir", config_files: tuple = ()):
        self.kind = kind
        # merged over config.yaml, as snakemake --configfile merges them
        self.config_files = tuple(config_files)
        self.lockdir = lockdir
        self.lockdir_source = lockdir_source  # --lockdir, or the committed config / study file
        self.config_anchor = config_anchor
        self.study_anchor = study_anchor  # a study file: its values override the committed config's
        self.manifest_settings = manifest_settings

    @cached_property
    def path(self) -> Path:
        return self.lockdir / "protocol.json" if self.kind == "confirmation" else self.config_anchor

    @cached_property
    def config(self) -> dict:
        """The committed config (a development run's anchor), the config files the invocation gave over it (in
        order), and a study file's values over those."""
        cfg = read_simple_yaml(self.config_anchor)
        for extra in self.config_files:
            cfg = merged(cfg, read_simple_yaml(extra))
        return merged(cfg, read_simple_yaml(self.study_anchor)) if self.study_anchor else cfg

    @cached_property
    def settings(self) -> dict:
        """Every setting of the analysis, from the ANCHOR (the committed config, or the frozen protocol of a
        confirmation opening)."""
        if self.kind == "confirmation":
            return settings_from_protocol(read_json(self.path), self.config)
        return settings_from_config(self.config, smoke=self.manifest_settings.get("n_queries") is not None)

    @cached_property
    def reranker_kind(self) -> str:
        """What the study's reranker is, by the anchor: ``cross-encoder`` (scored by the run) or ``run`` (a
        pinned run file; study.reranker_kind)."""
        return self.settings["study"]["reranker_kind"]

    def lock(self, name: str):
        """One pin file of the lock folder."""
        return read_json(self.lockdir / name)
