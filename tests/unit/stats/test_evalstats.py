"""The evaluation statistics against the source texts' worked examples, hand calculation, scipy and
statsmodels."""

import json
import math
import os
import re
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from rerank_study.stats import evalstats as es


def test_mcnemar_primer_values():
    assert abs(es.exact_mcnemar(60, 40) - 0.0568879336409808) < 1e-12
    assert es.exact_mcnemar(20, 0) == 2 / 2 ** 20
    assert es.exact_mcnemar(0, 0) == 1.0
    assert es.exact_mcnemar(5, 5) == 1.0


@pytest.mark.parametrize("g,l", [(60, 40), (20, 0), (0, 20), (3, 9), (7, 8), (1, 0), (30, 12)])
def test_mcnemar_matches_scipy_and_statsmodels(g, l):
    p = es.exact_mcnemar(g, l)
    assert p == pytest.approx(mcnemar([[10, g], [l, 10]], exact=True).pvalue, rel=1e-12, abs=1e-15)
    assert p == pytest.approx(stats.binomtest(min(g, l), g + l, 0.5).pvalue, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True, None])
def test_mcnemar_validates_counts(bad):
    with pytest.raises(ValueError, match="non-negative integer"):
        es.exact_mcnemar(bad, 3)


def test_paired_binary_counts():
    a = [True, True, False, False, True]
    b = [False, True, True, False, True]
    assert es.paired_binary_counts(a, b) == {"gained": 1, "lost": 1, "unchanged": 3, "both_yes": 2,
                                             "both_no": 1}


def test_chance_level_primer_and_hypergeometric():
    # one positive among n distractors: min(K, n+1)/(n+1); K=10: 19 distractors -> 50 %, 999 -> 1 %
    assert es.chance_hit_at_k(20, 1, 10) == 0.5
    assert es.chance_hit_at_k(1000, 1, 10) == pytest.approx(0.01, abs=1e-15)
    assert es.chance_hit_at_k(5, 1, 10) == 1.0
    # several positives: 1 - C(N-m, K)/C(N, K) == scipy's hypergeometric survival function
    for N, m, K in [(50, 2, 10), (50, 5, 10), (50, 1, 10), (10, 3, 4)]:
        assert es.chance_hit_at_k(N, m, K) == pytest.approx(stats.hypergeom(N, m, K).sf(0), abs=1e-12)
    # hand: N=4, m=2, K=1 -> 1/2 ; K=2 -> 1 - C(2,2)/C(4,2) = 5/6
    assert es.chance_hit_at_k(4, 2, 1) == 0.5
    assert es.chance_hit_at_k(4, 2, 2) == pytest.approx(5 / 6, abs=1e-15)
    assert es.chance_hit_at_k(50, 0, 10) == 0.0
    with pytest.raises(ValueError):
        es.chance_hit_at_k(5, 6, 2)


def test_chance_recall():
    assert es.chance_recall_at_k(50, 2, 4, 10) == pytest.approx(10 / 50 * 2 / 4)


def test_stratified_mean_primer_case():
    old = {"familiar": 0.80, "new": 0.40}
    new = {"familiar": 0.85, "new": 0.30}
    w90 = {"familiar": 0.9, "new": 0.1}
    w50 = {"familiar": 0.5, "new": 0.5}
    assert es.stratified_mean(old, w90) == pytest.approx(0.760, abs=1e-12)
    assert es.stratified_mean(new, w90) == pytest.approx(0.795, abs=1e-12)
    assert es.stratified_mean(old, w50) == pytest.approx(0.600, abs=1e-12)
    assert es.stratified_mean(new, w50) == pytest.approx(0.575, abs=1e-12)
    assert es.stratified_mean({"familiar": 0.8, "new": None}, w90) is None  # empty stratum: undefined


