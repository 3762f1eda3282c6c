"""Calibration of the grouped interval (rerank_study.calibration.calibration).

Expected values come from theory (exact t coverage of normal data, the uniform null distribution
of a valid randomization p-value, closed forms worked out below) or from an independent library
(scipy.stats.bootstrap BCa, statsmodels cluster-robust OLS, statsmodels' Wilson interval) or from
an independent brute-force simulation written here with the standard library's ``random``;
never from the code under test. Monte-Carlo comparisons use wide (99 % / 99.9 %) bands, stated
at each test, and fixed seeds, so they are deterministic.
"""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction
from statistics import NormalDist

import numpy as np
import pytest

from rerank_study.calibration import calibration as cal
from rerank_study.calibration import calibration_inputs as cin
from rerank_study.calibration import calibration_intervals as civ
from rerank_study.stats import bootstrap as bs
from rerank_study.stats import evalstats as es

PCT = (2.5, 97.5)


def partition(sizes):
    """Consecutive positions grouped by the given sizes: [[0], [1, 2], ...]."""
    out, i = [], 0
    for s in sizes:
        out.append(list(range(i, i + s)))
        i += s
    return out


def grouped_data(seed, G, K=2, max_size=4):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_size + 1, G).tolist()
    positions = partition(sizes)
    N = sum(sizes)
    deltas = {f"c{k}": np.round(rng.normal(0.02 * k, 0.2, N), 4).tolist() for k in range(K)}
    return deltas, positions


def recorded(out, stream, s):
    """Simulation s of the coverage or null stream as the output's columns hold it, in the shape of
    ``sample_intervals``' comparisons (intervals and dropped count)."""
    comps = []
    for name in out["data"]["comparisons"]:
        col = out["simulations"][stream][name]
        ivs = {m: None if c["lower"][s] is None else (c["lower"][s], c["upper"][s])
               for m, c in col["intervals"].items()}
        comps.append({"intervals": ivs, "bootstrap_t_dropped": col["bootstrap_t_dropped"][s]})
    return comps


def outcome(result):
    """The part of ``sample_intervals``' result the output records per simulation."""
    return [{"intervals": {m: None if iv is None else tuple(iv) for m, iv in c["intervals"].items()},
             "bootstrap_t_dropped": c["bootstrap_t_dropped"]} for c in result["comparisons"]]


def small_settings(**kw):
    base = dict(seed=11, S=30, B_inner=50, R=200, S_power=10, power_n=(20, 40), n_audit=3)
    base.update(kw)
    return cin.CalibrationSettings(**base)


def type7(sorted_xs, p):
    """Hyndman & Fan type 7 on a sorted list: h = (n-1) p/100, interpolate (test's own)."""
    h = (len(sorted_xs) - 1) * p / 100
    lo = math.floor(h)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (h - lo) * (sorted_xs[hi] - sorted_xs[lo])


# ------------------------------------------------------------ hand calculation --

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


# ---------------------------------------------------- cluster SE vs statsmodels --

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


def test_wilson_interval_equals_statsmodels():
    from statsmodels.stats.proportion import proportion_confint

    for x, n in ((0, 10), (3, 10), (95, 100), (1900, 2000), (2000, 2000)):
        assert cal.wilson_interval(x, n, 0.05) == pytest.approx(proportion_confint(x, n, 0.05, "wilson"),
                                                                abs=1e-12)


# --------------------------------------------------------------- coverage --

def test_cluster_t_covers_95_percent_of_normal_samples():
    # Theory: with singleton groups the cluster-robust SE is s/√G (G/(G−1) Σ (x − x̄)² / G² = s²/G),
    # so cluster_t is Student's t interval: exact 95 % coverage for normal data. 4000 independent
    # normal samples of G = 30; 99.9 % Wilson band.
    rng = np.random.default_rng(2024)
    G, M, mu = 30, 4000, 0.3
    q = civ.t_quantile(G, PCT)
    sizes = np.ones(G, dtype=np.int64)
    covered = 0
    for _ in range(M):
        x = rng.normal(mu, 1.0, G)
        theta = civ.ratio(x, sizes)
        lo, hi = civ.cluster_t_interval(theta, civ.sample_se(x, sizes, theta), q)
        covered += lo <= mu <= hi
    low, high = cal.wilson_interval(covered, M, 0.001)
    assert low <= 0.95 <= high, (covered / M, low, high)


