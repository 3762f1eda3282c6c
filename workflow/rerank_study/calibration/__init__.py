"""How far the preregistered grouped interval can be trusted on a run's own data: the
settings and inputs, the interval methods, the simulation, and one run's record."""

__all__ = ['calibration', 'calibration_inputs', 'calibration_intervals', 'calibration_run']
