"""The interval arithmetic of the calibration (rerank_study.calibration.calibration_intervals): cluster
standard error, jackknife acceleration, BCa and percentile intervals, the drawn bootstrap totals.

Expected values come from closed forms worked out below or from an independent library
(scipy.stats.bootstrap BCa, statsmodels cluster-robust OLS, evalstats' grouped variance); never from the
code under test.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from test_calibration import grouped_data, partition

from rerank_study.calibration import calibration_intervals as civ
from rerank_study.stats import bootstrap as bs
from rerank_study.stats import evalstats as es

PCT = (2.5, 97.5)


def test_hand_calculation_cluster_se_and_jackknife_acceleration():
    # Groups (positions): {0}, {1}, {2, 3}; Δ = 0.1 | 0.4 | 0.2, 0.5.
    # S = (0.1, 0.4, 0.7), n = (1, 1, 2), N = 4, θ̂ = 1.2 / 4 = 0.3.
    # Residuals S_g − n_g θ̂ = (−0.2, 0.1, 0.1); Σ r² = 0.04 + 0.01 + 0.01 = 0.06.
    # se² = G/(G−1) Σ r² / N² = 3/2 · 0.06 / 16 = 0.005625, se = 0.075.
    deltas = [0.1, 0.4, 0.2, 0.5]
    positions = [[0], [1], [2, 3]]
    sums, sizes = bs.group_sums(deltas, positions)
    theta = civ.ratio(sums, sizes)
    assert theta == pytest.approx(0.3, rel=1e-15)
    assert civ.sample_se(sums, sizes, theta) == pytest.approx(0.075, rel=1e-13)
    assert civ.sample_se(sums, sizes, theta) ** 2 == pytest.approx(es.grouped_variance_of_mean(deltas,
                                                                                               positions),
                                                                  rel=1e-13)
    # Jackknife (leave one group out): θ_(0) = 1.1/3 = 11/30, θ_(1) = 0.8/3 = 8/30, θ_(2) = 0.5/2 = 1/4.
    # Mean = (11/30 + 8/30 + 1/4)/3 = 53/180. U_j = (G−1)(mean − θ_(j)) = 2(...):
    # U = (−26/180, 10/180, 16/180) = (−13, 5, 8)/90.
    # Σ U³ = (−2197 + 125 + 512)/90³ = −1560/90³;  Σ U² = (169 + 25 + 64)/90² = 258/90².
    # a = (1/6) Σ U³ / (Σ U²)^{3/2} (scipy's /n³ and /n² cancel) = (1/6)(−1560)/258^{3/2}
    #   = −260 / (258 √258) ≈ −0.0627397.
    jack = civ.jackknife(sums, sizes)
    expected_jack = [Fraction(11, 30), Fraction(8, 30), Fraction(1, 4)]
    assert jack.tolist() == pytest.approx([float(x) for x in expected_jack], rel=1e-14)
    mean = sum(expected_jack) / 3
    assert mean == Fraction(53, 180)
    u = [2 * (mean - x) for x in expected_jack]
    assert u == [Fraction(-13, 90), Fraction(5, 90), Fraction(8, 90)]
    assert civ.acceleration(jack) == pytest.approx(-260 / (258 * math.sqrt(258)), rel=1e-12)


def test_acceleration_of_the_mean_is_the_skewness_formula():
    # Efron & Tibshirani (1993) eq. 14.15 for the mean of n values: the jackknife gives
    # a = Σ (x − x̄)³ / (6 (Σ (x − x̄)²)^{3/2}), independent of n.
    x = np.random.default_rng(3).exponential(1.0, 25)
    jack = civ.jackknife(x, np.ones(25, dtype=np.int64))
    dev = x - x.mean()
    assert civ.acceleration(jack) == pytest.approx((dev ** 3).sum() / (6 * (dev ** 2).sum() ** 1.5), rel=1e-9)


def test_cluster_se_and_cluster_t_equal_statsmodels_cluster_ols():
    import statsmodels.api as sm

    deltas, positions = grouped_data(5, G=20, K=1, max_size=5)
    d = np.array(deltas["c0"])
    N, G = len(d), len(positions)
    labels = np.empty(N, dtype=np.int64)
    for g, members in enumerate(positions):
        labels[members] = g
    fit = sm.OLS(d, np.ones((N, 1))).fit(cov_type="cluster", cov_kwds={"groups": labels}, use_t=True)
    raw = sm.OLS(d, np.ones((N, 1))).fit(cov_type="cluster",
                                         cov_kwds={"groups": labels, "use_correction": False})
    sums, sizes = bs.group_sums(d.tolist(), positions)
    theta = civ.ratio(sums, sizes)
    se = civ.sample_se(sums, sizes, theta)
    # statsmodels CRV1 (sandwich_covariance.cov_cluster, use_correction=True by default) multiplies
    # the uncorrected Σ_g (Σ_{q∈g} e_q)² / N² by G/(G−1) · (N−1)/(N−k), k = 1 parameter here, so the
    # factor is G/(G−1) · (N−1)/(N−1) = G/(G−1): exactly our small-sample factor.
    assert fit.bse[0] ** 2 == pytest.approx(se ** 2, rel=1e-12)
    assert raw.bse[0] ** 2 == pytest.approx(se ** 2 * (G - 1) / G, rel=1e-12)
    # With use_t, statsmodels' cluster inference uses G − 1 degrees of freedom: the same interval.
    lo, hi = fit.conf_int(alpha=0.05)[0]
    ours = civ.cluster_t_interval(theta, se, civ.t_quantile(G, PCT))
    assert ours == pytest.approx((lo, hi), rel=1e-12)
    assert fit.params[0] == pytest.approx(theta, rel=1e-13)


def test_bca_agrees_with_scipy_bootstrap_on_ungrouped_data():
    # Ungrouped (size-1 groups) skewed data; our BCa on our replicates vs scipy.stats.bootstrap
    # (method="BCa") on its own draws. Tolerance: 4.5 × √2 × the Monte-Carlo SE of a bootstrap
    # quantile, SE ≈ √(p(1−p)/B) / f(q), with the density f taken from the replicates.
    from scipy.stats import bootstrap

    x = np.random.default_rng(12).exponential(1.0, 40)
    n, B = len(x), 20_000
    sizes = np.ones(n, dtype=np.int64)
    idx = np.random.default_rng(13).integers(0, n, size=(B, n), dtype=np.int64)
    reps = bs.ratio_replicates(x, sizes, idx)
    theta = civ.ratio(x, sizes)
    ours, diag = civ.bca_interval(reps, theta, civ.jackknife(x, sizes), PCT)
    ref = bootstrap((x,), np.mean, n_resamples=B, method="BCa", confidence_level=0.95,
                    rng=np.random.default_rng(14)).confidence_interval
    levels, _ = civ.bca_percentiles(reps, theta, civ.jackknife(x, sizes), PCT)
    for end, theirs, p in zip(ours, (ref.low, ref.high), levels):
        p = p / 100
        lo_q, hi_q = np.quantile(reps, [max(p - 0.01, 0), min(p + 0.01, 1)])
        density = (min(p + 0.01, 1) - max(p - 0.01, 0)) / (hi_q - lo_q)
        mc_se = math.sqrt(p * (1 - p) / B) / density
        assert abs(end - theirs) <= 4.5 * math.sqrt(2) * mc_se, (end, theirs, mc_se)
    # informative: BCa moved away from the percentile interval by more than the tolerance
    pct = civ.percentile_interval(reps, PCT)
    assert ours[1] - pct[1] > 0.01 and diag["a"] > 0 and diag["z0"] is not None


def test_grouped_bca_equals_scipy_bca_on_the_same_replicates():
    # Deterministic check of every formula detail: scipy.stats.bootstrap accepts a previous bootstrap
    # distribution (bootstrap_result, n_resamples=0), so it computes ITS BCa on OUR replicates. With
    # paired=True and the ratio statistic Σ S / Σ n over the (S_g, n_g) pairs, scipy's jackknife leaves
    # out one pair = one group: the grouped BCa. Remaining differences: scipy's ndtri/ndtr vs
    # NormalDist, its pairwise jackknife mean, quantile(α) vs percentile(100 α): a few ulp.
    from types import SimpleNamespace

    from scipy.stats import bootstrap

    def ratio_stat(s, n, axis=-1):
        return s.sum(axis=axis) / n.sum(axis=axis)

    for seed in range(5):
        deltas, positions = grouped_data(40 + seed, G=25, K=1, max_size=5)
        # integer Δ summing to 0: many exact ties θ* = θ̂ = 0 (the 'mean' kind counts them half)
        if seed == 4:
            d = np.sign(np.round(np.array(deltas["c0"]) * 2))
            d[-1] -= d.sum()
            deltas = {"c0": d.tolist()}
        sums, sizes = bs.group_sums(deltas["c0"], positions)
        idx = np.random.default_rng(seed).integers(0, 25, size=(4000, 25), dtype=np.int64)
        reps = bs.ratio_replicates(sums, sizes, idx)
        ours, _ = civ.bca_interval(reps, civ.ratio(sums, sizes), civ.jackknife(sums, sizes), PCT)
        ref = bootstrap((sums, sizes.astype(float)), ratio_stat, paired=True, vectorized=True, n_resamples=0,
                        method="BCa", bootstrap_result=SimpleNamespace(bootstrap_distribution=reps))
        assert ours == pytest.approx((ref.confidence_interval.low, ref.confidence_interval.high), rel=1e-12,
                                     abs=1e-15)
        if seed == 4:
            assert np.count_nonzero(reps == civ.ratio(sums, sizes)) > 200


def test_percentile_of_score_counts_ties_half():
    # scipy's 'mean' kind: (#{< 2} + #{≤ 2}) / (2B) = (1 + 3) / 8 = 0.5
    assert civ.percentile_of_score(np.array([1.0, 2.0, 2.0, 3.0]), 2.0) == 0.5
    assert civ.percentile_of_score(np.array([1.0, 2.0, 2.0, 3.0]), 0.0) == 0.0


def test_drawn_totals_is_sequential_for_every_shape():
    # Adversarial magnitudes (1e-8 .. 1e8) make any reordering of the sum visible.
    rng = np.random.default_rng(0)
    for G, B in ((2, 2), (3, 1), (7, 5), (92, 2000), (552, 64), (40, 9000)):
        s = rng.standard_normal(G) * 10.0 ** rng.integers(-8, 8, G)
        n = rng.integers(1, 6, G)
        idx = rng.integers(0, G, (B, G))
        idx_t = np.ascontiguousarray(idx.T)
        assert np.array_equal(civ.drawn_totals(s, idx_t) / civ.drawn_totals(n, idx_t),
                              bs.ratio_replicates(s, n, idx))
    with pytest.raises(ValueError, match="C-contiguous"):
        civ.drawn_totals(s, idx.T)


def test_bootstrap_se_is_the_evalstats_grouped_variance():
    deltas, positions = grouped_data(8, G=12, K=1)
    d = deltas["c0"]
    sums, sizes = bs.group_sums(d, positions)
    draw = [3, 3, 0, 11, 5, 7, 7, 7, 1, 2, 9, 4]
    se = civ.cluster_se(sums[draw][:, None], sizes[draw][:, None], bs.ratio_replicates(sums, sizes,
                                                                                       np.array([draw])))
    expanded = [d[i] for g in draw for i in positions[g]]  # the drawn groups' queries, a copy per draw
    exp_positions = partition([len(positions[g]) for g in draw])
    assert se[0] ** 2 == pytest.approx(es.grouped_variance_of_mean(expanded, exp_positions), rel=1e-12)
