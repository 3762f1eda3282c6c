"""The grouped bootstrap: vectorised == slow loop, ratio estimator, percentiles, diagnostics."""

import numpy as np
import pytest

from rerank_study import bootstrap as bs


def _random_setup(seed=7, n=40, G=25):
    rng = np.random.default_rng(seed)
    deltas = (rng.random(n) - 0.4).round(6).tolist()
    labels = sorted(rng.integers(0, G, size=n).tolist())
    groups, order = {}, []
    for i, g in enumerate(labels):
        groups.setdefault(g, []).append(i)
    positions = list(groups.values())
    return deltas, positions


def test_vectorised_replicates_equal_slow_loop_bit_for_bit():
    deltas, positions = _random_setup()
    g_idx, q_idx = bs.draw_indices(110, len(positions), len(deltas), 500)
    fast = bs.grouped_replicates(deltas, positions, g_idx)
    slow = [bs.replicate_slow(deltas, positions, row) for row in g_idx.tolist()]
    assert fast.tolist() == slow  # exact equality, not approx
    fast_q = bs.query_replicates(deltas, q_idx)
    slow_q = [bs.replicate_slow(deltas, [[i] for i in range(len(deltas))], row) for row in q_idx.tolist()]
    assert fast_q.tolist() == slow_q


def test_estimator_is_the_ratio_not_the_mean_of_group_means():
    deltas = [1.0, 0.0, 0.0, 0.0]
    positions = [[0], [1, 2, 3]]
    draw = np.array([[0, 1]])
    rep = bs.grouped_replicates(deltas, positions, draw)[0]
    assert rep == 0.25  # (1 + 0 + 0 + 0) / (1 + 3)
    assert bs.mean_of_group_means(deltas, positions, [0, 1]) == 0.5  # the wrong estimator differs
    # a group drawn twice counts twice: (1 + 1) / (1 + 1)
    assert bs.grouped_replicates(deltas, positions, np.array([[0, 0]]))[0] == 1.0
    # (0*3 + 0*3) / 6
    assert bs.grouped_replicates(deltas, positions, np.array([[1, 1]]))[0] == 0.0


def test_full_sample_draw_gives_the_query_mean():
    deltas, positions = _random_setup()
    draw = np.array([list(range(len(positions)))])
    order = [i for g in positions for i in g]
    assert bs.grouped_replicates(deltas, positions, draw)[0] == pytest.approx(np.mean(deltas), abs=1e-15)
    assert sorted(order) == list(range(len(deltas)))


@pytest.mark.parametrize("p", [0, 2.5, 25, 50, 97.5, 100])
def test_percentile_equals_numpy_linear_exactly(p):
    rng = np.random.default_rng(3)
    for n in (1, 2, 7, 100, 10000):
        x = rng.normal(size=n)
        assert bs.percentile_linear(x.tolist(), p) == float(np.percentile(x, p))


def test_percentile_hand_example():
    # n=5, p=2.5: h = 4*0.025 = 0.1 -> 1 + 0.1*(2-1) = 1.1 ; p=97.5: h = 3.9 -> 4 + 0.9 -> b - (b-a)*0.1 = 4.9
    assert bs.percentile_linear([5, 1, 4, 2, 3], 2.5) == pytest.approx(1.1, abs=1e-15)
    assert bs.percentile_linear([5, 1, 4, 2, 3], 97.5) == pytest.approx(4.9, abs=1e-15)


def test_index_matrices_follow_the_documented_generator_protocol():
    g, q = bs.draw_indices(110, 94, 100, 10)
    rng = np.random.default_rng(110)
    assert (g == rng.integers(0, 94, size=(10, 94))).all()
    assert (q == rng.integers(0, 100, size=(10, 100))).all()
    assert g.min() >= 0 and g.max() < 94


def test_leave_one_group_out_hand_example():
    deltas = [1.0, 2.0, 3.0, 6.0]
    positions = [[0, 1], [2], [3]]
    assert bs.leave_one_group_out(deltas, positions) == [4.5, 3.0, 2.0]


def test_wins_ties_losses():
    assert bs.wins_ties_losses([0.1, 0.0, -0.2, 0.0, 0.3]) == (2, 2, 1)


def test_interval_covers():
    iv = bs.Interval(-0.01, 0.02)
    assert iv.covers(0.0) and iv.covers(0.01) and not iv.covers(0.03)


def test_groups_must_partition():
    with pytest.raises(ValueError, match="partition"):
        bs.group_positions(["a", "b"], [["a"]])