@pytest.mark.parametrize("declared,match", [
    ({"relevant_count": {"one": 0.6, "several": 0.6}}, "sum to"),
    ({"relevant_count": {"one": 1.0, "few": 0.0, "several": 0.0}}, "undeclared slice name"),
    ({"topic": {"a": 1.0}}, "undeclared slice family"),
    ({"relevant_count": {"one": 1.0}}, "no weight declared"),
    ({"relevant_count": {"one": -0.5, "several": 1.5}}, "non-negative"),
])
def test_slice_declaration_errors_name_the_value(declared, match):
    with pytest.raises(ValueError, match=match):
        es.validate_slices(declared)


def test_slice_assignment():
    assert es.assign_slice("relevant_count", 1, 0) == "one"
    assert es.assign_slice("relevant_count", 3, 1) == "several"
    assert es.assign_slice("candidate_coverage", 2, 2) == "all"
    assert es.assign_slice("candidate_coverage", 2, 1) == "partly"
    assert es.assign_slice("candidate_coverage", 2, 0) == "none"


def test_multiplicity_against_statsmodels():
    rng = np.random.default_rng(4)
    for _ in range(20):
        p = rng.random(7).tolist()
        p[2] = p[5]  # a tie
        assert es.holm(p) == pytest.approx(list(multipletests(p, method="holm")[1]), abs=1e-15)
        assert es.benjamini_hochberg(p) == pytest.approx(list(multipletests(p, method="fdr_bh")[1]),
                                                         abs=1e-15)
    # hand: p = (0.01, 0.04, 0.03) -> Holm (0.03, 0.06, 0.06); BH (0.03, 0.04, 0.04)
    assert es.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert es.benjamini_hochberg([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.04, 0.04])


def test_sample_size_table_of_seed_003():
    expected = {0.01: 7_683_200, 0.05: 307_328, 0.10: 76_832, 0.20: 19_208}
    for lift, n in expected.items():
        r = es.two_proportion_sample_size(0.02, lift)
        assert r["n_per_group_ceil"] == n and r["n_per_group"] == pytest.approx(n, rel=1e-12)
    # days at 1,000,000 daily users: 5 % -> 0.6 days (10 % share -> 6 days); 10 % -> 0.15 days
    d5 = es.days_needed(307_328, 1_000_000)
    assert round(d5, 1) == 0.6 and round(es.days_needed(307_328, 1_000_000, 0.1)) == 6
    assert es.days_needed(76_832, 1_000_000) == pytest.approx(0.153664)
    # exact quantiles give slightly larger n than 1.96/0.84
    assert es.two_proportion_sample_size(0.02, 0.05, exact_z=True)["n_per_group"] == pytest.approx(
        2 * (stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) ** 2 * 0.02 * 0.98 / 0.001 ** 2, rel=1e-12)


@pytest.mark.parametrize("p", [0, 1, -0.1, 1.5])
def test_sample_size_rejects_proportion_outside_unit_interval(p):
    with pytest.raises(ValueError, match="proportion p must lie in"):
        es.two_proportion_sample_size(p, 0.05)


def test_grouped_variance_and_mde():
    # hand: deltas (1, 3 | 2 | 6), n = 4, mean 3; S = (4, 2, 6), n_g = (2, 1, 1)
    # residuals S - n_g*mean = (-2, -1, 3); sum sq = 14; G/(G-1) = 1.5 -> Var = 1.5*14/16 = 1.3125
    assert es.grouped_variance_of_mean([1, 3, 2, 6], [[0, 1], [2], [3]]) == pytest.approx(1.3125)
    # singleton groups: G/(G-1) * sum (d - mean)^2 / n^2 = sample variance / n
    d = [0.1, -0.2, 0.4, 0.0, 0.3]
    assert es.grouped_variance_of_mean(d, [[i] for i in range(5)]) == pytest.approx(np.var(d, ddof=1) / 5)
    # MDE = (1.959964 + 0.841621) * sd / sqrt(n)
    assert es.minimum_detectable_effect(0.2, 300) == pytest.approx(
        (stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) * 0.2 / math.sqrt(300), rel=1e-12)