def test_cluster_t_coverage_under_the_empirical_population_of_normal_data():
    # The coverage stream of the module, on a population of G = 30 singleton groups whose values are
    # the normal quantiles μ + Φ⁻¹((i + ½)/30) (a symmetric, normal-shaped population). Student's t
    # interval is then ~exactly 95 % (the only departure: the population is discrete, O(1/G²)), so
    # 0.95 must lie in the 99 % Wilson band of S = 2000 outer samples.
    x = [0.2 + NormalDist().inv_cdf((i + 0.5) / 30) for i in range(30)]
    data = cin.prepare({"a": x}, [[i] for i in range(30)])
    tally, _ = cal.simulate(data, cin.CalibrationSettings(seed=3, S=2000, B_inner=20, n_audit=0), "coverage")
    covered = tally.counts[0]["cluster_t"]["contains"]
    low, high = cal.wilson_interval(covered, 2000, 0.01)
    assert low <= 0.95 <= high, (covered / 2000, low, high)


def brute_force_percentile_coverage(values, positions, S, B, seed):
    """Independent re-simulation (standard library ``random``, plain loops) of the coverage of the
    95 % grouped percentile interval under the empirical population."""
    r = random.Random(seed)
    sums = [sum(values[i] for i in g) for g in positions]
    sizes = [len(g) for g in positions]
    G = len(sums)
    truth = sum(sums) / sum(sizes)
    covered = 0
    for _ in range(S):
        sample = [r.randrange(G) for _ in range(G)]
        reps = []
        for _ in range(B):
            num = den = 0
            for _ in range(G):
                g = sample[r.randrange(G)]
                num += sums[g]
                den += sizes[g]
            reps.append(num / den)
        reps.sort()
        covered += type7(reps, 2.5) <= truth <= type7(reps, 97.5)
    return covered


def test_percentile_interval_undercovers_skewed_data_as_a_brute_force_simulation_says():
    # Heavily skewed Δ (lognormal, σ = 1.5) in G = 10 groups of sizes 1-3: the percentile interval
    # under-covers (Hesterberg 2015). The module's coverage stream and an independent brute force
    # must agree within Monte-Carlo error (difference of two binomial shares, 99.9 %: 3.29 SE).
    rng = np.random.default_rng(77)
    sizes = [1, 2, 1, 3, 1, 2, 1, 1, 3, 1]
    positions = partition(sizes)
    values = rng.lognormal(0.0, 1.5, sum(sizes)).tolist()
    S, B = 1500, 200
    data = cin.prepare({"a": values}, positions)
    tally, _ = cal.simulate(data, cin.CalibrationSettings(seed=8, S=S, B_inner=B, n_audit=0), "coverage")
    ours = tally.counts[0]["percentile"]["contains"] / S
    theirs = brute_force_percentile_coverage(values, positions, S, B, seed=8) / S
    se_diff = math.sqrt(ours * (1 - ours) / S + theirs * (1 - theirs) / S)
    assert abs(ours - theirs) <= 3.29 * se_diff, (ours, theirs)
    assert cal.wilson_interval(tally.counts[0]["percentile"]["contains"], S, 0.001)[1] < 0.95  # under-covers
    assert ours < 0.9


# ----------------------------------------------------------- randomization --

def test_sign_flip_pvalues_are_uniform_under_a_symmetric_null():
    # A valid Monte-Carlo test under exchangeable signs: P(p ≤ k/(R+1)) = k/(R+1) exactly
    # (Phipson & Smyth 2010). Symmetric null: each group's Δ multiplied by one random sign.
    from scipy.stats import kstest, uniform

    rng = np.random.default_rng(4242)
    sizes = [1, 2, 3, 1, 1, 2, 1, 1, 4, 1, 2, 1, 1, 1, 3]
    positions, R, M = partition(sizes), 499, 600
    pvalues = []
    for m in range(M):
        d = rng.normal(0.0, 1.0, sum(sizes))
        for g in positions:
            d[g] *= rng.choice([-1.0, 1.0])
        sums, _ = bs.group_sums(d.tolist(), positions)
        res = cal.sign_flip_test(sums[None, :], len(d), R, np.random.default_rng([9, m]))[0]
        assert res["p"] == (1 + res["extreme"]) / (1 + R)
        pvalues.append(res["p"])
    assert kstest(pvalues, uniform.cdf).pvalue > 0.01
    rejections = sum(p <= 0.05 for p in pvalues)  # exactly 25/500 = 0.05 under the null
    low, high = cal.wilson_interval(rejections, M, 0.01)
    assert low <= 0.05 <= high, (rejections / M, low, high)


