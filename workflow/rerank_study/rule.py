"""Glue for the thin rule scripts: logging to the rule's log file AND the console, loud exits."""

from __future__ import annotations

import logging
import sys
import time

from .errors import PipelineError

log = logging.getLogger("rerank_study")


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


def run_rule(snakemake, main) -> None:
    """Run ``main(snakemake)``; a PipelineError ends the job with its message (no traceback noise)."""
    setup_logging(snakemake.log[0] if len(snakemake.log) else None)
    t0 = time.perf_counter()
    log.info("rule %s started", snakemake.rule)
    try:
        main(snakemake)
    except PipelineError as exc:
        log.error("rule %s STOPPED:\n%s", snakemake.rule, exc)
        sys.exit(1)
    except Exception:
        log.exception("rule %s failed with an unexpected error", snakemake.rule)
        sys.exit(1)
    log.info("rule %s finished in %.2f s", snakemake.rule, time.perf_counter() - t0)


def peak_rss_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB
