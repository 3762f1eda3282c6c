"""The checked inputs of a calibration (rerank_study.calibration.calibration_inputs): its settings and the
deltas and query groups it runs on. Bad input is refused with a message naming what is wrong."""

from __future__ import annotations

import numpy as np
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


def test_prepare_gives_group_sums_sizes_and_members_by_hand():
    data = cin.prepare({"a": [0.5, -0.25, 1.0, 0.125], "b": [1, 2, 3, 4]}, [[0, 2], [3], [1]])
    assert data.names == ("a", "b") and (data.G, data.N) == (3, 4)
    assert data.sums.tolist() == [[1.5, 0.125, -0.25], [4.0, 4.0, 2.0]]  # a: 0.5 + 1.0, 0.125, -0.25
    assert data.sizes.tolist() == [2, 1, 1]
    assert data.deltas.tolist() == [[0.5, -0.25, 1.0, 0.125], [1.0, 2.0, 3.0, 4.0]]
    assert [m.tolist() for m in data.members] == [[0, 2], [3], [1]]
    assert cin.prepare({"a": [0.1, 0.2]}, [[np.int64(1)], [np.int32(0)]]).G == 2  # numpy integers are fine


def test_prepare_refuses_a_boolean_member():
    with pytest.raises(ValueError, match="integer query positions"):
        cin.prepare({"a": [0.1, 0.2]}, [[True], [0]])


def test_the_partition_message_counts_every_kind_of_fault():
    with pytest.raises(ValueError, match=r"the groups must partition the 4 queries exactly: 2 not covered "
                                         r"\(first \[1, 3\]\), 1 outside 0\.\.3 \(first \[7\]\), "
                                         r"1 duplicate"):
        cin.check_partition([[0, 2], [2, 7]], 4)


def test_settings_defaults_levels_and_normalised_fields():
    s = cin.CalibrationSettings(seed=0)
    assert (s.S, s.B_inner, s.R, s.S_power, s.n_audit, s.threshold) == (2000, 2000, 10_000, 400, 20, 0.01)
    assert s.percentiles == (2.5, 97.5) and s.nominal == 0.95 and s.alpha == 0.05
    t = small_settings(percentiles=[5, 95], power_n=[10, 20])
    assert t.percentiles == (5.0, 95.0) and t.power_n == (10, 20) and t.nominal == 0.9 and t.alpha == 0.1
    assert small_settings(seed=2 ** 32 - 1).seed == 2 ** 32 - 1