def test_sign_flip_counts_ties_and_flips_whole_groups():
    # Two groups with sums 1 and −1: θ̂ = 0, every |T*| ≥ 0, so p = 1. One group: sums (2, 2), N = 2:
    # T* ∈ {−2, 0, 2}, |T*| ≥ |θ̂| = 2 exactly when the signs agree (half the time).
    zero = cal.sign_flip_test(np.array([[1.0, -1.0]]), 2, 100, np.random.default_rng(1))[0]
    assert zero["p"] == 1.0 and zero["extreme"] == 100
    res = cal.sign_flip_test(np.array([[2.0, 2.0]]), 2, 4000, np.random.default_rng(2))[0]
    assert 0.45 < res["extreme"] / 4000 < 0.55


# --------------------------------------------------------------------- BCa --

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


# ------------------------------------------------- vectorised == naive loops --

def one_coverage_sample(data, settings, s):
    """The draws of coverage sample s, written out here from the documented order."""
    rng = np.random.default_rng([settings.seed, 1, s])
    groups = rng.integers(0, data.G, size=data.G, dtype=np.int64)
    g_idx = rng.integers(0, data.G, size=(settings.B_inner, data.G), dtype=np.int64)
    queries = np.concatenate([data.members[g] for g in groups])
    q_idx = rng.integers(0, len(queries), size=(settings.B_inner, len(queries)), dtype=np.int64)
    return (data.sums[:, groups], data.sizes[groups], data.deltas[:, queries], g_idx, q_idx)


def test_vectorised_sample_equals_naive_loops_bit_for_bit():
    # Bitwise, not within an ulp: both do the same IEEE operations in the same order (sequential sums
    # over the drawn groups: numpy's axis-0 reduction of a C-contiguous array is element by element;
    # elementwise ops are correctly rounded and never fused; np.percentile is the same call).
    deltas, positions = grouped_data(21, G=30, K=3)
    data = cin.prepare(deltas, positions)
    settings = small_settings(B_inner=300)
    args = one_coverage_sample(data, settings, 4)
    fast = civ.sample_intervals(*args, settings.percentiles)
    slow = civ.naive_sample_intervals(*args, settings.percentiles)
    assert fast == slow
    assert cal.coverage_sample(data, settings, 4) == fast
    sums, sizes, query_deltas, g_idx, q_idx = args
    idx_t = np.ascontiguousarray(g_idx.T)
    for k in range(3):
        reps = civ.drawn_totals(sums[k], idx_t) / civ.drawn_totals(sizes, idx_t)
        assert np.array_equal(reps, bs.ratio_replicates(sums[k], sizes, g_idx))
        qreps = civ.drawn_totals(query_deltas[k], np.ascontiguousarray(q_idx.T)) / query_deltas.shape[1]
        assert np.array_equal(qreps, bs.query_replicates(query_deltas[k], q_idx))


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


# ------------------------------------------------------------ degenerate cases --

