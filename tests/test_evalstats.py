"""Seed 000 / 003 tools against the primers' worked examples, hand calculation, scipy and statsmodels."""

import math
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from rerank_study import evalstats as es


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
    assert es.paired_binary_counts(a, b) == {"gained": 1, "lost": 1, "unchanged": 3, "both_yes": 2, "both_no": 1}


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
        assert es.benjamini_hochberg(p) == pytest.approx(list(multipletests(p, method="fdr_bh")[1]), abs=1e-15)
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


def test_cli():
    out = subprocess.run([sys.executable, "-m", "rerank_study.evalstats", "mcnemar", "60", "40"],
                         capture_output=True, text=True, check=True).stdout
    assert "0.05688793364098" in out
    out = subprocess.run([sys.executable, "-m", "rerank_study.evalstats", "sample-size", "--p", "0.02", "--lift",
                          "0.05", "--daily-traffic", "1000000", "--share", "0.1"], capture_output=True, text=True,
                         check=True).stdout
    assert '"n_per_group_ceil": 307328' in out
    bad = subprocess.run([sys.executable, "-m", "rerank_study.evalstats", "mcnemar", "--", "-3", "1"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "non-negative integer" in bad.stderr
