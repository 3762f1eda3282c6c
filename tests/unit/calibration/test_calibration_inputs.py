"""The checked inputs of a calibration (rerank_study.calibration.calibration_inputs): its settings and the
deltas and query groups it runs on. Bad input is refused with a message naming what is wrong."""

from __future__ import annotations

import pytest

from rerank_study.calibration import calibration_inputs as cin


def small_settings(**kw):
    base = dict(seed=11, S=30, B_inner=50, R=200, S_power=10, power_n=(20, 40), n_audit=3)
    base.update(kw)
    return cin.CalibrationSettings(**base)


@pytest.mark.parametrize("deltas, positions, message", [
    ({}, [[0], [1]], "deltas is empty"),
    ({"a": []}, [[0], [1]], "no queries"),
    ({"a": [0.1, 0.2]}, [[0, 1]], "at least 2 groups"),
    ({"a": [0.1, 0.2, 0.3]}, [[0], [1]], "partition the 3 queries exactly: 1 not covered"),
    ({"a": [0.1, 0.2]}, [[0], [1, 1]], "1 duplicate"),
    ({"a": [0.1, 0.2]}, [[0], [2]], "outside 0..1"),
    ({"a": [0.1, 0.2]}, [[0], []], "a group is empty"),
    ({"a": [0.1, 0.2], "b": [0.1]}, [[0], [1]], "has 1 deltas, expected 2"),
    ({"a": [0.1, float("nan")]}, [[0], [1]], "non-finite"),
    ({"a": [0.1, 0.2]}, [[0], [1.0]], "integer query positions"),
])
def test_bad_data_is_refused_clearly(deltas, positions, message):
    with pytest.raises(ValueError, match=message):
        cin.prepare(deltas, positions)


@pytest.mark.parametrize("kw, message", [
    ({"S": 0}, "S must be an integer >= 1"),
    ({"B_inner": 1}, "B_inner must be an integer >= 2"),
    ({"R": 0}, "R must be an integer >= 1"),
    ({"seed": -1}, "seed must be an integer >= 0"),
    ({"seed": 2 ** 32}, "seed must be < 2"),
    ({"S": True}, "S must be an integer"),
    ({"power_n": (100, 0)}, "power_n entry"),
    ({"percentiles": (5, 97.5)}, "symmetric"),
    ({"threshold": float("inf")}, "threshold must be finite"),
])
def test_bad_settings_are_refused_clearly(kw, message):
    with pytest.raises(ValueError, match=message):
        small_settings(**kw)
