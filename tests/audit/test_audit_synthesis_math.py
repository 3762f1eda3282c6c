"""The synthesis audit's own arithmetic (scripts/audit/synthesis/synthesis_math.py) and its key allowlist
(synthesis_checks.key_problems) against independent libraries and hand calculations: scipy's t and χ²
distributions, statsmodels' combine_effects (fixed effect, DerSimonian–Laird, Paule–Mandel, the HKSJ
interval), numpy's draws and percentiles. The modules are imported as the audit imports them
(conftest.audit_module)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import audit_module
from scipy import stats
from statsmodels.stats.meta_analysis import combine_effects

M = audit_module("synthesis.synthesis_math")
C = audit_module("synthesis.synthesis_checks")

# three datasets of the planted family's shape: (y, v) with clear heterogeneity, and a homogeneous set
HETERO = ([0.1246, 0.0754, -0.4296], [0.0009, 0.0006, 0.0035])
HOMO = ([0.10, 0.11, 0.09, 0.105], [0.01, 0.02, 0.015, 0.01])


@pytest.mark.parametrize("df", [1, 2, 3, 4, 7, 30])
@pytest.mark.parametrize("p", [0.975, 0.95, 0.995])
def test_t_quantile_equals_scipy(p, df):
    t = audit_module("expected.calib_stats").t_quantile(p, df)
    assert t == pytest.approx(float(stats.t.ppf(p, df)), rel=1e-10)


@pytest.mark.parametrize("df", [1, 2, 3, 5, 10])
@pytest.mark.parametrize("q", [0.0, 0.3, 1.0, 2.5, 7.0, 25.0, 80.0])
def test_chi2_sf_equals_scipy(q, df):
    assert M.chi2_sf(q, df) == pytest.approx(float(stats.chi2.sf(q, df)), rel=1e-11, abs=1e-300)


def test_chi2_sf_with_two_df_is_exp_minus_half_q():  # by hand: P(χ²_2 > q) = e^{-q/2}
    assert M.chi2_sf(3.0, 2) == pytest.approx(math.exp(-1.5), rel=1e-14)


@pytest.mark.parametrize("y,v", [HETERO, HOMO])
def test_meta_analysis_equals_statsmodels(y, v):
    for method, sm_name in (("dersimonian-laird", "dl"), ("paule-mandel", "pm")):
        ref = combine_effects(np.array(y), np.array(v), method_re=sm_name, atol=1e-14, maxiter=1000,
                              use_t=True, row_names=["a", "b", "c", "d"][:len(y)])
        got = M.meta_analysis(y, v, method, 0.95)
        frame = ref.summary_frame(alpha=0.05)
        assert got["fixed_effect"] == pytest.approx(ref.mean_effect_fe, rel=1e-12)
        assert got["fixed_effect_se"] == pytest.approx(math.sqrt(ref.var_eff_w_fe), rel=1e-12)
        assert got["q"] == pytest.approx(ref.q, rel=1e-12)
        assert got["i2"] == pytest.approx(max(0.0, ref.i2), rel=1e-12, abs=1e-15)  # statsmodels: untruncated
        tau2 = got["tau2_" + method.replace("-", "_")]
        assert tau2 == pytest.approx(max(0.0, ref.tau2), rel=1e-9, abs=1e-15)
        if ref.tau2 < 0:  # statsmodels keeps a negative DerSimonian–Laird τ²; truncated, τ² = 0: RE = FE
            ref = combine_effects(np.array(y), np.array(v), method_re="pm", use_t=True)
            assert ref.tau2 == 0 and got["random_effect"] == pytest.approx(got["fixed_effect"], rel=1e-12)
            frame = ref.summary_frame(alpha=0.05)
        assert got["random_effect"] == pytest.approx(ref.mean_effect_re, rel=1e-9)
        assert got["random_effect_se"] == pytest.approx(math.sqrt(ref.var_eff_w_re), rel=1e-9)
        hksj = list(frame.loc["random effect wls", ["ci_low", "ci_upp"]])
        assert got["hksj_interval"] == pytest.approx(hksj, rel=1e-9)
        assert got["q_pvalue"] == pytest.approx(float(stats.chi2.sf(ref.q, len(y) - 1)), rel=1e-10)


def test_prediction_interval_by_its_formula_with_scipys_t():
    y, v = HETERO
    got = M.meta_analysis(y, v, "dersimonian-laird", 0.95)
    w = [1 / (vi + got["tau2_dersimonian_laird"]) for vi in v]
    half = stats.t.ppf(0.975, len(y) - 2) * math.sqrt(got["tau2_dersimonian_laird"] + 1 / sum(w))
    assert got["prediction_interval"] == pytest.approx([got["random_effect"] - half,
                                                        got["random_effect"] + half], rel=1e-9)
    assert M.meta_analysis(y[:2], v[:2], "paule-mandel", 0.95)["prediction_interval"] is None


def test_paule_mandel_is_zero_when_q_is_below_its_df():
    y, v = HOMO
    assert M.q_statistic(y, v) < len(y) - 1 and M.tau2_pm(y, v) == 0.0 and M.tau2_dl(y, v) == 0.0


def test_dataset_mean_and_variance_by_hand():
    # groups: {+0.2, +0.1} (sum 0.3, size 2), {0.0}, {-0.3}: n = 4, mean = 0/4 = 0
    sums, sizes = [0.30000000000000004, 0.0, -0.3], [2, 1, 1]
    assert M.dataset_mean(sums, sizes) == pytest.approx(0.0, abs=1e-15)
    # G/(G-1) Σ (S_g - n_g m)² / n² = 3/2 (0.09 + 0 + 0.09) / 16 = 0.016875
    assert M.dataset_variance(sums, sizes) == pytest.approx(0.016875, rel=1e-12)


def test_pooled_estimates_and_stratified_interval_equal_numpy():
    rng = np.random.default_rng(3)
    data = [([0.2, 0.1, -0.05, 0.3], [1, 2, 1, 1]), ([-0.4, -0.2, 0.0], [1, 1, 1])]
    mats = [rng.integers(0, len(s), size=(200, len(s))) for s, _ in data]
    sums = [np.array(s) for s, _ in data]
    sizes = [np.array(n) for _, n in data]
    ratios = np.stack([s[m].sum(axis=1) / n[m].sum(axis=1) for s, n, m in zip(sums, sizes, mats)], axis=1)
    nums = np.stack([s[m].sum(axis=1) for s, m in zip(sums, mats)], axis=1).sum(axis=1)
    dens = np.stack([n[m].sum(axis=1) for n, m in zip(sizes, mats)], axis=1).sum(axis=1)
    listed = [m.tolist() for m in mats]
    want = {"datasets": ratios.mean(axis=1), "queries": nums / dens}
    for weighting, reps in want.items():
        got = M.pooled_interval(data, listed, weighting, [2.5, 97.5])
        assert got == pytest.approx(list(np.percentile(reps, [2.5, 97.5])), rel=1e-12)
    assert M.pooled(data, "datasets") == pytest.approx((0.55 / 5 + -0.6 / 3) / 2, rel=1e-12)
    assert M.pooled(data, "queries") == pytest.approx((0.55 - 0.6) / 8, rel=1e-12)


def test_consistency_and_leave_one_out_by_hand():
    assert M.consistency([[0.01, 0.2], [-0.1, 0.1], [-0.5, -0.2]]) == {"above 0": 1, "covers 0": 1,
                                                                         "below 0": 1}
    data = [([1.0], [1]), ([2.0], [1]), ([6.0], [2])]
    loo = M.leave_one_out(["a", "b", "c"], data, "queries")
    assert loo == {"estimates": {"a": 8 / 3, "b": 7 / 3, "c": 1.5}, "range": [1.5, 8 / 3]}
    assert M.leave_one_out(["a", "b"], data[:2], "queries") == {"estimates": {}, "range": None}


def test_key_allowlist_names_an_unknown_and_a_missing_key():
    good = {k: ({} if isinstance(v, dict) else [] if isinstance(v, list) else 0) for k, v in C.SCHEMA.items()
            if k != "family"}
    problems = dict(C.key_problems(C.SCHEMA, good))
    assert "declared.weighting" in problems and problems["declared.weighting"] == "missing"
    assert not any(p.startswith("family") or p == "declared.family" for p in problems)  # optional
    bad = {**good, "tests": {}, "pooled": {**{k: 0 for k in C.SCHEMA["pooled"]}, "p_holm": 0.1},
           "leave_one_out": {"estimates": {"any-name": 0.1}, "range": None}}
    problems = dict(C.key_problems(C.SCHEMA, bad))
    assert problems["tests"] == "a key the audit does not know"
    assert problems["pooled.p_holm"] == "a key the audit does not know"
    assert not any(p.startswith("leave_one_out") for p in problems)


def test_the_family_of_tests_equals_numpy_draws_and_statsmodels_adjustments():
    from statsmodels.stats.multitest import multipletests

    F = audit_module("synthesis.synthesis_family")
    by_comparison = {"blend-ce": [([0.3, 0.1, 0.2, -0.05], [1, 1, 2, 1]), ([-0.2, 0.0, 0.1], [1, 1, 1])],
                     "ce-rrf": [([0.05, -0.1, 0.0, 0.02], [1, 1, 2, 1]), ([0.4, 0.3, 0.2], [1, 1, 1])]}
    anchor = {"family": ["blend-ce"], "seed": 9, "B": 300}
    got = F.family_block(by_comparison, ["a", "b"], anchor)
    rng = np.random.default_rng([9, 1])
    want_p = []
    for c in ("blend-ce", "ce-rrf"):
        for sums, _ in by_comparison[c]:
            signs = rng.integers(0, 2, size=(300, len(sums)), dtype=np.int64) * 2 - 1
            t = np.abs((signs * np.array(sums)).sum(axis=1))
            extreme = int(np.count_nonzero(t >= abs(sum(sums)) - 1e-10 * sum(map(abs, sums))))
            want_p.append((1 + extreme) / 301)
    assert [r["p"] for r in got["rows"]] == pytest.approx(want_p, rel=1e-15)
    fam = [r["p"] for r in got["rows"] if r["role"] == "family"]
    assert got["m"] == 2 and len(fam) == 2
    assert [r["p_holm"] for r in got["rows"][:2]] == pytest.approx(list(multipletests(fam, method="holm")[1]))
    assert [r["p_bh"] for r in got["rows"][:2]] == pytest.approx(list(multipletests(fam, method="fdr_bh")[1]))
    assert [r["p_holm"] for r in got["rows"][2:]] == [None, None]