def test_degenerate_replicates_are_dropped_and_counted_never_nan():
    theta, reps = 0.5, np.array([0.4, 0.5, 0.6, 0.7, 0.3])
    se_reps = np.array([0.0, 0.1, 1e-20, 0.2, 0.1])
    iv, dropped = civ.bootstrap_t_interval(theta, 0.1, reps, se_reps, tol=1e-12, percentiles=PCT)
    assert dropped == 2 and iv is not None and all(math.isfinite(v) for v in iv)
    assert civ.bootstrap_t_interval(theta, 0.1, reps, np.zeros(5), 1e-12, PCT) == (None, 5)
    # all-zero Δ: every replicate is 0 (se* = 0, dropped), a = 0/0 (BCa undefined); counted, JSON
    # without NaN; percentile and cluster-t are the point [0, 0].
    deltas = {"zero": [0.0] * 12}
    out = cal.calibrate(deltas, partition([1, 2, 3, 1, 1, 2, 1, 1]), settings=small_settings(S=5, B_inner=20))
    json.dumps(out, allow_nan=False)
    cov = out["comparisons"]["zero"]["coverage"]
    assert cov["bootstrap_t"]["undefined"] == 5 and cov["bca"]["undefined"] == 5
    assert cov["percentile"]["coverage"] == 1.0 and cov["bca"]["coverage"] == 0.0
    assert out["comparisons"]["zero"]["bootstrap_t_dropped_replicates"]["coverage"] == 5 * 20
    bca = out["simulations"]["coverage"]["zero"]["intervals"]["bca"]
    assert bca == {"lower": [None] * 5, "upper": [None] * 5}


# ----------------------------------------------------- determinism and audit --

def test_same_seed_same_bytes_other_seed_differs_workers_do_not_matter():
    deltas, positions = grouped_data(1, G=15, K=3)
    one = json.dumps(cal.calibrate(deltas, positions, settings=small_settings()))
    assert json.dumps(cal.calibrate(deltas, positions, settings=small_settings())) == one
    assert json.dumps(cal.calibrate(deltas, positions, settings=small_settings(), workers=2)) == one
    assert json.dumps(cal.calibrate(deltas, positions, settings=small_settings(seed=12))) != one


def test_an_auditor_recomputes_single_outer_simulations_from_the_documented_draws():
    deltas, positions = grouped_data(2, G=14, K=2)
    settings = small_settings(S=8, n_audit=8)
    out = cal.calibrate(deltas, positions, settings=settings)
    data = cin.prepare(deltas, positions)
    # coverage sample 6 alone, from default_rng([seed, 1, 6]), by the loop reference
    redo = civ.naive_sample_intervals(*one_coverage_sample(data, settings, 6), settings.percentiles)
    assert recorded(out, "coverage", 6) == outcome(redo)
    assert out["simulations"]["t_quantile"] == redo["t_quantile"]
    # null simulation 5: signs from default_rng([seed, 2, 5]); a group's queries flip together
    rng = np.random.default_rng([settings.seed, 2, 5])
    signs = 2 * rng.integers(0, 2, size=data.G, dtype=np.int64) - 1
    g_idx = rng.integers(0, data.G, size=(settings.B_inner, data.G), dtype=np.int64)
    q_idx = rng.integers(0, data.N, size=(settings.B_inner, data.N), dtype=np.int64)
    order = [i for g in positions for i in g]
    flipped = np.array([[deltas[c][i] * signs[g] for g in range(data.G) for i in positions[g]]
                        for c in deltas])
    assert order == list(range(data.N))
    redo = civ.naive_sample_intervals(data.sums * signs, data.sizes, flipped, g_idx, q_idx,
                                      settings.percentiles)
    assert recorded(out, "null", 5) == outcome(redo)
    # power: n = 40, simulation 2, default_rng([seed, 3, 40, 2]); m = round(40 · G/N)
    m = cal.power_groups(40, data.G, data.N)
    rng = np.random.default_rng([settings.seed, 3, 40, 2])
    groups = rng.integers(0, data.G, size=m, dtype=np.int64)
    idx = rng.integers(0, m, size=(settings.B_inner, m), dtype=np.int64)
    rec = out["simulations"]["power"]["40"]
    assert rec["queries"][2] == sum(len(positions[g]) for g in groups.tolist())
    for k in range(2):
        reps = bs.ratio_replicates(data.sums[k, groups], data.sizes[groups], idx)
        assert rec["comparisons"][f"c{k}"]["lower"][2] == bs.percentile_linear(reps, 2.5)
        slow = bs.replicate_slow(deltas[f"c{k}"], positions, groups.tolist())
        assert rec["comparisons"][f"c{k}"]["theta"][2] == slow
    # randomization: default_rng([seed, 4]), integers(0, 2, (R, G))
    e = 2 * np.random.default_rng([settings.seed, 4]).integers(0, 2, size=(settings.R, data.G),
                                                               dtype=np.int64) - 1
    for k, name in enumerate(deltas):
        theta = out["comparisons"][name]["theta_hat"]
        t = [bs.seq_sum(float(x) for x in row) / data.N for row in e * data.sums[k]]
        extreme = sum(abs(v) >= abs(theta) - 100 * np.finfo(float).eps * abs(theta) for v in t)
        assert out["comparisons"][name]["randomization"]["p"] == (1 + extreme) / (1 + settings.R)


