"""report.report_calibration: the section "How far to trust these intervals here" of a hand-written
calibration.json (every line of it written by hand), the verdict at the edges of the Monte-Carlo interval, and
a calibration that could not be computed."""

from __future__ import annotations

from rerank_study.report import report_calibration as rc

SETTINGS = {"seed": 5, "S": 200, "B_inner": 100, "R": 1000, "S_power": 50, "nominal_coverage": 0.95,
            "test_level": 0.05, "threshold": 0.02}


def stream(coverage, wilson, rate, width=0.125, undefined=(0, 1)):
    return ({"coverage": coverage, "wilson": wilson, "mean_width": width, "undefined": undefined[0]},
            {"rate": rate, "wilson": [0.025, 0.075], "undefined": undefined[1]})


PCT, BCA = stream(0.9, [0.85, 0.935], 0.05), stream(0.955, [0.92, 0.975], 0.045, width=None)
CAL = {"computable": True, "primary": "blend-ce", "methods": ["percentile", "bca"], "settings": SETTINGS,
       "confirmation_n": 300,
       "comparisons": {"blend-ce": {
           "coverage": {"percentile": PCT[0], "bca": BCA[0]},
           "type_i_error": {"percentile": PCT[1], "bca": BCA[1]},
           "randomization": {"p": 0.0123456},
           "power": [{"n": 100, "m_groups": 80}, {"n": 300, "m_groups": 240, "p_mean_reaches_threshold": 0.5,
                                                  "wilson_reaches": [0.4, 0.6], "p_lower_above_0": 0.875,
                                                  "wilson_lower_above_0": [0.8, 0.925]}]},
           "ce-rrf": {"randomization": {"p": 0.5}}}}


def test_the_verdict_compares_the_monte_carlo_interval_with_nominal():
    assert rc.verdict(0.9, [0.85, 0.949], 0.95) == "too narrow here"
    assert rc.verdict(0.99, [0.951, 1.0], 0.95) == "wider than needed here"
    assert rc.verdict(0.94, [0.9, 0.95], 0.95) == "as nominal here, within Monte-Carlo error"  # on the edge


def test_shares_are_percentages_with_one_decimal():
    assert rc.pct(0.9126) == "91.3 %" and rc.pct(None) == "NA"
    assert rc.mc_interval([0.05, 0.1]) == "[5.0, 10.0]"


def test_the_method_table_gives_each_method_its_coverage_type_i_error_and_width():
    assert rc.method_table(CAL, CAL["comparisons"]["blend-ce"]) == [
        "| method (blend-ce) | coverage at nominal 95 % [MC interval] | type I error at nominal 5 % [MC "
        "interval] | mean width | undefined (coverage / null) |", "|---|---|---|---|---|",
        "| percentile (preregistered) | 90.0 % [85.0, 93.5] | 5.0 % [2.5, 7.5] | 0.125000 | 0 / 1 |",
        "| BCa | 95.5 % [92.0, 97.5] | 4.5 % [2.5, 7.5] | NA | 0 / 1 |"]


def test_the_section_reads_the_preregistered_interval_the_tests_and_the_power():
    lines = rc.calibration_section(CAL).split("\n")
    assert lines[0] == rc.HEADING
    assert lines[2].startswith("Calibration on this run's own data (rule calibrate, calibration.json; seed "
                               "5, S = 200 outer simulations per stream, B_inner = 100 replicates inside "
                               "each, R = 1000 sign flips, S_power = 50 simulations per power size)")
    assert lines[9] == ("Reading: the percentile interval covers 90.0 % [85.0, 93.5]: too narrow here; "
                        "BCa 95.5 %.")
    assert ("Grouped sign-flip randomization test of the mean Δ (two-sided, R = 1000, p = (1 + extreme) / "
            "(1 + R)): blend-ce p = 0.01235; ce-rrf p = 0.5.") in lines
    assert lines[-2] == ("Power of a confirmation of 300 queries (240 groups drawn; it assumes the true "
                         "effect is this run's estimate, so it is optimistic), blend-ce: P(mean Δ ≥ 0.02) = "
                         "50.0 % [40.0, 60.0]; P(grouped percentile lower bound > 0) = 87.5 % [80.0, 92.5].")


def test_a_calibration_that_could_not_be_computed_says_why():
    assert rc.calibration_section({"computable": False, "reason": "fewer than two groups"}) == \
        f"{rc.HEADING}\n\nNot computable: fewer than two groups.\n"
