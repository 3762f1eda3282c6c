"""A run against another: the committed reference (bits), the IR reproducibility measures, and
the conclusion retention of a derived backend, each side read from its audited files."""

__all__ = ['audited', 'reference', 'repro_aggregate', 'repro_measures', 'repro_run', 'retention',
    'retention_run']
