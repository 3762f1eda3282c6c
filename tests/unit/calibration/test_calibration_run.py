"""The run's calibration around the core (rerank_study.calibration.calibration_run,
config.calibration_settings, the
report section's reading): expected values are worked out by hand here."""

from __future__ import annotations

import copy

import pytest
import yaml
from conftest import ROOT

from rerank_study.calibration import calibration_run as cr
from rerank_study.calibration.calibration_inputs import CalibrationSettings
from rerank_study.report import report_calibration as rc
from rerank_study.seal import protocol
from rerank_study.settings.config import calibration_settings, run_settings

CONFIG = yaml.safe_load((ROOT / "config/config.yaml").read_text())


def cfg(**over):
    out = copy.deepcopy(CONFIG)
    out.update(over)
    return out


def test_the_settings_follow_the_runs_kind():
    dev = calibration_settings(cfg())
    assert dev == {"seed": 110, "S": 2000, "B_inner": 1000, "R": 10000, "S_power": 400, "n_audit": 20,
                   "power_n": [100, 200, 300, 400, 500, 600], "confirmation_n": 300}
    smoke = calibration_settings(cfg(smoke=True))
    assert smoke == {**dev, "S": 20, "B_inner": 50, "R": 200, "S_power": 10, "n_audit": 100}
    confirm = calibration_settings(cfg(smoke=True), confirmation=True)  # an opening ignores smoke
    assert confirm == {**dev, "seed": 111}
    c = cfg()
    c["calibration"]["power_n"] = [600, 100]
    c["evalstats"]["power"]["confirm_n"] = 250
    assert calibration_settings(c)["power_n"] == [100, 250, 600]
    assert run_settings(cfg())["calibration"] == dev


def test_the_frozen_protocol_carries_the_confirmation_calibration():
    blocks = protocol._analysis_blocks(cfg())
    assert blocks["calibration"] == {**calibration_settings(cfg()), "seed": 111}


def test_settings_of_maps_every_field():
    s = cr.settings_of({**calibration_settings(cfg()), "S": 7}, [2.5, 97.5], 0.01)
    assert s == CalibrationSettings(seed=110, S=7, B_inner=1000, R=10000, S_power=400,
                                    power_n=(100, 200, 300, 400, 500, 600), threshold=0.01,
                                    percentiles=(2.5, 97.5), n_audit=20)


def test_run_deltas_and_positions():
    rows = [{"qid": "1", "blend_ndcg@10": "0.5", "ce_ndcg@10": "0.25"}, {"qid": "2", "blend_ndcg@10": "0",
                                                                         "ce_ndcg@10": "1"}]
    assert cr.run_deltas(rows, {"blend-ce": ["blend", "ce"]}, "ndcg@10") == {"blend-ce": [0.25, -1.0]}


SMALL = CalibrationSettings(seed=3, S=4, B_inner=10, R=20, S_power=3, power_n=(10, 20), n_audit=2)


def test_one_group_is_not_computable_and_keeps_the_key_set():
    deltas = {"a": [0.1, 0.2, 0.3], "b": [0.0, 0.0, 0.1]}
    none = cr.calibration_record(deltas, [[0, 1, 2]], SMALL, primary="a", metric="m", confirmation_n=20)
    some = cr.calibration_record(deltas, [[0], [1, 2]], SMALL, primary="a", metric="m", confirmation_n=20)
    assert sorted(none) == sorted(some)
    assert none["computable"] is False and none["comparisons"] == {} and none["reason"] == cr.NOT_COMPUTABLE
    assert none["data"] == {"n_queries": 3, "n_groups": 1, "comparisons": ["a", "b"]}
    assert some["computable"] is True and some["reason"] is None and set(some["comparisons"]) == {"a", "b"}
    assert rc.calibration_section(none) == (f"{rc.HEADING}\n\nNot computable: {cr.NOT_COMPUTABLE}.\n")


def test_a_wrong_primary_or_confirmation_size_is_refused():
    deltas = {"a": [0.1, 0.2]}
    with pytest.raises(ValueError, match="primary comparison 'x'"):
        cr.calibration_record(deltas, [[0], [1]], SMALL, primary="x", metric="m", confirmation_n=20)
    with pytest.raises(ValueError, match="confirmation size 300"):
        cr.calibration_record(deltas, [[0], [1]], SMALL, primary="a", metric="m", confirmation_n=300)


@pytest.mark.parametrize("wilson, said", [((0.920, 0.941), "too narrow here"),
                                          ((0.951, 0.97), "wider than needed here"),
                                          ((0.93, 0.96), "as nominal here, within Monte-Carlo error"),
                                          ((0.95, 0.96), "as nominal here, within Monte-Carlo error")])
def test_the_reading_says_where_the_coverage_lies_against_nominal(wilson, said):
    assert rc.verdict(0.94, wilson, 0.95) == said
