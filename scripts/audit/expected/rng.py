"""numpy's ``default_rng(seed).integers``, re-implemented with the standard library (``DefaultRng``), so the
audit regenerates both bootstrap index matrices from the seed of its ANCHOR and compares them element by
element."""

# Written from the numpy definitions (numpy/numpy @ 1f90bbb55e65e7de68921bc3f1a2d94492fdf689, unchanged
# since v2.4.6 in these parts): numpy/random/bit_generator.pyx SeedSequence (hashmix, mix, mix_entropy,
# generate_state); numpy/random/src/pcg64/pcg64.{c,h} (pcg64_set_seed, pcg_setseq_128_srandom_r, step,
# XSL-RR output, pcg64_next64/next32); numpy/random/_generator.pyx Generator.integers (Lemire, never
# masked); numpy/random/src/distributions/distributions.c (random_bounded_uint64_fill,
# buffered_bounded_lemire_uint32, bounded_lemire_uint64). Tested element by element against numpy
# (tests/audit/test_audit_generator.py). Only low=0, scalar high and dtype=int64 are supported.
_M32 = 0xFFFFFFFF
_M64 = 0xFFFFFFFFFFFFFFFF
_M128 = (1 << 128) - 1

# SeedSequence constants (bit_generator.pyx, module level).
_POOL_SIZE = 4
_INIT_A = 0x43B0D7E5
_MULT_A = 0x931E8875
_INIT_B = 0x8B51F9DD
_MULT_B = 0x58F38DED
_MIX_MULT_L = 0xCA01F9DD
_MIX_MULT_R = 0x4973F715
_XSHIFT = 16

# PCG64 multiplier (pcg64.h: PCG_DEFAULT_MULTIPLIER_HIGH/LOW).
_PCG_MULT = 0x2360ED051FC65DA44385DF649FCCF645


def _int_to_uint32_words(n):
    """Split a non-negative int into 32-bit words, least significant first.

    Mirrors bit_generator.pyx ``_int_to_uint32_array``; note 0 -> [0] (one word).
    """
    if n < 0:
        raise ValueError("expected non-negative integer")
    words = [n & _M32] if n == 0 else []
    while n > 0:
        words.append(n & _M32)
        n >>= 32
    return words


def entropy_words(seed):
    """The entropy words of an int seed or of a list of them: bit_generator.pyx ``_coerce_to_uint32_array``
    converts each list element by ``_int_to_uint32_array`` and concatenates the words ([s, 0, 0] with
    s < 2**32: three words, whose trailing zeros hash as the pool's missing words do, so
    ``default_rng([s, 0, 0])`` is ``default_rng(s)``)."""
    if isinstance(seed, (list, tuple)):
        words = []
        for x in seed:
            if isinstance(x, bool) or not isinstance(x, int):
                raise ValueError("a list seed holds non-negative ints only")
            words += _int_to_uint32_words(x)
        return words
    return _int_to_uint32_words(int(seed))


def seed_sequence_state(seed, n_words64=4):
    """``SeedSequence(seed).generate_state(n_words64, np.uint64)`` as Python ints (seed: an int or a list
    of ints).

    Mirrors bit_generator.pyx: ``SeedSequence.__init__`` -> ``get_assembled_entropy``
    (no spawn key, so no zero padding), ``mix_entropy`` with ``hashmix``/``mix``,
    then ``generate_state`` (uint32 words cycled from the pool, paired
    little-endian into uint64: word k = w[2k] | w[2k+1] << 32).
    """
    entropy = entropy_words(seed)
    hash_const = _INIT_A

    def hashmix(value):
        nonlocal hash_const
        value ^= hash_const
        hash_const = (hash_const * _MULT_A) & _M32
        value = (value * hash_const) & _M32
        return value ^ (value >> _XSHIFT)

    def mix(x, y):
        r = (_MIX_MULT_L * x - _MIX_MULT_R * y) & _M32
        return r ^ (r >> _XSHIFT)

    # mix_entropy: fill the pool (hashing 0 where the entropy runs out) ...
    pool = [hashmix(entropy[i] if i < len(entropy) else 0) for i in range(_POOL_SIZE)]
    # ... mix every pool word into every other pool word ...
    for i_src in range(_POOL_SIZE):
        for i_dst in range(_POOL_SIZE):
            if i_src != i_dst:
                pool[i_dst] = mix(pool[i_dst], hashmix(pool[i_src]))
    # ... and fold in any entropy words beyond the pool size.
    for i_src in range(_POOL_SIZE, len(entropy)):
        for i_dst in range(_POOL_SIZE):
            pool[i_dst] = mix(pool[i_dst], hashmix(entropy[i_src]))

    # generate_state
    hash_const_b = _INIT_B
    w32 = []
    for i in range(2 * n_words64):
        v = pool[i % _POOL_SIZE] ^ hash_const_b
        hash_const_b = (hash_const_b * _MULT_B) & _M32
        v = (v * hash_const_b) & _M32
        w32.append(v ^ (v >> _XSHIFT))
    return [w32[2 * k] | (w32[2 * k + 1] << 32) for k in range(n_words64)]


