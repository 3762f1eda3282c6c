"""Calibration of the grouped interval (rerank_study.calibration.calibration).

Expected values come from theory (exact t coverage of normal data, the uniform null distribution
of a valid randomization p-value, closed forms worked out below) or from an independent library
(statsmodels' Wilson interval) or from
an independent brute-force simulation written here with the standard library's ``random``;
never from the code under test. Monte-Carlo comparisons use wide (99 % / 99.9 %) bands, stated
at each test, and fixed seeds, so they are deterministic. The interval arithmetic itself (cluster SE, BCa,
jackknife) is tested in test_calibration_intervals.py, the checked inputs in test_calibration_inputs.py.
"""

from __future__ import annotations

import json
import math
import random
from statistics import NormalDist

import numpy as np
import pytest

from rerank_study.calibration import calibration as cal
from rerank_study.calibration import calibration_inputs as cin
from rerank_study.calibration import calibration_intervals as civ
from rerank_study.stats import bootstrap as bs

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


# --------------------------------------------------------- Wilson vs statsmodels --


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


def test_bad_workers_refused():
    deltas, positions = grouped_data(1, G=4, K=1)
    with pytest.raises(ValueError, match="workers"):
        cal.calibrate(deltas, positions, settings=small_settings(), workers=0)
