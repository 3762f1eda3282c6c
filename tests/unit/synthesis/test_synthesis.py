"""synthesis: the pooled answer across datasets. Expected values by hand and from statsmodels' meta-analysis
(``combine_effects``), never from the module itself."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.meta_analysis import combine_effects

from rerank_study.synthesis import synthesis as syn

# three small datasets of evidence groups: (summed Δ of each group, its size)
A = syn.Dataset("a", (0.2, 0.4, 0.3), (1, 2, 1))      # n 4, mean 0.9/4 = 0.225
B = syn.Dataset("b", (0.1, -0.1, 0.3, 0.1), (1, 1, 2, 1))  # n 5, mean 0.4/5 = 0.08
C = syn.Dataset("c", (-0.5, -0.1), (2, 1))           # n 3, mean -0.6/3 = -0.2


def test_a_datasets_mean_and_linearised_grouped_variance_by_hand():
    assert A.n == 4 and A.mean == pytest.approx(0.225, abs=1e-15)
    # residuals S_g - n_g * mean: -0.025, -0.05, 0.075; squares sum 0.00875; G/(G-1) = 1.5; / n² = 16
    assert A.variance == pytest.approx(1.5 * 0.00875 / 16, rel=1e-12)
    with pytest.raises(ValueError, match="^dataset one: the grouped variance needs at least two groups$"):
        _ = syn.Dataset("one", (0.1,), (3,)).variance


def test_the_two_weightings_by_hand():
    # datasets: (0.225 + 0.08 - 0.2) / 3 ; queries: (0.9 + 0.4 - 0.6) / 12
    assert syn.pooled_mean([A, B, C], "datasets") == pytest.approx(0.105 / 3, abs=1e-15)
    assert syn.pooled_mean([A, B, C], "queries") == pytest.approx(0.7 / 12, abs=1e-15)


@pytest.mark.parametrize("family, weighting, message", [
    ([A], "datasets", "two or more datasets"),
    ([A, B, A], "datasets", r"^a dataset entered twice: \['a'\]$"),
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
    assert syn.consistency([[0.1, 0.3], [-0.1, 0.2], [-0.4, -0.01], [0.0, 0.1], [-0.2, 0.0]]) == {
        "above 0": 1, "covers 0": 3, "below 0": 1}  # an end at exactly 0 covers 0
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
    ref = combine_effects(np.array(Y), np.array(V), method_re=sm_method, use_t=True, atol=1e-14, maxiter=500)
    assert ours["fixed_effect"] == pytest.approx(ref.mean_effect_fe, rel=1e-12)
    assert ours["fixed_effect_se"] == pytest.approx(ref.sd_eff_w_fe, rel=1e-12)
    assert ours["q"] == pytest.approx(ref.q, rel=1e-12) and ours["q"] > 4
    assert ours["i2"] == pytest.approx(ref.i2, rel=1e-12)
    tau2 = ours["tau2_dersimonian_laird" if sm_method == "dl" else "tau2_paule_mandel"]
    assert tau2 == pytest.approx(ref.tau2, rel=1e-11)  # the bisection stops at rel 1e-12
    assert (ours["k"], ours["q_df"], ours["level"]) == (5, 4, 0.95)
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
    # k = 3: t with 1 degree of freedom (scipy's quantile), the rest by hand
    ws3 = [1 / (v + tau2) for v in V[:3]]
    mu3 = sum(wi * y for wi, y in zip(ws3, Y[:3])) / sum(ws3)
    half3 = stats.t.ppf(0.95, 1) * math.sqrt(tau2 + 1 / sum(ws3))
    assert syn.prediction_interval(Y[:3], V[:3], tau2, 0.9) == pytest.approx([mu3 - half3, mu3 + half3])
    with pytest.raises(ValueError, match="^tau2 method 'reml' is not one of"):
        syn.meta_analysis(Y, V, "reml", 0.95)


def test_homogeneous_effects_give_tau2_zero_with_both_estimators():
    y, v = [0.05, 0.051, 0.049], [0.01, 0.01, 0.01]  # Q far below k - 1
    got = syn.meta_analysis(y, v, "paule-mandel", 0.95)
    assert got["tau2_paule_mandel"] == 0.0 and got["tau2_dersimonian_laird"] == 0.0 and got["i2"] == 0.0
    assert got["random_effect"] == pytest.approx(got["fixed_effect"], rel=1e-15)


# ------------------------------------------------------------------------------ the family of tests --
def test_holm_and_bh_by_hand_with_ties_in_input_order():
    # sorted 0.01, 0.04, 0.04 (m = 3). Holm: 3*0.01 = 0.03; 2*0.04 = 0.08; 1*0.04 = 0.04 -> running max 0.08.
    # BH: 0.01*3/1 = 0.03; 0.04*3/2 = 0.06; 0.04*3/3 = 0.04 -> running min from the largest: 0.04, 0.04, 0.03.
    assert syn.holm([0.04, 0.01, 0.04]) == pytest.approx([0.08, 0.03, 0.08], rel=1e-15)
    assert syn.bh([0.04, 0.01, 0.04]) == pytest.approx([0.04, 0.03, 0.04], rel=1e-15)
    # capped at 1: Holm 1.8, 1.4, 0.7 -> 1, 1, 1; BH 1.8, 1.05, 0.7 -> 0.7, 0.7, 0.7
    assert syn.holm([0.6, 0.7, 0.7]) == [1.0, 1.0, 1.0]
    assert syn.bh([0.6, 0.7, 0.7]) == pytest.approx([0.7, 0.7, 0.7], rel=1e-15)
    assert syn.holm([0.3]) == [0.3] and syn.bh([0.3]) == [0.3] and syn.holm([]) == [] and syn.bh([]) == []
    # the ends of [0, 1] are p-values: Holm 0*2 = 0, then max(0, 1*1) = 1; BH 0*2/1 = 0, 1*2/2 = 1
    assert syn.holm([1.0, 0.0]) == [1.0, 0.0] and syn.bh([1.0, 0.0]) == [1.0, 0.0]


@pytest.mark.parametrize("bad", [[0.1, 1.5], [-0.01], [float("nan")]])
def test_a_p_value_outside_0_1_is_refused(bad):
    for adjust in (syn.holm, syn.bh):
        with pytest.raises(ValueError, match=r"lie in \[0, 1\]"):
            adjust(bad)


@pytest.mark.parametrize("seed", range(6))
def test_holm_and_bh_equal_statsmodels_multipletests(seed):
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(seed)
    for m in (2, 3, 7, 20):
        p = np.round(rng.uniform(0, 1, m) ** 3, 2).tolist()  # rounding makes ties; cubing makes small p
        assert syn.holm(p) == multipletests(p, method="holm")[1].tolist()
        assert syn.bh(p) == pytest.approx(multipletests(p, method="fdr_bh")[1].tolist(), rel=1e-15, abs=0)


def test_the_sign_flip_p_value_by_exact_enumeration_and_scipy():
    # A's group sums 0.2, 0.4, 0.3: |±0.2 ±0.4 ±0.3| over the 8 patterns is 0.9 0.3 0.1 0.5 0.5 0.1 0.3 0.9,
    # so P(|T*| >= 0.9) = 2/8; B's exact p from scipy's sign-flip permutation test (exact for 4 groups)
    exact_b = stats.permutation_test((np.array(B.sums),), np.sum, permutation_type="samples",
                                     n_resamples=np.inf, alternative="two-sided").pvalue
    rng = np.random.default_rng(1)
    for d, exact in ((A, 0.25), (B, exact_b)):
        p = syn.sign_flip_pvalue(d, syn.sign_flips(rng, 40_000, len(d.sums)))
        assert p == pytest.approx(exact, abs=0.01)
    assert syn.sign_flip_pvalue(syn.Dataset("z", (0.1, -0.1), (1, 1)), syn.sign_flips(rng, 50, 2)) == 1.0


def test_the_sign_flip_p_value_counts_ties_and_adds_one():
    # signs by hand: rows (+,+,+) |0.9|, (-,+,-) |-0.1|, (-,-,-) |-0.9|, (+,-,+) |0.1| -> 2 of 4 reach 0.9
    signs = np.array([[1, 1, 1], [-1, 1, -1], [-1, -1, -1], [1, -1, 1]])
    assert syn.sign_flip_pvalue(A, signs) == (1 + 2) / (4 + 1)
    flips = syn.sign_flips(np.random.default_rng(3), 6, 4)
    assert set(np.unique(flips)) <= {-1, 1} and flips.shape == (6, 4)
    assert np.array_equal(flips, np.random.default_rng(3).integers(0, 2, size=(6, 4)) * 2 - 1)


FAMILY = {"weighting": "datasets", "tau2": "paule-mandel", "B": 200, "seed": 9, "level": 0.95,
          "family": ["ce-rrf", "blend-ce"]}
TESTS = {"blend-ce": [A, B, C], "blend-rrf": [B, C, A], "ce-rrf": [C, A, B]}


def test_the_family_block_draws_in_the_documented_order_and_adjusts_the_family_only():
    from statsmodels.stats.multitest import multipletests

    got = syn.family_block(TESTS, FAMILY)
    rng = np.random.default_rng([9, 1])  # documented: family comparisons in declared order, then the others
    want = []
    for c in ("ce-rrf", "blend-ce", "blend-rrf"):
        for d in TESTS[c]:
            signs = rng.integers(0, 2, size=(200, len(d.sums))) * 2 - 1
            t = [abs(sum(s * x for s, x in zip(row, d.sums))) for row in signs]
            want.append((d.name, c, (1 + int(sum(x >= abs(sum(d.sums)) - 1e-9 for x in t))) / 201))
    assert [(r["dataset"], r["comparison"], r["p"]) for r in got["rows"]] == want
    assert [r["role"] for r in got["rows"]] == ["family"] * 6 + ["exploratory"] * 3
    ps = [w[2] for w in want[:6]]
    assert [r["p_holm"] for r in got["rows"][:6]] == pytest.approx(multipletests(ps, method="holm")[1])
    assert [r["p_bh"] for r in got["rows"][:6]] == pytest.approx(multipletests(ps, method="fdr_bh")[1])
    assert all(r["p_holm"] is None and r["p_bh"] is None for r in got["rows"][6:])
    assert got["m"] == 6 and got["declared"] == ["ce-rrf", "blend-ce"] and got["seed"] == [9, 1]
    assert got["B"] == 200 and "sign-flip" in got["test"] and "Holm" in got["adjustment"]
    assert (got["rows"][0]["n_queries"], got["rows"][0]["n_groups"], got["rows"][0]["mean"]) == (3, 2, C.mean)


def test_an_undeclared_comparison_in_the_family_names_the_key_the_value_and_the_allowed():
    with pytest.raises(ValueError) as err:
        syn.check_tests({"family": ["blend-ce", "blend_vs_ce"]}, ["blend-ce", "blend-rrf"])
    assert str(err.value) == ("config synthesis.family names 'blend_vs_ce', which is not a comparison of "
                              "every study; allowed: ['blend-ce', 'blend-rrf']")
    syn.check_tests({"family": ["blend-rrf"]}, ["blend-ce", "blend-rrf"])
    with pytest.raises(ValueError, match="'ce-rrf'"):
        syn.family_block({"blend-ce": [A, B]}, {**FAMILY, "family": ["ce-rrf"]})


def test_the_shared_comparisons_keep_the_first_studys_order():
    assert syn.shared_comparisons([["b", "a", "c"], ["a", "b"], ["c", "b", "a"]]) == ["b", "a"]
    assert syn.shared_comparisons([["b", "a"]]) == ["b", "a"]


def test_synthesize_adds_the_family_only_when_tests_are_given():
    intervals = [[0.1, 0.3], [-0.1, 0.2], [-0.4, -0.1]]
    plain, idx = syn.synthesize([A, B, C], intervals, FAMILY)
    both, idx2 = syn.synthesize([A, B, C], intervals, FAMILY, TESTS)
    assert "family" not in plain and both["family"] == syn.family_block(TESTS, FAMILY)
    assert {k: v for k, v in both.items() if k != "family"} == plain
    assert all(np.array_equal(i, j) for i, j in zip(idx, idx2))  # the bootstrap draws do not move


def test_an_undeclared_weighting_is_refused_with_the_fix():
    for weighting in syn.WEIGHTINGS:
        syn.check_declared({"weighting": weighting})
    with pytest.raises(ValueError) as err:
        syn.check_declared({"weighting": ""})
    assert str(err.value).startswith("the synthesis weighting is not declared (config synthesis.weighting is "
                                     "''). Declare it BEFORE looking at any result: `datasets`")


def test_a_study_dataset_sums_each_group_in_member_order_and_needs_a_partition():
    deltas = {"q1": 0.1, "q2": 0.2, "q3": -0.05, "q4": 0.3}
    d = syn.study_dataset("s", deltas, [["q2", "q1"], ["q3"], ["q4"]])
    assert d == syn.Dataset("s", (0.2 + 0.1, -0.05, 0.3), (2, 1, 1))
    missing, twice, unknown = [["q1", "q2"], ["q3"]], [["q1", "q2"], ["q3", "q4"], ["q4"]], [["q1", "q5"]]
    for groups in (missing, twice, unknown):
        with pytest.raises(ValueError, match="^dataset s: the evidence groups do not partition the analysed"):
            syn.study_dataset("s", deltas, groups)


def test_the_bootstrap_size_and_the_percentiles_of_a_level():
    assert [i.shape for i in syn.draw_stratified(1, [A, B], 1)] == [(1, 3), (1, 4)]  # B = 1 is allowed
    with pytest.raises(ValueError, match=r"^B must be >= 1 \(got 0\)$"):
        syn.draw_stratified(1, [A, B], 0)
    assert syn.percentiles_of(0.95) == pytest.approx([2.5, 97.5])
    assert syn.percentiles_of(0.8) == pytest.approx([10, 90])


def test_i_squared_by_hand_at_its_edges():
    assert syn.i_squared(0.0, 3) == 0.0          # Q = 0: no heterogeneity (not 0/0)
    assert syn.i_squared(1.5, 3) == 0.0          # Q < df: truncated at 0
    assert syn.i_squared(8.0, 3) == pytest.approx(0.75, rel=1e-15)  # (8 - 2) / 8


def test_the_synthesis_block_by_hand():
    got, _ = syn.synthesize([A, B, C], [[0.1, 0.3], [-0.1, 0.2], [-0.4, -0.1]], FAMILY)
    assert got["plain_mean_of_means"] == pytest.approx((0.225 + 0.08 - 0.2) / 3, abs=1e-15)
    assert got["pooled"]["percentiles"] == pytest.approx([2.5, 97.5])
    # datasets weighting without a: (0.08 - 0.2)/2; without b: (0.225 - 0.2)/2; without c: (0.225 + 0.08)/2
    assert got["leave_one_out"]["estimates"] == pytest.approx({"a": -0.06, "b": 0.0125, "c": 0.1525})
    assert got["se_rule"] == "linearised grouped variance G/(G-1) Σ (S_g - n_g Δ̄)² / n²"  # documented label


def test_a_replicate_within_the_documented_tolerance_of_the_statistic_counts():
    # T = 100 + 1e-9; flipping the small group gives 100 - 1e-9, within 1e-10 * sum|S_g| (1e-8) of |T|
    d = syn.Dataset("t", (100.0, 1e-9), (1, 1))
    assert syn.sign_flip_pvalue(d, np.array([[1, 1], [1, -1], [-1, -1]])) == 1.0  # (1 + 3) / (3 + 1)
