"""What the run's files must hold, recomputed: the metric and statistics definitions, numpy's generator,
the per-query values and orders, summary.json, and the calibration (its interval methods and tallies)."""

__all__ = ['calib_stats', 'calibration_tallies', 'definitions', 'expected', 'expected_calibration',
    'expected_summary', 'rng']
