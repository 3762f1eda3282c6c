"""The audit's standard-library generator, tested against the library it mirrors: numpy's
default_rng(seed).integers, element by element, on the bootstrap's shapes, every range and odd shapes."""

import numpy as np
import pytest
from conftest import audit_module

rng = audit_module("expected.rng")


@pytest.mark.parametrize("seed", [0, 1, 110, 111, 2**32 + 5, 2**63 + 7, 2**127 + 12345])
def test_default_rng_integers_equal_numpy_on_the_bootstrap_shapes(seed):
    """Grouped (B x G) then query-level (B x n) matrices from ONE generator, as the pipeline draws them."""
    B, G, n = 500, 94, 100
    npg = np.random.default_rng(seed)
    want_g = npg.integers(0, G, size=(B, G), dtype=np.int64).tolist()
    want_q = npg.integers(0, n, size=(B, n), dtype=np.int64).tolist()
    mine = rng.DefaultRng(seed)
    assert mine.integers_matrix(G, B, G) == want_g
    assert mine.integers_matrix(n, B, n) == want_q


@pytest.mark.parametrize("high", [1, 2, 3, 7, 2**31 + 11, 2**32 - 1, 2**32, 2**32 + 1, 2**40 + 3, 2**63])
@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (17, 5)])
def test_default_rng_integers_equal_numpy_for_every_range_and_odd_shapes(high, shape):
    # odd counts leave a buffered 32-bit half in the generator: the second call must consume it as numpy does
    npg = np.random.default_rng(20261130)
    first = npg.integers(0, high, size=shape, dtype=np.int64).tolist()
    second = npg.integers(0, 5, size=shape, dtype=np.int64).tolist()
    mine = rng.DefaultRng(20261130)
    assert mine.integers_matrix(high, *shape) == first
    assert mine.integers_matrix(5, *shape) == second


@pytest.mark.parametrize("seed", [[110, 1, 0], [110, 2, 1999], [111, 3, 300, 7], [110, 4], [0], [5, 0, 0],
                                  [2**32 - 1, 3, 600, 399], [2**32 + 9, 1, 2], [7, 2**40, 1, 1, 1, 1]])
def test_list_seeds_equal_numpy(seed):
    """The calibration's generators default_rng([seed, stream, *index]): numpy concatenates the list elements'
    uint32 words (an element >= 2**32 gives two, more than four words fold into the pool)."""
    npg = np.random.default_rng(seed)
    want = [npg.integers(0, 7, size=5, dtype=np.int64).tolist(),
            npg.integers(0, 2, size=(9, 3), dtype=np.int64).tolist(),
            npg.integers(0, 93, size=(4, 93), dtype=np.int64).tolist()]
    mine = rng.DefaultRng(seed)
    assert [mine.integers_flat(7, 5), mine.integers_matrix(2, 9, 3), mine.integers_matrix(93, 4, 93)] == want


def test_trailing_zeros_do_not_count_and_bad_list_seeds_are_refused():
    assert rng.DefaultRng([5, 0, 0]).integers_flat(1000, 8) == rng.DefaultRng(5).integers_flat(1000, 8)
    for bad in ([], [1, -1], [1, True], [1.0]):
        with pytest.raises(ValueError):
            rng.DefaultRng(bad)
