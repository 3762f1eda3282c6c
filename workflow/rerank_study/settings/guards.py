"""The parse-time checks of one study's invocation that are not the seal's (``seal.guard``) or the study's own
(``studies.check_study``): each is one call from ``workflow/rules/guards.smk``, before any job, and a refusal
names the file, what is missing or wrong, and the fix."""

from __future__ import annotations

from pathlib import Path

from ..core import layout
from ..core.errors import ConfigError, MissingInputError, PipelineError
from ..core.names import TORCH_BACKEND


def check_invocation(cfg: dict, repin: set, confirm: bool) -> None:
    """The switches fit together: repin=data, repin=model and repin=reranker_run each alone; an opening
    analyses the whole confirmation set."""
    if "data" in repin and repin != {"data"}:
        raise ConfigError(f"repin={cfg['repin']}: pin the data ALONE first (repin=data), commit it, then "
                          "re-pin the splits / candidates that are drawn from it in a second invocation.")
    for alone, what in (("model", "the reranker's model files"),
                        ("reranker_run", "the reranker's development run"),
                        ("backend", "a derived reranker's file")):
        if alone in repin and repin != {alone}:
            raise ConfigError(f"repin={cfg['repin']}: repin={alone} pins {what} ALONE (an invocation of its "
                              "own; data first; then splits, candidates, and the model or a run-file "
                              "reranker's reranker_run).")
    if confirm and cfg["smoke"]:
        raise ConfigError("a confirmation opening analyses the whole confirmation set: drop smoke=true")


def check_backend_source(command_line: dict) -> None:
    """``ce.backend`` comes from a committed config file (``--configfile config/backends/<backend>.yaml``, or
    a study file), never from ``--config``: the audit's anchor is the committed files, so a backend given on
    the command line would score a whole run that its audit then fails."""
    ce = command_line.get("ce")
    backend = ce.get("backend") if isinstance(ce, dict) else None
    if backend not in (None, TORCH_BACKEND):  # the default needs no file
        raise ConfigError(f"--config ce={{backend: {backend}}}: a backend is set by its committed config "
                          "file, which the audit reads too. Fix: --configfile config/backends/"
                          f"{backend}.yaml (and drop it from --config).")


def check_backend_model(cfg: dict, lockdir, repin: set) -> None:
    """A derived backend (``ce.backend``) can be made from the study's pinned cross-encoder: its pinned
    architecture (``<lockdir>/model_pins.json`` cross_encoder.architecture) is one the export supports. At
    start, not when the first pin or file is made (unless this invocation re-pins the model)."""
    from ..core.fileio import read_json
    from ..reranker.backends import check_exportable

    if cfg["ce"]["backend"] == TORCH_BACKEND or "model" in repin:
        return
    path = Path(lockdir) / layout.MODEL_PINS
    _require(path, "MODEL PINS", "model", lockdir)
    arch = (read_json(path).get("cross_encoder") or {}).get("architecture") or {}
    try:
        check_exportable(cfg["ce"]["backend"], arch)
    except PipelineError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def _require(path: Path, what: str, repin_key: str, lockdir) -> None:
    if not path.exists():
        raise MissingInputError(f"MISSING {what}: {path} does not exist. It is a committed input of the "
                                f"experiment: restore it from git (git checkout -- {lockdir}), or make it "
                                "knowingly (this changes the experiment) with: snakemake --config "
                                f"repin={repin_key}")


def check_committed_inputs(lockdir, repin: set) -> None:
    """The committed, pinned inputs are present before any job runs (unless this invocation re-pins them: data
    -> splits -> candidates, in that order)."""
    lock = Path(lockdir)
    if not repin & {"data", "model", "splits"}:
        for name in (layout.SPLIT_DEV, layout.SPLIT_CONFIRM):
            _require(lock / name, "QUERY SPLIT LIST", "splits", lockdir)
    if not repin or repin == {"reranker_run"}:  # a reranker's run is checked against the frozen candidates
        _require(lock / layout.CANDIDATES, "FROZEN CANDIDATE TABLE", "candidates", lockdir)
        _require(lock / layout.DERIVED_PINS, "DERIVED PINS", "splits,candidates", lockdir)


def development_inputs(cfg: dict) -> tuple:
    """What a development side reads besides its lock folder: the verified data folder (else the mirror) and
    the user's TREC runs ({path: its query ids}): a first-stage run, a reranker's run (given, or pinned)."""
    from ..rankings.trec import run_lines

    folder = Path(cfg["resources"]) / "data" / cfg["study"]["dataset"]
    data_dir = folder if (folder / "queries.jsonl").is_file() else (cfg["data_mirror"] or None)
    runs = {}
    for path in (cfg["trec_run"], cfg["run_file"], str(Path(cfg["lockdir"]) / layout.RERANKER_DEV_RUN)):
        if path and Path(path).is_file():
            runs[path] = {fields[0] for _, fields in run_lines(path)}
    return data_dir, runs
