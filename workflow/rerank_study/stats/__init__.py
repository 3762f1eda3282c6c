"""The evaluation and its statistics: per-query metrics, evidence groups, the paired bootstrap,
the declared evaluation statistics, the run's analysis and the tables it reads."""

__all__ = ['analysis', 'bootstrap', 'evalstats', 'grouping', 'metrics', 'run_tables']
