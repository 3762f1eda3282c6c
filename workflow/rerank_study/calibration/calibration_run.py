"""The calibration of one run (rule ``calibrate``; DESIGN.md section 10): the run's per-query differences and
evidence groups, its settings from ``config.run_settings``, and the record ``calibration.json`` holds.

The record is ``calibration.calibrate``'s output and what names it: the primary comparison, the metric, the
confirmation size of the power statement, and whether it could be computed at all (``computable``; with fewer
than two evidence groups there is nothing to resample: every section is empty and ``reason`` says why). The
keys are the same either way (docs/outputs.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..core.names import column
from . import calibration as cal
from .calibration_inputs import CalibrationSettings

NOT_COMPUTABLE = "fewer than two evidence groups: nothing to resample"


def settings_of(calibration: Mapping, percentiles: Sequence[float], threshold: float) -> CalibrationSettings:
    """The library's settings from the run settings' ``calibration`` block, the percentiles and the
    threshold."""
    return CalibrationSettings(seed=calibration["seed"], S=calibration["S"], B_inner=calibration["B_inner"],
                               R=calibration["R"], S_power=calibration["S_power"],
                               power_n=tuple(calibration["power_n"]), threshold=float(threshold),
                               percentiles=tuple(float(p) for p in percentiles),
                               n_audit=calibration["n_audit"])


def run_deltas(rows: Sequence[Mapping[str, str]], comparisons: Mapping[str, Sequence[str]],
               metric: str) -> dict:
    """Per comparison (a, b): Δ_q = a − b of ``metric`` for every row of per_query.tsv, in row order."""
    return {name: [float(r[column(a, metric)]) - float(r[column(b, metric)]) for r in rows]
            for name, (a, b) in comparisons.items()}


def calibration_record(deltas: Mapping[str, Sequence[float]], positions: Sequence[Sequence[int]],
                       settings: CalibrationSettings, *, primary: str, metric: str, confirmation_n: int,
                       workers: int = 1) -> dict:
    """calibration.json: the calibration of the run's data (or, with fewer than two groups, why there is
    none)."""
    if primary not in deltas:
        raise ValueError(f"the primary comparison {primary!r} is not one of {sorted(deltas)}")
    if confirmation_n not in settings.power_n:
        raise ValueError(f"the confirmation size {confirmation_n} is not one of the power sizes "
                         f"{settings.power_n}")
    head = {"primary": primary, "metric": metric, "confirmation_n": confirmation_n}
    if len(positions) < 2:
        n = sum(len(g) for g in positions)
        return {**head, "computable": False, "reason": NOT_COMPUTABLE,
                "settings": cal.settings_record(settings),
                "data": {"n_queries": n, "n_groups": len(positions), "comparisons": list(deltas)},
                "methods": list(cal.METHODS), "comparisons": {},
                "simulations": {"coverage": {}, "null": {}, "power": {}, "t_quantile": None,
                                "note": cal.AUDIT_NOTE}}
    out = cal.calibrate(deltas, positions, settings=settings, workers=workers)
    return {**head, "computable": True, "reason": None, **out}
