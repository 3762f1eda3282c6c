"""Glue for the thin rule scripts: logging to the rule's log file AND the console, loud exits,
and a way to run a rule script on its own, outside Snakemake.

Every rule script ends with::

    if __name__ == "__main__":
        run(globals().get("snakemake"), main)

Under Snakemake, ``run`` writes the job (rule, input, output, params, threads, log, config) next
to the rule's log as ``<log>.job.json`` before it calls ``main``. To debug a rule outside
Snakemake, replay that job::

    .venv/bin/python workflow/scripts/score.py results/dev-standin/logs/score.job.json

(the same inputs, outputs and parameters; Snakemake's bookkeeping is not involved, so use it to
debug, not to produce results). This is the light-weight counterpart of pypsa-eur's
``mock_snakemake``.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path

from .errors import MissingInputError, PipelineError

log = logging.getLogger("rerank_study")
CONTAINERS = ("input", "output", "params", "log")


def setup_logging(log_path=None) -> None:
    root = logging.getLogger()
    root.handlers.clear()
    root.setLevel(logging.INFO)
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    if log_path:
        fh = logging.FileHandler(log_path, mode="w", encoding="utf-8")
        fh.setFormatter(fmt)
        root.addHandler(fh)
    sh = logging.StreamHandler(sys.stderr)
    sh.setFormatter(fmt)
    root.addHandler(sh)
    for noisy in ("httpx", "httpcore", "urllib3", "filelock", "huggingface_hub"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


class Items(list):
    """A list whose items may also be reached by name (``items.corpus``, ``items.get("x")``),
    like Snakemake's input/output/params containers; a name may cover a range of items."""

    def __init__(self, items, names: dict):
        super().__init__(items)
        self._names = {k: tuple(v) for k, v in names.items()}

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            start, end = self._names[name]
        except KeyError:
            raise AttributeError(f"no item named {name!r}; names: {sorted(self._names)}") from None
        return self[start] if end is None else self[start:end]

    def get(self, name, default=None):
        return getattr(self, name) if name in self._names else default

    def keys(self):
        return self._names.keys()


class Job:
    """A recorded Snakemake job: what a rule script needs from the ``snakemake`` object."""

    def __init__(self, record: dict):
        self.rule = record["rule"]
        self.threads = record["threads"]
        self.config = record["config"]
        for name in CONTAINERS:
            setattr(self, name, Items(record[name]["items"], record[name]["names"]))


def job_record(sm) -> dict:
    """The JSON form of a Snakemake job (what ``Job`` rebuilds)."""
    def container(c):
        names = {k: list(v) for k, v in c._get_names()} if hasattr(c, "_get_names") else {}
        return {"items": list(c), "names": names}

    return {"rule": sm.rule, "threads": sm.threads, "config": sm.config,
            **{name: container(getattr(sm, name)) for name in CONTAINERS}}


def job_file(log_path) -> Path:
    return Path(str(log_path)).with_suffix(".job.json")


def load_job(path) -> Job:
    try:
        return Job(json.loads(Path(path).read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise MissingInputError(f"MISSING FILE: {path} (a rule's <log>.job.json, written when "
                                "Snakemake ran it)") from None


def run(sm, main) -> None:
    """Run ``main(job)`` under Snakemake (``sm`` = the injected object) or, with ``sm`` None, the
    job recorded in the file named on the command line. A PipelineError ends the job with its
    message and no traceback noise; anything else with the traceback."""
    if sm is None:
        if len(sys.argv) != 2:
            sys.exit(f"usage: {sys.argv[0]} <results/.../logs/RULE.job.json>  (replays a job Snakemake ran)")
        sm = load_job(sys.argv[1])
    elif len(sm.log):
        Path(sm.log[0]).parent.mkdir(parents=True, exist_ok=True)
        job_file(sm.log[0]).write_text(json.dumps(job_record(sm), indent=1, sort_keys=True, default=str)
                                       + "\n")
    setup_logging(sm.log[0] if len(sm.log) else None)
    t0 = time.perf_counter()
    log.info("rule %s started", sm.rule)
    try:
        main(sm)
    except PipelineError as exc:
        log.error("rule %s STOPPED:\n%s", sm.rule, exc)
        sys.exit(1)
    except Exception:
        log.exception("rule %s failed with an unexpected error", sm.rule)
        sys.exit(1)
    log.info("rule %s finished in %.2f s", sm.rule, time.perf_counter() - t0)


def peak_rss_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB
