"""The evaluation statistics' command line under its published name, ``python -m rerank_study.evalstats``
(every report.md prints it); the statistics and the command line live in ``stats.evalstats``."""

from .stats.evalstats import main

if __name__ == "__main__":
    raise SystemExit(main())
