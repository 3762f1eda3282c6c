"""synthesis: the pooled answer across datasets. Expected values by hand and from statsmodels' meta-analysis
(``combine_effects``), never from the module itself."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.meta_analysis import combine_effects

from rerank_study import synthesis as syn

# three small datasets of evidence groups: (summed Δ of each group, its size)
A = syn.Dataset("a", (0.2, 0.4, 0.3), (1, 2, 1))      # n 4, mean 0.9/4 = 0.225
B = syn.Dataset("b", (0.1, -0.1, 0.3, 0.1), (1, 1, 2, 1))  # n 5, mean 0.4/5 = 0.08
C = syn.Dataset("c", (-0.5, -0.1), (2, 1))           # n 3, mean -0.6/3 = -0.2


def test_a_datasets_mean_and_linearised_grouped_variance_by_hand():
    assert A.n == 4 and A.mean == pytest.approx(0.225, abs=1e-15)
    # residuals S_g - n_g * mean: -0.025, -0.05, 0.075; squares sum 0.00875; G/(G-1) = 1.5; / n² = 16
    assert A.variance == pytest.approx(1.5 * 0.00875 / 16, rel=1e-12)
    with pytest.raises(ValueError, match="two groups"):
        _ = syn.Dataset("one", (0.1,), (3,)).variance


def test_the_two_weightings_by_hand():
    # datasets: (0.225 + 0.08 - 0.2) / 3 ; queries: (0.9 + 0.4 - 0.6) / 12
    assert syn.pooled_mean([A, B, C], "datasets") == pytest.approx(0.105 / 3, abs=1e-15)
    assert syn.pooled_mean([A, B, C], "queries") == pytest.approx(0.7 / 12, abs=1e-15)


@pytest.mark.parametrize("family, weighting, message", [
    ([A], "datasets", "two or more datasets"),
    ([A, A], "datasets", "entered twice"),
    ([A, B], "studies", "not one of"),
])
def test_a_family_that_cannot_be_pooled_stops(family, weighting, message):
    with pytest.raises(ValueError, match=message):
        syn.pooled_mean(family, weighting)


def test_the_stratified_bootstrap_draws_per_dataset_in_order_and_pools_by_the_weighting():
    idx = syn.draw_stratified(7, [A, B, C], 5)
    rng = np.random.default_rng(7)  # the documented draw: one generator, dataset by dataset
    for d, i in zip([A, B, C], idx):
        assert np.array_equal(i, rng.integers(0, len(d.sums), size=(5, len(d.sums)), dtype=np.int64))
    for weighting in syn.WEIGHTINGS:
        pooled, per = syn.stratified_replicates([A, B, C], idx, weighting)
        for b in range(5):  # by plain loops
            nums = [sum(d.sums[g] for g in i[b]) for d, i in zip([A, B, C], idx)]
            dens = [sum(d.sizes[g] for g in i[b]) for d, i in zip([A, B, C], idx)]
            for r, num, den in zip(per, nums, dens):
                assert r[b] == pytest.approx(num / den, abs=1e-15)
            want = (sum(n / m for n, m in zip(nums, dens)) / 3 if weighting == "datasets"
                    else sum(nums) / sum(dens))
            assert pooled[b] == pytest.approx(want, abs=1e-15)


def test_a_draw_of_every_group_once_reproduces_the_point_estimate():
    idx = [np.arange(len(d.sums), dtype=np.int64)[None, :] for d in (A, B, C)]
    for weighting in syn.WEIGHTINGS:
        pooled, _ = syn.stratified_replicates([A, B, C], idx, weighting)
        assert pooled[0] == pytest.approx(syn.pooled_mean([A, B, C], weighting), abs=1e-15)


def test_consistency_and_leave_one_out_by_hand():
    assert syn.consistency([[0.1, 0.3], [-0.1, 0.2], [-0.4, -0.01], [0.0, 0.1]]) == {
        "above 0": 1, "covers 0": 2, "below 0": 1}
    loo = syn.leave_one_out([A, B, C], "queries")
    # without a: (0.4 - 0.6)/8; without b: (0.9 - 0.6)/7; without c: (0.9 + 0.4)/9
    assert loo["estimates"] == pytest.approx({"a": -0.025, "b": 0.3 / 7, "c": 1.3 / 9})
    assert loo["range"] == pytest.approx([-0.025, 1.3 / 9])
    assert syn.leave_one_out([A, B], "queries") == {"estimates": {}, "range": None}


# heterogeneous effects (Q > k - 1, so no estimator truncates)
Y = [0.12, 0.03, -0.05, 0.09, 0.20]
V = [0.0009, 0.0016, 0.0012, 0.0025, 0.0020]


@pytest.mark.parametrize("method, sm_method", [("dersimonian-laird", "dl"), ("paule-mandel", "pm")])
def test_the_meta_analysis_equals_statsmodels(method, sm_method):
    ours = syn.meta_analysis(Y, V, method, 0.95)
    ref = combine_effects(np.array(Y), np.array(V), method_re=sm_method, use_t=True, atol=1e-12, maxiter=500)
    assert ours["fixed_effect"] == pytest.approx(ref.mean_effect_fe, rel=1e-12)
    assert ours["fixed_effect_se"] == pytest.approx(ref.sd_eff_w_fe, rel=1e-12)
    assert ours["q"] == pytest.approx(ref.q, rel=1e-12) and ours["q"] > 4
    assert ours["i2"] == pytest.approx(ref.i2, rel=1e-12)
    tau2 = ours["tau2_dersimonian_laird" if sm_method == "dl" else "tau2_paule_mandel"]
    assert tau2 == pytest.approx(ref.tau2, rel=1e-8)
    assert ours["random_effect"] == pytest.approx(ref.mean_effect_re, rel=1e-8)
    assert ours["random_effect_se"] == pytest.approx(ref.sd_eff_w_re, rel=1e-8)
    # statsmodels' HKSJ interval: the random-effects interval with the WLS scale and t(k-1)
    assert ours["hksj_interval"] == pytest.approx(list(ref.conf_int(alpha=0.05, use_t=True)[3]), rel=1e-8)
    assert ours["q_pvalue"] == pytest.approx(ref.test_homogeneity().pvalue, rel=1e-10)


def test_the_prediction_interval_and_dl_by_hand():
    w = [1 / v for v in V]
    mu_fe = sum(wi * y for wi, y in zip(w, Y)) / sum(w)
    q = sum(wi * (y - mu_fe) ** 2 for wi, y in zip(w, Y))
    tau2 = (q - 4) / (sum(w) - sum(wi * wi for wi in w) / sum(w))
    ws = [1 / (v + tau2) for v in V]
    mu = sum(wi * y for wi, y in zip(ws, Y)) / sum(ws)
    half = stats.t.ppf(0.975, 3) * math.sqrt(tau2 + 1 / sum(ws))  # t with k - 2 = 3 degrees of freedom
    got = syn.meta_analysis(Y, V, "dersimonian-laird", 0.95)
    assert got["tau2_dersimonian_laird"] == pytest.approx(tau2, rel=1e-12)
    assert got["prediction_interval"] == pytest.approx([mu - half, mu + half], rel=1e-12)
    assert syn.prediction_interval(Y[:2], V[:2], tau2, 0.95) is None  # k = 2: no t with 0 df


def test_homogeneous_effects_give_tau2_zero_with_both_estimators():
    y, v = [0.05, 0.051, 0.049], [0.01, 0.01, 0.01]  # Q far below k - 1
    got = syn.meta_analysis(y, v, "paule-mandel", 0.95)
    assert got["tau2_paule_mandel"] == 0.0 and got["tau2_dersimonian_laird"] == 0.0 and got["i2"] == 0.0
    assert got["random_effect"] == pytest.approx(got["fixed_effect"], rel=1e-15)
