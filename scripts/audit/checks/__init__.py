"""The checks, one module per subject, each comparing what the run says with what it must say and
recording it under its name; the registry runs them in order (shard_records: the scoring shards' records)."""

__all__ = ['browser', 'calibration', 'columns', 'inputs', 'layout', 'measurements', 'provenance',
    'reference', 'registry', 'report_and_seal', 'reranker_run', 'run_metadata', 'scores', 'shard_records',
    'statistics', 'tables']