def _cli_env():
    """The subprocess imports the very copy of the package this test imported (the working tree,
    or mutmut's mutated copy under mutants/), not whatever an editable install points at."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(Path(es.__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))


def test_cli():
    out = subprocess.run([sys.executable, "-m", "rerank_study.evalstats", "mcnemar", "60", "40"],
                         capture_output=True, text=True, check=True, env=_cli_env()).stdout
    assert "0.05688793364098" in out
    out = subprocess.run([sys.executable, "-m", "rerank_study.evalstats", "sample-size", "--p", "0.02",
                          "--lift", "0.05", "--daily-traffic", "1000000", "--share", "0.1"],
                         capture_output=True, text=True, check=True, env=_cli_env()).stdout
    assert '"n_per_group_ceil": 307328' in out
    bad = subprocess.run([sys.executable, "-m", "rerank_study.evalstats", "mcnemar", "--", "-3", "1"],
                         capture_output=True, text=True, env=_cli_env())
    assert bad.returncode == 2 and "non-negative integer" in bad.stderr


def _exact(message):
    """A pytest.raises pattern that matches the whole message and nothing else."""
    return "^" + re.escape(message) + "$"


def test_sign_test_counts_and_exact_p():
    # wins 0.1 0.3 0.5 0.2, losses -0.2, ties 0.0 -0.0 -> 4 / 1 / 2
    # p = 2 * P(X <= 1), X ~ Bin(5, 1/2) = 2 * (1 + 5) / 32 = 0.375
    r = es.sign_test([0.1, -0.2, 0.0, 0.3, 0.5, -0.0, 0.2])
    assert r == {"wins": 4, "losses": 1, "ties": 2, "p": 0.375}
    assert r["p"] == pytest.approx(stats.binomtest(1, 5, 0.5).pvalue, abs=1e-15)
    # ties only: no discordant pair, p = 1
    assert es.sign_test([0.0, 0.0]) == {"wins": 0, "losses": 0, "ties": 2, "p": 1.0}
    # 6 wins, 0 losses: 2 * 1/64 = 0.03125
    assert es.sign_test([0.01] * 6)["p"] == 0.03125


@pytest.mark.parametrize("gained,lost,name,value", [(-1, 0, "gained", -1), (0, -2, "lost", -2)])
def test_mcnemar_error_names_the_count(gained, lost, name, value):
    with pytest.raises(ValueError, match=_exact(f"{name} must be a non-negative integer, got {value}")):
        es.exact_mcnemar(gained, lost)


def test_paired_binary_counts_fill_all_four_cells_by_hand():
    a = [True, True, True, False, False, False, True]
    b = [False, False, False, True, False, False, True]
    # (a,b): (T,F) x3 gained, (F,T) x1 lost, (F,F) x2 both_no, (T,T) x1 both_yes; unchanged = 7 - 3 - 1
    assert es.paired_binary_counts(a, b) == {"gained": 3, "lost": 1, "unchanged": 3, "both_yes": 1,
                                             "both_no": 2}
    with pytest.raises(ValueError, match=_exact("paired outcomes must have the same length")):
        es.paired_binary_counts([True], [True, False])


@pytest.mark.parametrize("args,message", [
    ((-1, 0, 1), "n_candidates must be a non-negative integer, got -1"),
    ((5, -1, 1), "n_relevant must be a non-negative integer, got -1"),
    ((5, 1, -1), "k must be a non-negative integer, got -1"),
    ((5, 6, 2), "n_relevant 6 > n_candidates 5"),
])
def test_chance_hit_errors_name_the_argument(args, message):
    with pytest.raises(ValueError, match=_exact(message)):
        es.chance_hit_at_k(*args)


def test_chance_hit_when_every_candidate_is_relevant():
    # N = m = 5, K = 2: 1 - C(0, 2) / C(5, 2) = 1 - 0/10 = 1
    assert es.chance_hit_at_k(5, 5, 2) == 1.0
    assert es.chance_hit_at_k(5, 5, 2) == pytest.approx(stats.hypergeom(5, 5, 2).sf(0), abs=1e-15)


def test_chance_recall_with_a_single_relevant_document_and_with_none():
    # min(10, 20)/20 * 1/1 = 0.5
    assert es.chance_recall_at_k(20, 1, 1, 10) == 0.5
    for total in (0, -1):
        with pytest.raises(ValueError, match=_exact("a query needs at least one judged relevant document")):
            es.chance_recall_at_k(20, 0, total, 10)


def test_valid_slice_declarations_pass_including_zero_weights():
    es.validate_slices({"relevant_count": {"one": 0.0, "several": 1.0},
                        "candidate_coverage": {"all": 0.5, "partly": 0.25, "none": 0.25}})
    es.validate_slices({"relevant_count": {"one": 0.1, "several": 0.9}})  # fsum = 1.0
    es.validate_slices({"candidate_coverage": {"all": 1 / 3, "partly": 1 / 3, "none": 1 / 3}})
    es.validate_slices({"relevant_count": {"one": 1, "several": 0}})  # integers are numbers too
    es.validate_slices({})


def test_a_boolean_slice_weight_is_refused():
    with pytest.raises(ValueError, match=_exact(
            "slice weight relevant_count.one must be a non-negative number, got True")):
        es.validate_slices({"relevant_count": {"one": True, "several": 0}})


@pytest.mark.parametrize("family,n,c,message", [
    ("candidate_coverage", 1, 2, "slice family 'candidate_coverage': (1, 2) matches []"),
    ("relevant_count", 0, 0, "slice family 'relevant_count': (0, 0) matches []"),
])
def test_assign_slice_refuses_a_case_no_slice_covers(family, n, c, message):
    with pytest.raises(ValueError, match=_exact(message)):
        es.assign_slice(family, n, c)


def test_stratified_mean_skips_zero_weight_strata_and_checks_names():
    # 0 * (no data) is skipped, not undefined: 1.0 * 0.4
    assert es.stratified_mean({"a": None, "b": 0.4}, {"a": 0.0, "b": 1.0}) == 0.4
    # a stratum of weight 1 is used: 1.0 * 0.7 + (0 * 0.2 skipped)
    assert es.stratified_mean({"a": 0.7, "b": 0.2}, {"a": 1.0, "b": 0.0}) == 0.7
    with pytest.raises(ValueError, match=_exact("strata ['a'] differ from weights ['a', 'b']")):
        es.stratified_mean({"a": 0.7}, {"a": 0.5, "b": 0.5})


def test_z_quantiles_exact_and_rounded():
    za, zb = es.z_quantiles(0.05, 0.8)  # exact by default
    assert za == pytest.approx(stats.norm.ppf(0.975), abs=1e-12) and zb == pytest.approx(stats.norm.ppf(0.8),
                                                                                         abs=1e-12)
    za1, _ = es.z_quantiles(0.05, 0.8, exact=True, two_sided=False)
    assert za1 == pytest.approx(stats.norm.ppf(0.95), abs=1e-12)
    assert es.z_quantiles(0.05, 0.8, exact=False) == (1.96, 0.84)
    assert es.z_quantiles(0.05, 0.8, exact=False, two_sided=False) == (1.645, 0.84)
    for alpha, power in [(0.05, 0.9), (0.01, 0.8)]:
        with pytest.raises(ValueError, match=_exact(
                "rounded z values exist only for alpha 0.05 and power 0.8 (1.96 / 0.84)")):
            es.z_quantiles(alpha, power, exact=False)


@pytest.mark.parametrize("alpha,power", [(0, 0.8), (1, 0.8), (1.5, 0.8), (0.05, 0), (0.05, 1), (0.05, 1.5)])
def test_z_quantiles_refuse_alpha_or_power_outside_the_open_unit_interval(alpha, power):
    with pytest.raises(ValueError, match=_exact(f"alpha and power must lie in (0, 1), got {alpha}, {power}")):
        es.z_quantiles(alpha, power)


def test_grouped_variance_with_two_groups_and_with_one():
    # deltas 1 | 3: n = 2, mean 2, residuals -1, 1 -> 2 * (1 + 1) / 2^2 = 1.0 (= sample variance 2 / n)
    assert es.grouped_variance_of_mean([1.0, 3.0], [[0], [1]]) == 1.0
    with pytest.raises(ValueError, match=_exact("the grouped variance needs at least two groups")):
        es.grouped_variance_of_mean([1.0, 3.0], [[0, 1]])


def test_minimum_detectable_effect_edges():
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    assert es.minimum_detectable_effect(0.2, 1) == pytest.approx(z * 0.2, rel=1e-12)  # sqrt(1) = 1
    assert es.minimum_detectable_effect(0.0, 300) == 0.0
    # rounded z: (1.96 + 0.84) * 0.2 / sqrt(100) = 2.8 * 0.02 = 0.056
    assert es.minimum_detectable_effect(0.2, 100, exact=False) == pytest.approx(0.056, abs=1e-15)
    for n, sd in [(0, 0.2), (10, -0.1)]:
        with pytest.raises(ValueError, match=_exact(f"need n >= 1 and sd_eff >= 0, got {n}, {sd}")):
            es.minimum_detectable_effect(sd, n)


def test_sample_size_result_carries_its_inputs_and_z_values():
    r = es.two_proportion_sample_size(0.02, 0.05)
    assert set(r) == {"p", "relative_lift", "absolute_delta", "z_alpha", "z_beta", "n_per_group",
                      "n_per_group_ceil"}
    assert r["p"] == 0.02 and r["relative_lift"] == 0.05
    assert r["absolute_delta"] == pytest.approx(0.001, abs=1e-18)  # 0.02 * 0.05
    assert (r["z_alpha"], r["z_beta"]) == (1.96, 0.84)


@pytest.mark.parametrize("lift", [0, -0.1])
def test_sample_size_refuses_a_lift_that_is_not_positive(lift):
    with pytest.raises(ValueError, match=_exact(f"relative lift must be > 0, got {lift!r}")):
        es.two_proportion_sample_size(0.02, lift)


def test_sample_size_ceiling_is_exact_just_above_a_whole_number():
    # p = x / 10^12 with x = 220351 * 1143487 = 251968503937, a divisor of 32 * 10^12 - 1; lift 0.7.
    # n = 2 (1.96 + 0.84)^2 p (1 - p) / (0.7 p)^2 = 15.68 / 0.49 * (1 - p) / p = 32 (10^12 - x) / x
    #   = (32 * 10^12 - 1 + 1) / x - 32 = 127 + 1/x - 32 = 95 + 1/x  (1/x = 4e-12) -> per group 96
    x = 220351 * 1143487
    assert x == 251968503937 and (32 * 10 ** 12 - 1) % x == 0
    P, L = Fraction(x, 10 ** 12), Fraction("0.7")
    assert 2 * (Fraction("1.96") + Fraction("0.84")) ** 2 * P * (1 - P) / (P * L) ** 2 == 95 + Fraction(1, x)
    r = es.two_proportion_sample_size(0.251968503937, 0.7)
    assert r["n_per_group"] == pytest.approx(95, abs=1e-9)
    assert r["n_per_group_ceil"] == 96


def test_exact_z_sample_size_ceiling():
    za, zb = stats.norm.ppf(0.975), stats.norm.ppf(0.8)
    n = 2 * (za + zb) ** 2 * 0.02 * 0.98 / 0.001 ** 2  # = 307,726.3...
    r = es.two_proportion_sample_size(0.02, 0.05, exact_z=True)
    assert r["n_per_group"] == pytest.approx(n, rel=1e-12) and r["n_per_group_ceil"] == math.ceil(n)
    # a lift chosen so that n is the whole number 1000: lift = sqrt(2 (za + zb)^2 (1 - p) / p / 1000)
    # with p = 0.5; float rounding leaves n within 1e-12 of 1000, and the ceiling is 1000, not 1001
    lift = 0.12529069984918342
    assert lift == pytest.approx(math.sqrt(2 * (za + zb) ** 2 * 0.5 / 0.5 / 1000), rel=1e-12)
    r = es.two_proportion_sample_size(0.5, lift, exact_z=True)
    assert r["n_per_group"] == pytest.approx(1000, abs=1e-9) and r["n_per_group_ceil"] == 1000


def test_days_needed_edges():
    assert es.days_needed(10, 1) == 20.0           # 2 * 10 / (1 * 1)
    assert es.days_needed(10, 0.5) == 40.0         # 2 * 10 / 0.5
    assert es.days_needed(10, 100, 0.5, groups=3) == 0.6  # 3 * 10 / (100 * 0.5) = 30 / 50
    for traffic, share in [(0, 1.0), (-5, 1.0), (100, 0), (100, -0.1), (100, 1.5)]:
        with pytest.raises(ValueError, match=_exact(
                f"daily traffic must be > 0 and share in (0, 1], got {traffic}, {share}")):
            es.days_needed(10, traffic, share)


def _main_json(capsys, argv):
    assert es.main(argv) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_main_mcnemar_in_process(capsys):
    (out,) = _main_json(capsys, ["mcnemar", "60", "40"])
    assert set(out) == {"gained", "lost", "p"} and (out["gained"], out["lost"]) == (60, 40)
    assert out["p"] == pytest.approx(stats.binomtest(40, 100, 0.5).pvalue, rel=1e-12)


def test_main_sample_size_in_process(capsys):
    # rounded z: the source text's table; days = 2 n / (1,000,000 * 0.1)
    r5, r10 = _main_json(capsys, ["sample-size", "--p", "0.02", "--lift", "0.05", "0.1",
                                  "--daily-traffic", "1000000", "--share", "0.1"])
    assert (r5["relative_lift"], r5["n_per_group_ceil"], r10["relative_lift"], r10["n_per_group_ceil"]) == (
        0.05, 307_328, 0.1, 76_832)
    assert r5["days"] == pytest.approx(2 * 307_328 / 100_000, rel=1e-12)   # 6.14656
    assert r10["days"] == pytest.approx(2 * 76_832 / 100_000, rel=1e-12)   # 1.53664
    # without traffic: no days; share defaults to 1
    (r,) = _main_json(capsys, ["sample-size", "--p", "0.02", "--lift", "0.2"])
    assert "days" not in r and r["n_per_group_ceil"] == 19_208 and r["p"] == 0.02
    (r,) = _main_json(capsys, ["sample-size", "--p", "0.02", "--lift", "0.2", "--daily-traffic", "1000"])
    assert r["days"] == pytest.approx(2 * 19_208 / 1000, rel=1e-12)
    # exact z with other alpha / power: 2 (z_0.95 + z_0.9)^2 p (1 - p) / (p lift)^2
    (r,) = _main_json(capsys, ["sample-size", "--p", "0.02", "--lift", "0.05", "--exact-z",
                               "--alpha", "0.1", "--power", "0.9"])
    n = 2 * (stats.norm.ppf(0.95) + stats.norm.ppf(0.9)) ** 2 * 0.02 * 0.98 / 0.001 ** 2
    assert r["n_per_group"] == pytest.approx(n, rel=1e-12) and r["n_per_group_ceil"] == math.ceil(n)


def test_main_mde_in_process(capsys):
    (r,) = _main_json(capsys, ["mde", "--sd-eff", "0.17", "--n", "300"])
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    assert r == {"mde": pytest.approx(z * 0.17 / math.sqrt(300), rel=1e-12), "n": 300, "alpha": 0.05,
                 "power": 0.8}
    (r,) = _main_json(capsys, ["mde", "--sd-eff", "0.17", "--n", "300", "--alpha", "0.1", "--power", "0.9"])
    z = stats.norm.ppf(0.95) + stats.norm.ppf(0.9)
    assert r == {"mde": pytest.approx(z * 0.17 / math.sqrt(300), rel=1e-12), "n": 300, "alpha": 0.1,
                 "power": 0.9}


@pytest.mark.parametrize("argv,message", [
    (["mcnemar", "--", "-3", "1"], "gained must be a non-negative integer, got -3"),
    (["sample-size", "--p", "1.5", "--lift", "0.05"], "proportion p must lie in (0, 1), got 1.5"),
    (["sample-size", "--p", "0.02", "--lift", "0.05", "--daily-traffic", "1000", "--share", "2"],
     "daily traffic must be > 0 and share in (0, 1], got 1000.0, 2.0"),
    (["mde", "--sd-eff", "0.17", "--n", "0"], "need n >= 1 and sd_eff >= 0, got 0, 0.17"),
])
def test_main_reports_a_bad_value_as_a_usage_error(capsys, argv, message):
    with pytest.raises(SystemExit) as exc:
        es.main(argv)
    assert exc.value.code == 2
    assert capsys.readouterr().err == ("usage: python -m rerank_study.evalstats [-h] "
                                       "{mcnemar,sample-size,mde} ...\n"
                                       "python -m rerank_study.evalstats: "
                                       f"error: {message}\n")


def _main_help(capsys, monkeypatch, argv):
    monkeypatch.setenv("COLUMNS", "200")  # argparse wraps at the terminal width
    with pytest.raises(SystemExit) as exc:
        es.main([*argv, "--help"])
    assert exc.value.code == 0
    return capsys.readouterr().out


def _has_line(text, pattern):
    return re.search(f"(?m)^{pattern}$", text) is not None


def test_main_help_shows_the_module_description_verbatim_and_each_command(capsys, monkeypatch):
    out = _main_help(capsys, monkeypatch, [])
    # the module docstring's command block, its lines kept as written (raw description)
    assert ("\nCommand line (``python -m rerank_study.evalstats --help``):\n"
            "    mcnemar GAINED LOST\n"
            "    sample-size --p 0.02 --lift 0.05 [--daily-traffic 1000000 --share 0.1] [--exact-z]\n"
            "    mde --sd-eff 0.17 --n 300 [--alpha 0.05 --power 0.8]\n") in out
    assert _has_line(out, re.escape("Evaluation statistics of an IR comparison, as pure functions."))
    assert _has_line(out, r" +mcnemar +exact McNemar p-value from gained / lost counts")
    assert _has_line(out, r" +sample-size +two-proportion sample size per group")
    assert _has_line(out, r" +mde +minimum detectable mean difference of a paired n-query set")


def test_main_help_explains_the_options(capsys, monkeypatch):
    out = _main_help(capsys, monkeypatch, ["sample-size"])
    assert _has_line(out, r"  --p P +baseline proportion, e\.g\. 0\.02")
    assert _has_line(out, r" +relative lift\(s\), e\.g\. 0\.01 0\.05")
    assert _has_line(out, r"  --exact-z +exact normal quantiles instead of 1\.96 / 0\.84")
    out = _main_help(capsys, monkeypatch, ["mde"])
    assert _has_line(out, r"  --sd-eff SD_EFF +per-query SD implied by the grouped variance")


@pytest.mark.parametrize("argv,prog,missing", [
    ([], "", "cmd"),
    (["sample-size", "--lift", "0.05"], " sample-size", "--p"),
    (["sample-size", "--p", "0.02"], " sample-size", "--lift"),
    (["mde", "--n", "300"], " mde", "--sd-eff"),
    (["mde", "--sd-eff", "0.17"], " mde", "--n"),
])
def test_main_requires_a_command_and_its_required_options(capsys, argv, prog, missing):
    with pytest.raises(SystemExit) as exc:
        es.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == (
        f"python -m rerank_study.evalstats{prog}: error: the following arguments are required: "
        f"{missing}")
