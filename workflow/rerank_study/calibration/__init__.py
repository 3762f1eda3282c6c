"""How far the preregistered grouped interval can be trusted on a run's own data: settings and inputs,
interval methods, one run's record; the simulations' draw order and seeding: calibration.py's docstring."""

__all__ = ['calibration', 'calibration_inputs', 'calibration_intervals', 'calibration_run']