def test_tallies_equal_a_recount_of_the_recorded_simulations():
    # Every simulation is recorded: coverage (lower ≤ truth ≤ upper), type I (lower > 0 or upper
    # < 0), mean width, the dropped replicates and the power shares, recounted here by hand.
    deltas, positions = grouped_data(6, G=12, K=2)
    settings = small_settings(S=25, n_audit=2, S_power=25, B_inner=40)
    out = cal.calibrate(deltas, positions, settings=settings)
    for k, name in enumerate(deltas):
        comp = out["comparisons"][name]
        truth = comp["theta_hat"]
        for stream in ("coverage", "null"):
            dropped = sum(recorded(out, stream, s)[k]["bootstrap_t_dropped"] for s in range(25))
            assert comp["bootstrap_t_dropped_replicates"][stream] == dropped
        for m in cal.METHODS:
            cov = [recorded(out, "coverage", s)[k]["intervals"][m] for s in range(25)]
            null = [recorded(out, "null", s)[k]["intervals"][m] for s in range(25)]
            assert None not in cov and None not in null
            assert comp["coverage"][m]["covered"] == sum(iv[0] <= truth <= iv[1] for iv in cov)
            assert comp["coverage"][m]["mean_width"] == pytest.approx(np.mean([iv[1] - iv[0] for iv in cov]),
                                                                      rel=1e-12)
            assert comp["type_i_error"][m]["rejections"] == sum(iv[0] > 0 or iv[1] < 0 for iv in null)
        for point in comp["power"]:
            col = out["simulations"]["power"][str(point["n"])]
            mine = col["comparisons"][name]
            reach = sum(t >= settings.threshold for t in mine["theta"])
            assert point["p_mean_reaches_threshold"] == reach / 25
            assert point["p_lower_above_0"] == sum(v > 0 for v in mine["lower"]) / 25
            assert point["mean_queries"] == sum(col["queries"]) / 25 and len(col["queries"]) == 25


def test_output_shape_and_power_grid():
    deltas, positions = grouped_data(3, G=16, K=2)
    out = cal.calibrate(deltas, positions, settings=small_settings())
    assert out["methods"] == list(cal.METHODS)
    assert set(out["comparisons"]) == {"c0", "c1"}
    comp = out["comparisons"]["c0"]
    for m in cal.METHODS:
        c, t = comp["coverage"][m], comp["type_i_error"][m]
        assert c["wilson"][0] <= c["coverage"] <= c["wilson"][1]
        assert t["wilson"][0] <= t["rate"] <= t["wilson"][1]
    assert [p["n"] for p in comp["power"]] == [20, 40]
    N = sum(len(g) for g in positions)
    assert comp["power"][0]["m_groups"] == cal.power_groups(20, 16, N)
    assert out["settings"]["seed"] == 11 and out["settings"]["nominal_coverage"] == 0.95
    sims = out["simulations"]
    assert [len(sims["coverage"]["c0"]["intervals"][m]["lower"]) for m in cal.METHODS] == [30] * 5
    assert len(sims["null"]["c1"]["bootstrap_t_dropped"]) == 30 and len(sims["power"]["20"]["queries"]) == 10
    # m = max(2, floor(n G / N + 1/2)) in integers: 2.5 rounds up (Python's round would give 2)
    assert cal.power_groups(5, 1, 2) == 3 and cal.power_groups(1, 2, 100) == 2


# --------------------------------------------------------------- bad input --

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
        cal.calibrate(deltas, positions, settings=small_settings())


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


def test_bad_workers_refused():
    deltas, positions = grouped_data(1, G=4, K=1)
    with pytest.raises(ValueError, match="workers"):
        cal.calibrate(deltas, positions, settings=small_settings(), workers=0)