class DefaultRng:  # noqa: D101 - see the block comment above
    """Stand-in for ``numpy.random.default_rng(seed)`` (Generator(PCG64(seed))).

    State mirrors numpy's ``pcg64_state``: the 128-bit LCG ``state`` and ``inc``
    plus the 32-bit half-buffer ``has_uint32``/``uinteger`` used by
    ``pcg64_next32``. That half-buffer lives in the bit generator, so it
    persists across ``integers`` calls exactly as in numpy.
    """

    def __init__(self, seed):
        """``seed``: a non-negative int, or a list of them (``default_rng([seed, stream, s])``)."""
        items = seed if isinstance(seed, (list, tuple)) else [seed]
        if not items or any(isinstance(x, bool) or not isinstance(x, int) or x < 0 for x in items):
            raise ValueError("seed must be a non-negative int or a non-empty list of them")
        # _pcg64.pyx PCG64.__init__: val = generate_state(4, uint64);
        # pcg64.c pcg64_set_seed(state, &val[0], &val[2]):
        #   initstate = val[0] << 64 | val[1], initseq = val[2] << 64 | val[3]
        v = seed_sequence_state(seed, 4)
        initstate = (v[0] << 64) | v[1]
        initseq = (v[2] << 64) | v[3]
        # pcg64.h pcg_setseq_128_srandom_r: state=0; inc=initseq<<1|1; step;
        # state += initstate; step.
        self._inc = ((initseq << 1) | 1) & _M128
        s = self._inc                       # step from state 0: 0*MULT + inc
        s = (s + initstate) & _M128
        self._state = (s * _PCG_MULT + self._inc) & _M128
        # _pcg64.pyx _reset_state_variables
        self._has_uint32 = False
        self._uinteger = 0

    # -- raw outputs (handy for debugging; the hot loops inline these) -------
    def next_uint64(self):
        """pcg64.h pcg64_next64: step the LCG, then XSL-RR output of the new state."""
        s = (self._state * _PCG_MULT + self._inc) & _M128
        self._state = s
        hi = s >> 64
        x = hi ^ (s & _M64)
        rot = hi >> 58
        return ((x >> rot) | (x << (64 - rot))) & _M64

    def next_uint32(self):
        """pcg64.h pcg64_next32: low half of a fresh 64-bit output, high half on the next call."""
        if self._has_uint32:
            self._has_uint32 = False
            return self._uinteger
        x = self.next_uint64()
        self._has_uint32 = True
        self._uinteger = x >> 32
        return x & _M32

    # -- bounded integers -----------------------------------------------------
    def integers_flat(self, high, count):
        """``rng.integers(0, high, size=count, dtype=np.int64).tolist()``.

        Mirrors _bounded_integers.pyx.in ``_rand_int64`` (rng = high - 1, off = 0)
        and distributions.c ``random_bounded_uint64_fill`` with use_masked=False.
        """
        if not isinstance(high, int) or isinstance(high, bool):
            raise TypeError("high must be an int")
        if count < 0:
            raise ValueError("negative size")
        if count == 0:                       # np.prod(size) == 0: no draws
            return []
        if high < 1:
            raise ValueError("high <= 0")
        if high > 1 << 63:
            raise ValueError("high is out of bounds for int64")
        rng = high - 1                       # closed-interval range
        if rng == 0:                         # all zeros, no draws consumed
            return [0] * count
        if rng <= _M32:
            return self._lemire32(rng + 1, count)
        return self._lemire64(rng + 1, count)

    def integers_matrix(self, high, rows, cols):
        """``rng.integers(0, high, size=(rows, cols), dtype=np.int64).tolist()`` (C order)."""
        flat = self.integers_flat(high, rows * cols)
        return [flat[r * cols:(r + 1) * cols] for r in range(rows)]

    def _lemire32(self, excl, count):
        """distributions.c ``buffered_bounded_lemire_uint32`` repeated ``count`` times.

        Each draw x = pcg64_next32(); m = x * excl; accept iff (m mod 2**32) >=
        2**32 mod excl (numpy's ``leftover < rng_excl`` pre-check is only a
        shortcut for that); result m >> 32. excl == 2**32 (numpy's direct
        ``next_uint32`` branch) falls out of the same formula with threshold 0.
        The LCG step and XSL-RR output are inlined; one 64-bit output serves
        two 32-bit draws, low half first.
        """
        threshold = (1 << 32) % excl
        M32, M64, M128, MULT = _M32, _M64, _M128, _PCG_MULT
        s, inc = self._state, self._inc
        has, upper = self._has_uint32, self._uinteger
        out = [0] * count
        i = 0
        x = -1
        if has and count:                    # leftover high half from a previous call
            has = False
            m = upper * excl
            if (m & M32) >= threshold:
                out[0] = m >> 32
                i = 1
        while i < count:
            s = (s * MULT + inc) & M128
            hi = s >> 64
            x = hi ^ (s & M64)
            rot = hi >> 58
            x = ((x >> rot) | (x << (64 - rot))) & M64
            m = (x & M32) * excl             # low half first
            if (m & M32) >= threshold:
                out[i] = m >> 32
                i += 1
                if i == count:               # high half stays buffered
                    has = True
                    break
            m = (x >> 32) * excl             # then high half
            if (m & M32) >= threshold:
                out[i] = m >> 32
                i += 1
        if x >= 0:
            # numpy keeps uinteger = high half of the last next32-drawn output
            # even after consuming it (only has_uint32 is cleared).
            upper = x >> 32
        self._state, self._has_uint32, self._uinteger = s, has, upper
        return out

    def _lemire64(self, excl, count):
        """distributions.c ``bounded_lemire_uint64`` repeated ``count`` times.

        Uses pcg64_next64 directly, so the 32-bit half-buffer is neither used
        nor cleared (as in numpy).
        """
        threshold = (1 << 64) % excl
        M64, M128, MULT = _M64, _M128, _PCG_MULT
        s, inc = self._state, self._inc
        out = [0] * count
        i = 0
        while i < count:
            s = (s * MULT + inc) & M128
            hi = s >> 64
            x = hi ^ (s & M64)
            rot = hi >> 58
            x = ((x >> rot) | (x << (64 - rot))) & M64
            m = x * excl
            if (m & M64) >= threshold:
                out[i] = m >> 64
                i += 1
        self._state = s
        return out
