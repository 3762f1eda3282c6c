#!/usr/bin/env python3
"""Independent audit of a finished run — Python standard library only.

    python scripts/audit.py results/<run> [--lockdir lockfiles] [--out results/<run>/audit.json]

It imports nothing from the project and shares no code with it: every definition below is
re-implemented from the written definitions (README / SOURCE_MAP), so an error in the
pipeline's code is not repeated here. It recomputes, from the candidates, the per-pair logits
and the qrels: CE ranks, blend scores and ranks, every per-query metric of the three methods,
the evidence groups, every bootstrap replicate of both schemes and all comparisons from the
saved index matrices, the interval endpoints, means, W/T/L, the leave-one-group-out range and
the report's numbers; and it checks every artefact hash against the manifest and the pins
against the lockfiles, and the confirmation seal.

Structure: ``RunView`` reads what the run folder says (each file once, on first use) and
recomputes what the definitions say; each ``check_*`` function compares the two for one
subject and records every comparison under its name. FAIL CLOSED: a check whose input is
missing or unreadable fails (naming what is missing); it never skips.

Exit status 0 when every check passes; 1 when any check fails (each failure names the check,
file, item and expected vs found); 2 when the folder is not a run at all (no manifest).
Floats are compared EXACTLY: the pipeline writes shortest round-trip text and both sides add
in the documented order (group sums in group order, replicate sums in draw order).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from functools import cached_property
from pathlib import Path

MAX_FAILURES_SHOWN = 20
DEFAULT_CONFIG = Path(__file__).resolve().parent.parent / "config" / "config.yaml"  # the committed config
METHODS = ("rrf", "ce", "blend")
STANDIN = "STAND-IN"


# ----------------------------------------------------------------------------- bookkeeping --
class Audit:
    def __init__(self):
        self.checks: dict[str, dict] = {}

    def check(self, name: str, ok: bool, file: str, item: str = "", expected=None, found=None) -> bool:
        c = self.checks.setdefault(name, {"checked": 0, "failures": []})
        c["checked"] += 1
        if not ok:
            c["failures"].append({"file": file, "item": item, "expected": _jsonable(expected),
                                  "found": _jsonable(found)})
        return ok

    def note(self, name: str, text: str) -> None:
        self.checks.setdefault(name, {"checked": 0, "failures": []})["note"] = text

    def run(self, name: str, fn, view: "RunView") -> None:
        """Run one named check; if its inputs are missing or unreadable, the check FAILS saying so."""
        try:
            fn(view, self)
        except (OSError, KeyError, ValueError, TypeError, IndexError, json.JSONDecodeError, Unreadable) as exc:
            self.check(name, False, getattr(exc, "file", "") or str(view.rundir), "the check could not run",
                       "its inputs present and well formed", f"{type(exc).__name__}: {exc}")

    @property
    def failed(self):
        return [n for n, c in self.checks.items() if c["failures"]]


def _jsonable(x):
    if isinstance(x, float) and not math.isfinite(x):
        return repr(x)
    if isinstance(x, (set, tuple)):
        return sorted(x) if isinstance(x, set) else list(x)
    return x


class Unauditable(Exception):
    """Not a run folder at all (exit 2)."""


class Unreadable(Exception):
    def __init__(self, file, problem):
        self.file = str(file)
        super().__init__(f"{file}: {problem}")


# --------------------------------------------------------------------------------- reading --
def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_table(path: Path) -> list[dict]:
    with open(path, encoding="utf-8", newline="") as fh:
        lines = fh.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise Unreadable(path, "empty table (no header)")
    header = lines[0].rstrip("\r").split("\t")
    rows = []
    for i, line in enumerate(lines[1:], start=2):
        cells = line.rstrip("\r").split("\t")
        if len(cells) != len(header):
            raise Unreadable(path, f"line {i}: {len(cells)} cells, header has {len(header)}")
        rows.append(dict(zip(header, cells)))
    return rows


def read_ids(path: Path) -> list[str]:
    return [l for l in path.read_text(encoding="utf-8").split("\n") if l]


def read_run(path: Path) -> dict[str, list[tuple[str, int, str]]]:
    out: dict[str, list] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        q, _q0, d, r, s, _tag = line.split()
        out.setdefault(q, []).append((d, int(r), s))
    return out


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """A BEIR qrels table (header query-id, corpus-id, score; LF or CRLF)."""
    out: dict[str, dict[str, int]] = {}
    for row in read_table(path):
        out.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    return out


def read_json(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def markdown_tables(text: str) -> list[list[dict[str, str]]]:
    """Every markdown table of a report as a list of rows keyed by the header's cell texts."""
    tables, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            header = [c.strip() for c in lines[i].strip().strip("|").split("|")]
            rows, j = [], i + 2
            while j < len(lines) and lines[j].startswith("|"):
                cells = [c.strip() for c in lines[j].strip().strip("|").split("|")]
                rows.append(dict(zip(header, cells)))
                j += 1
            tables.append(rows)
            i = j
        else:
            i += 1
    return tables


# ------------------------------------------------------------ definitions, re-implemented --
def tie_rule_order(scores: dict[str, float]) -> list[str]:
    """Score descending; ties by document id compared as strings, descending."""
    return [d for d, _ in sorted(scores.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)]


def ndcg(order: list[str], rels: dict[str, int], k: int) -> float:
    """trec_eval ndcg_cut: linear gain, log2(i+2) discount, ideal from all judged relevant docs."""
    dcg = 0.0
    for i, d in enumerate(order[:k]):
        g = rels.get(d, 0)
        if g > 0:
            dcg += g / math.log2(i + 2)
    ideal = sorted((g for g in rels.values() if g > 0), reverse=True)[:k]
    idcg = 0.0
    for i, g in enumerate(ideal):
        idcg += g / math.log2(i + 2)
    return dcg / idcg if idcg > 0 else 0.0


def recall(order: list[str], rels: dict[str, int], k: int) -> float:
    positives = {d for d, g in rels.items() if g > 0}
    return len(positives & set(order[:k])) / len(positives)


def first_rel(order: list[str], rels: dict[str, int]):
    for i, d in enumerate(order, start=1):
        if rels.get(d, 0) > 0:
            return i
    return None


def mrr(order: list[str], rels: dict[str, int], k: int) -> float:
    r = first_rel(order[:k], rels)
    return 0.0 if r is None else 1.0 / r


def components(qids: list[str], qrels: dict[str, dict[str, int]]) -> list[list[str]]:
    """Connected components by breadth-first search over 'shares a relevant document'."""
    by_doc: dict[str, list[str]] = {}
    for q in qids:
        for d, g in qrels[q].items():
            if g > 0:
                by_doc.setdefault(d, []).append(q)
    seen, comps = set(), []
    for q in qids:
        if q in seen:
            continue
        comp, frontier = {q}, [q]
        seen.add(q)
        while frontier:
            cur = frontier.pop()
            for d, g in qrels[cur].items():
                if g <= 0:
                    continue
                for other in by_doc[d]:
                    if other not in seen:
                        seen.add(other)
                        comp.add(other)
                        frontier.append(other)
        comps.append([x for x in qids if x in comp])
    return comps


def percentile(values: list[float], p: float) -> float:
    """Linear interpolation between order statistics (Hyndman-Fan type 7), evaluated as
    numpy does: h = (n-1)*(p/100); a + (b-a)*t, or b - (b-a)*(1-t) when t >= 0.5."""
    xs = sorted(values)
    h = (len(xs) - 1) * (p / 100)
    lo = math.floor(h)
    hi = min(lo + 1, len(xs) - 1)
    t = h - lo
    a, b = xs[lo], xs[hi]
    return b - (b - a) * (1 - t) if t >= 0.5 else a + (b - a) * t


def seq_sum(values) -> float:
    total = 0.0
    for v in values:
        total += v
    return total


def mean(values) -> float:
    values = list(values)
    return seq_sum(values) / len(values)


def exact_mcnemar(gained: int, lost: int) -> float:
    n = gained + lost
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(gained, lost) + 1))
    return min(1.0, 2 * tail / 2 ** n)



# ---------------------------------------- numpy's default_rng(seed).integers, re-implemented --
# Written from the numpy definitions (numpy/numpy @ 1f90bbb55e65e7de68921bc3f1a2d94492fdf689, unchanged
# since v2.4.6 in these parts): numpy/random/bit_generator.pyx SeedSequence (hashmix, mix, mix_entropy,
# generate_state); numpy/random/src/pcg64/pcg64.{c,h} (pcg64_set_seed, pcg_setseq_128_srandom_r, step,
# XSL-RR output, pcg64_next64/next32); numpy/random/_generator.pyx Generator.integers (Lemire, never
# masked); numpy/random/src/distributions/distributions.c (random_bounded_uint64_fill,
# buffered_bounded_lemire_uint32, bounded_lemire_uint64). Tested element by element against numpy
# (tests/test_audit_rng.py). Only low=0, scalar high and dtype=int64 are supported.
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


def seed_sequence_state(seed, n_words64=4):
    """``SeedSequence(seed).generate_state(n_words64, np.uint64)`` as Python ints.

    Mirrors bit_generator.pyx: ``SeedSequence.__init__`` -> ``get_assembled_entropy``
    (no spawn key, so no zero padding), ``mix_entropy`` with ``hashmix``/``mix``,
    then ``generate_state`` (uint32 words cycled from the pool, paired
    little-endian into uint64: word k = w[2k] | w[2k+1] << 32).
    """
    entropy = _int_to_uint32_words(int(seed))
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
        if not isinstance(seed, int) or seed < 0:
            raise ValueError("seed must be a non-negative int")
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


# ------------------------------------------------------------------ the settings' anchor --
def _yaml_scalar(text: str, where: str):
    t = text.strip()
    if t == "":
        return None
    if t in ('""', "''"):
        return ""
    if (t[0] == t[-1]) and t[0] in "\"'" and len(t) >= 2:
        return t[1:-1]
    if t in ("true", "True"):
        return True
    if t in ("false", "False"):
        return False
    if t in ("null", "~"):
        return None
    try:
        return int(t)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        pass
    if t[0] in "[]{}&*!|>%@`" or ": " in t or " #" in t:  # YAML indicators a plain scalar cannot hold
        raise Unreadable(where, f"unsupported YAML value {t!r}")
    return t


def _yaml_flow(text: str, where: str):
    t = text.strip()
    inner = t[1:-1].strip()
    items = [x.strip() for x in inner.split(",")] if inner else []
    if t[0] == "[":
        return [_yaml_scalar(x, where) for x in items]
    out = {}
    for x in items:
        k, sep, val = x.partition(":")
        if not sep:
            raise Unreadable(where, f"flow mapping item {x!r} has no ':'")
        out[k.strip()] = _yaml_scalar(val, where)
    return out


def read_simple_yaml(path: Path) -> dict:
    """The YAML subset the project's config uses: block mappings indented by spaces, scalars, one-level
    flow lists ``[a, b]`` and flow mappings ``{k: v}``, ``#`` comments. Anything else is refused (this
    reader is the standard-library audit's own; tests compare it with PyYAML on the committed config)."""
    root: dict = {}
    stack = [(-1, root)]
    for no, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        where = f"{path}:{no}"
        line = raw
        quote = None
        for i, c in enumerate(raw):  # strip a comment that is not inside quotes
            if c in "\"'" and quote in (None, c):
                quote = None if quote else c
            elif c == "#" and quote is None and (i == 0 or raw[i - 1] in " \t"):
                line = raw[:i]
                break
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        if "\t" in line[:indent] or line.lstrip().startswith("- "):
            raise Unreadable(where, "tabs and block sequences are not supported")
        key, sep, value = line.strip().partition(":")
        if not sep or not key:
            raise Unreadable(where, f"not a 'key: value' line: {raw!r}")
        while stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        value = value.strip()
        if value == "":
            parent[key] = {}
            stack.append((indent, parent[key]))
        elif value[0] in "[{":
            if value[-1] != {"[": "]", "{": "}"}[value[0]]:
                raise Unreadable(where, "a flow collection must end on its own line")
            parent[key] = _yaml_flow(value, where)
        else:
            parent[key] = _yaml_scalar(value, where)
    return root


def merged(base: dict, over: dict) -> dict:
    """``over``'s values over ``base``'s, mapping by mapping (how a study file overrides config.yaml)."""
    out = dict(base)
    for key, val in over.items():
        out[key] = merged(out[key], val) if isinstance(val, dict) and isinstance(out.get(key), dict) else val
    return out


def settings_from_config(cfg: dict, smoke: bool) -> dict:
    """What config.run_settings gives for a development run (re-implemented: the anchor's side)."""
    shape = cfg["smoke_settings"] if smoke else None
    b = cfg["bootstrap"]
    return {"study": cfg["study"], "n_queries": shape["queries"] if shape else None,
            "depth": shape["depth"] if shape else cfg["candidates"]["depth"],
            "blend_k": cfg["blend"]["k"], "metrics": cfg["metrics"], "bootstrap_B": b["B"],
            "bootstrap_seed": b["seed"], "percentiles": b["percentiles"], "threshold": cfg["threshold"],
            "comparisons": cfg["comparisons"], "max_length": cfg["ce"]["max_length"], "evalstats": cfg["evalstats"],
            "verify_batches": cfg["verify"]["batches"], "verify_seed": cfg["verify"]["seed"]}


def settings_from_protocol(protocol: dict, cfg: dict) -> dict:
    """The frozen protocol's settings, in the run-settings shape (a confirmation opening's anchor)."""
    return {"study": protocol["study"], "n_queries": None, "depth": protocol["candidates"]["params"]["depth"],
            "blend_k": protocol["blend"]["k"], "metrics": protocol["metrics"],
            "bootstrap_B": protocol["bootstrap"]["B"], "bootstrap_seed": protocol["bootstrap"]["seed"],
            "percentiles": protocol["bootstrap"]["percentiles"], "threshold": protocol["threshold"],
            "comparisons": protocol["comparisons"], "max_length": protocol["scoring"]["max_length"],
            "evalstats": protocol["evalstats"],
            # an opening re-infers EVERY batch; the seed then only orders the record
            "verify_batches": None, "verify_seed": cfg["verify"]["seed"]}


# ------------------------------------------------------------------------- the run's view --
def resolve(path_text: str, base: Path) -> Path:
    p = Path(path_text)
    return p if p.is_absolute() else base / p


def docs_by_query(rows) -> dict[str, list[str]]:
    """Each query's document ids in file order (a candidate table's rows)."""
    out: dict[str, list[str]] = {}
    for row in rows:
        out.setdefault(row["qid"], []).append(row["doc_id"])
    return out


class RunView:
    """What a finished run folder says (read on first use) and what the definitions say it should
    say (recomputed on first use). Checks compare the two."""

    def __init__(self, rundir: Path, lockdir: Path | None, config_anchor: Path, study_anchor: Path | None = None):
        self.rundir = rundir
        manifest_path = rundir / "manifest.json"
        if not manifest_path.exists():
            raise Unauditable(f"{manifest_path} does not exist: not a finished run")
        try:
            self.manifest = read_json(manifest_path)
            self.manifest_settings = self.manifest["settings"]
            self.art = {a["key"]: a for a in self.manifest["artefacts"]}
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise Unauditable(f"{manifest_path} is not a run manifest: {type(exc).__name__}: {exc}") from None
        self.manifest_path = manifest_path
        self.lockdir = lockdir if lockdir is not None else resolve(self.manifest["lockdir"], rundir)
        self.kind = self.manifest.get("kind", "development")
        self.scorer = self.manifest.get("scorer")
        self.config_anchor = config_anchor
        self.study_anchor = study_anchor  # a study file: its values override the committed config's

    # ---- the anchors: what the run must have used, from outside the run
    @cached_property
    def anchor_path(self) -> Path:
        return self.lockdir / "protocol.json" if self.kind == "confirmation" else self.config_anchor

    @cached_property
    def config(self) -> dict:
        """The committed config (a development run's anchor), with a study file's values over it."""
        cfg = read_simple_yaml(self.config_anchor)
        return merged(cfg, read_simple_yaml(self.study_anchor)) if self.study_anchor else cfg

    @cached_property
    def settings(self) -> dict:
        """Every setting of the analysis, from the ANCHOR (the committed config, or the frozen protocol of a
        confirmation opening) - never from what the run says about itself. A run is a smoke run when its
        manifest says it analysed a prefix of the split (n_queries set); the anchor then gives that prefix."""
        if self.kind == "confirmation":
            return settings_from_protocol(read_json(self.anchor_path), self.config)
        return settings_from_config(self.config, smoke=self.manifest_settings.get("n_queries") is not None)

    def path(self, key: str) -> Path:
        if key not in self.art:
            raise Unreadable(self.manifest_path, f"the manifest lists no artefact {key!r}")
        return resolve(self.art[key]["path"], self.rundir)

    def lock(self, name: str):
        return read_json(self.lockdir / name)

    # ---- what the run says
    @cached_property
    def split_dev(self):
        return read_ids(self.path("split_dev"))

    @cached_property
    def split_confirm(self):
        return read_ids(self.path("split_confirm"))

    @cached_property
    def analysed(self):
        return read_ids(self.path("run_queries"))

    @cached_property
    def frozen(self) -> dict[str, list[str]]:
        return docs_by_query(read_table(self.path("candidates")))

    @cached_property
    def cand_rows(self):
        return read_table(self.path("run_candidates"))

    @cached_property
    def cands(self) -> dict[str, list[str]]:
        return docs_by_query(self.cand_rows)

    @cached_property
    def pair_rows(self):
        return read_table(self.path("pairs"))

    @cached_property
    def logits(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for row in self.pair_rows:
            out.setdefault(row["qid"], {})[row["doc_id"]] = float(row["logit"])
        return out

    @cached_property
    def qrels(self):
        return read_qrels(self.path("run_qrels"))

    @cached_property
    def source_qrels(self):
        return read_qrels(self.path("qrels_confirm" if self.kind == "confirmation" else "qrels_dev"))

    @cached_property
    def per_query_rows(self):
        return read_table(self.path("per_query"))

    @cached_property
    def group_rows(self):
        return read_table(self.path("groups"))

    @cached_property
    def summary(self):
        return read_json(self.path("summary"))

    @cached_property
    def report_tables(self):
        return markdown_tables(self.path("report").read_text(encoding="utf-8"))

    # ---- what the definitions say
    @cached_property
    def metric(self) -> str:
        return f"ndcg@{self.settings['metrics']['ndcg_k']}"

    @cached_property
    def orders(self) -> dict[str, dict[str, list[str]]]:
        """rrf / ce / blend orders per analysed query, and the CE rank and blend score/rank per pair."""
        k = self.settings["blend_k"]
        orders = {m: {} for m in METHODS}
        self.r1, self.blend_score, self.blend_rank = {}, {}, {}
        for q in self.analysed:
            cands, lg = self.cands[q], self.logits[q]
            if set(lg) != set(cands):
                raise Unreadable(self.path("pairs"), f"query {q}: the scored pairs are not its candidates")
            ce_order = tie_rule_order(lg)
            r1 = {d: i for i, d in enumerate(ce_order, start=1)}
            s = {d: 1.0 / (k + (i + 1)) + 1.0 / (k + r1[d]) for i, d in enumerate(cands)}
            orders["rrf"][q], orders["ce"][q], orders["blend"][q] = cands, ce_order, tie_rule_order(s)
            for d in cands:
                self.blend_score[(q, d)], self.r1[(q, d)] = s[d], r1[d]
            for i, d in enumerate(orders["blend"][q], start=1):
                self.blend_rank[(q, d)] = i
        return orders

    @cached_property
    def recomputed(self) -> dict[str, dict]:
        """Every per-query metric of every method, from the orders and the run's qrels."""
        ms = self.settings["metrics"]
        nk, rks, mk = ms["ndcg_k"], ms["recall_ks"], ms["mrr_k"]
        out = {}
        for q in self.analysed:
            rels = self.qrels[q]
            positives = {d for d, g in rels.items() if g > 0}
            rec = {}
            for m in METHODS:
                o = self.orders[m][q]
                rec[f"{m}_ndcg@{nk}"] = ndcg(o, rels, nk)
                for k in rks:
                    rec[f"{m}_recall@{k}"] = recall(o, rels, k)
                    rec[f"{m}_capped_recall@{k}"] = len(positives & set(o[:k])) / min(len(positives), k)
                rec[f"{m}_mrr@{mk}"] = mrr(o, rels, mk)
                rec[f"{m}_first_rel_rank"] = first_rel(o, rels)
            out[q] = rec
        return out

    @cached_property
    def groups(self) -> list[list[str]]:
        return components(self.analysed, self.qrels)

    @cached_property
    def members(self) -> list[list[int]]:
        pos = {q: i for i, q in enumerate(self.analysed)}
        return [[pos[q] for q in g] for g in self.groups]

    @cached_property
    def comparisons(self) -> dict[str, list[str]]:
        return self.settings["comparisons"]["all"]

    @cached_property
    def deltas(self) -> dict[str, list[float]]:
        rc, metric = self.recomputed, self.metric
        return {name: [rc[q][f"{a}_{metric}"] - rc[q][f"{b}_{metric}"] for q in self.analysed]
                for name, (a, b) in self.comparisons.items()}

    def index_matrix(self, key: str, cols: int) -> list[list[int]]:
        out = []
        for b, row in enumerate(read_table(self.path(key))):
            if int(row["replicate"]) != b:
                raise Unreadable(self.path(key), f"row {b + 2}: replicate {row['replicate']}, expected {b}")
            out.append([int(row[f"draw{j}"]) for j in range(len(row) - 1)])
        return out

    @cached_property
    def grouped_idx(self):
        return self.index_matrix("grouped_indices", len(self.groups))

    @cached_property
    def query_idx(self):
        return self.index_matrix("query_indices", len(self.analysed))

    @cached_property
    def replicates(self) -> dict[str, list[float]]:
        """Every replicate of both schemes for every comparison, from the saved index matrices."""
        out = {}
        for name, d in self.deltas.items():
            gsum = [seq_sum(d[i] for i in m) for m in self.members]
            gsize = [len(m) for m in self.members]
            grouped, query = [], []
            for row in self.grouped_idx:
                num, den = 0.0, 0
                for g in row:
                    num += gsum[g]
                    den += gsize[g]
                grouped.append(num / den)
            for row in self.query_idx:
                num = 0.0
                for i in row:
                    num += d[i]
                query.append(num / len(row))
            out[f"grouped_{name}"], out[f"query_{name}"] = grouped, query
        return out

    @cached_property
    def expected_comparisons(self) -> dict[str, dict]:
        lo_p, hi_p = self.settings["percentiles"]
        thr = self.settings["threshold"]
        out = {}
        for name, d in self.deltas.items():
            m = seq_sum(d) / len(d)
            reps = self.replicates
            gi = [percentile(reps[f"grouped_{name}"], lo_p), percentile(reps[f"grouped_{name}"], hi_p)]
            qi = [percentile(reps[f"query_{name}"], lo_p), percentile(reps[f"query_{name}"], hi_p)]
            exp = {"mean": m, "grouped_interval": gi, "query_interval": qi, "wins": sum(x > 0 for x in d),
                   "ties": sum(x == 0 for x in d), "losses": sum(x < 0 for x in d),
                   "grouped_covers_0": gi[0] <= 0 <= gi[1], "grouped_covers_threshold": gi[0] <= thr <= gi[1],
                   "query_covers_0": qi[0] <= 0 <= qi[1], "query_covers_threshold": qi[0] <= thr <= qi[1],
                   "mean_reaches_threshold": m >= thr}
            if len(self.groups) > 1:
                logo = []
                for mem in self.members:
                    drop = set(mem)
                    logo.append(seq_sum(d[i] for i in range(len(d)) if i not in drop) / (len(d) - len(drop)))
                exp["leave_one_group_out.min"], exp["leave_one_group_out.max"] = min(logo), max(logo)
            out[name] = exp
        return out

    @cached_property
    def method_means(self) -> dict[str, float]:
        return {m: mean(self.recomputed[q][f"{m}_{self.metric}"] for q in self.analysed) for m in METHODS}


# ------------------------------------------------------------------------------ the checks --
def check_manifest_hashes(v: RunView, au: Audit) -> None:
    for key in v.art:
        p = v.path(key)
        expected = v.art[key]["sha256"]
        if not p.exists():
            au.check("manifest_hashes", False, str(p), key, expected, "missing file")
            continue
        actual = sha256_of(p)
        au.check("manifest_hashes", actual == expected, str(p), key, expected, actual)


def pinned_role(files: dict, role: str) -> str:
    """The one data file a lock folder pins with ``role`` (qrels_dev / qrels_confirm: the study's qrels files)."""
    names = [n for n, pin in files.items() if pin.get("role") == role]
    if len(names) != 1:
        raise Unreadable("data_pins.json", f"must pin exactly one file with role {role!r}; it pins {names}")
    return names[0]


def check_lockfile_pins(v: RunView, au: Audit) -> None:
    data_pins = v.lock("data_pins.json")["files"]
    derived = v.lock("derived_pins.json")
    src = "qrels_confirm" if v.kind == "confirmation" else "qrels_dev"
    pin_of = {"corpus": "corpus.jsonl", "queries": "queries.jsonl", src: pinned_role(data_pins, src)}
    for key, pin_name in pin_of.items():
        found = v.art[key]["sha256"] if key in v.art else "not in the manifest"
        au.check("lockfile_pins", found == data_pins[pin_name]["sha256"], str(v.manifest_path), key,
                 data_pins[pin_name]["sha256"], found)
    for key, pin in (("split_dev", derived["splits"]["dev"]), ("split_confirm", derived["splits"]["confirm"])):
        found = v.art[key]["sha256"] if key in v.art else "not in the manifest"
        au.check("lockfile_pins", found == pin["sha256"], str(v.manifest_path), key, pin["sha256"], found)
        lock_list = v.lockdir / pin["path"]
        au.check("lockfile_pins", sha256_of(lock_list) == pin["sha256"], str(lock_list), key, pin["sha256"],
                 sha256_of(lock_list))
    found = v.art["candidates"]["sha256"] if "candidates" in v.art else "not in the manifest"
    au.check("lockfile_pins", found == derived["candidates"]["sha256"], str(v.manifest_path), "candidates",
             derived["candidates"]["sha256"], found)
    if v.kind == "confirmation":
        sha_file = v.lockdir / "protocol.sha256"
        frozen = sha_file.read_text(encoding="utf-8").split()[0]
        au.check("lockfile_pins", frozen == v.manifest.get("protocol_sha256"), str(sha_file), "frozen protocol",
                 frozen, v.manifest.get("protocol_sha256"))
        au.check("lockfile_pins", sha256_of(v.lockdir / "protocol.json") == frozen, str(v.lockdir / "protocol.json"),
                 "protocol.json sha256", frozen, sha256_of(v.lockdir / "protocol.json"))
    if v.scorer == "pinned":
        pinned = v.lock("model_pins.json")["cross_encoder"]["files"]["model.safetensors"]["sha256"]
        au.check("lockfile_pins", v.manifest["model_weights_sha256"] == pinned, str(v.manifest_path), "model weights",
                 pinned, v.manifest["model_weights_sha256"])


def check_analysed_queries(v: RunView, au: Audit) -> None:
    pool = v.split_confirm if v.kind == "confirmation" else v.split_dev
    n = v.settings["n_queries"] or len(pool)
    au.check("analysed_queries", v.analysed == pool[:n], str(v.path("run_queries")), "query list",
             f"first {n} of the pinned {v.kind} split",
             "same" if v.analysed == pool[:n] else f"{len(v.analysed)} other ids")


def check_candidates(v: RunView, au: Audit) -> None:
    f, depth = str(v.path("run_candidates")), v.settings["depth"]
    seen: dict[str, int] = {}
    for row in v.cand_rows:
        seen[row["qid"]] = seen.get(row["qid"], 0) + 1
        au.check("candidates", int(row["rank"]) == seen[row["qid"]], f, f"qid {row['qid']} doc {row['doc_id']}",
                 seen[row["qid"]], int(row["rank"]))
    au.check("candidates", list(v.cands) == v.analysed, f, "query set", len(v.analysed), len(v.cands))
    for q in v.analysed:
        lst = v.cands.get(q, [])
        au.check("candidates", len(lst) == depth, f, f"qid {q} list length", depth, len(lst))
        dups = sorted({d for d in lst if lst.count(d) > 1})
        au.check("candidates", not dups, f, f"qid {q} duplicate doc ids", [], dups)
        au.check("candidates", q in v.frozen and lst == v.frozen[q][:depth], f, f"qid {q} vs frozen top-{depth}",
                 v.frozen.get(q, [])[:depth], lst)


def check_pairs(v: RunView, au: Audit) -> None:
    f, max_len = str(v.path("pairs")), v.settings["max_length"]
    seen = set()
    for i, row in enumerate(v.pair_rows, start=2):
        q, d = row["qid"], row["doc_id"]
        item = f"qid {q} doc {d} (line {i})"
        au.check("pairs", (q, d) not in seen, f, item, "one row per pair", "duplicate")
        seen.add((q, d))
        lst = v.cands.get(q, [])
        rank = lst.index(d) + 1 if d in lst else None
        au.check("pairs", rank is not None and int(row["r0"]) == rank, f, item, rank, row["r0"])
        au.check("pairs", (row["truncated"] == "true") == (int(row["total_tokens"]) > max_len), f, item,
                 f"truncated == total_tokens > {max_len}", f"{row['truncated']} with {row['total_tokens']}")
    for q in v.analysed:
        for d in v.cands.get(q, []):
            au.check("pairs", (q, d) in seen, f, f"qid {q} doc {d}", "a scored pair", "missing")
    # the batching rule, re-implemented from the recorded token counts: per query, the candidates sorted by
    # truncated joint token length min(total_tokens, max_length) descending, ties by rank ascending, cut into
    # consecutive chunks of ce.batch_size; a pair's batch number is its chunk's index
    size, by_query = v.config["ce"]["batch_size"], {}
    for row in v.pair_rows:
        by_query.setdefault(row["qid"], []).append(row)
    for q, rows in by_query.items():
        order = sorted(rows, key=lambda r: (-min(int(r["total_tokens"]), max_len), int(r["r0"])))
        for pos, row in enumerate(order):
            au.check("pairs", int(row["batch"]) == pos // size, f, f"qid {q} doc {row['doc_id']} batch",
                     f"{pos // size} (position {pos} of the token-length order, chunks of {size})", row["batch"])


def check_scorer_label(v: RunView, au: Audit) -> None:
    stand_in = v.scorer == STANDIN
    for i, row in enumerate(v.pair_rows, start=2):
        au.check("scorer_label", (STANDIN in row["model"]) == stand_in, str(v.path("pairs")),
                 f"qid {row['qid']} doc {row['doc_id']} (line {i})",
                 "STAND-IN label" if stand_in else "pinned model identity", row["model"][:60])


def check_rankings(v: RunView, au: Audit) -> None:
    """CE ranks and blend scores/ranks in rankings.tsv (checks 'ce_ranks' and 'blend')."""
    v.orders  # noqa: B018 - computes r1 / blend_score / blend_rank
    f, seen = str(v.path("rankings")), set()
    for row in read_table(v.path("rankings")):
        key = (row["qid"], row["doc_id"])
        seen.add(key)
        item = f"qid {key[0]} doc {key[1]}"
        if key not in v.blend_score:
            au.check("blend", False, f, item, "a pair of the run", "unknown pair")
            continue
        au.check("blend", float(row["logit"]) == v.logits[key[0]][key[1]], f, item + " logit",
                 v.logits[key[0]][key[1]], float(row["logit"]))
        au.check("ce_ranks", int(row["r1"]) == v.r1[key], f, item + " CE rank", v.r1[key], int(row["r1"]))
        au.check("blend", float(row["blend_score"]) == v.blend_score[key], f, item + " blend score",
                 v.blend_score[key], float(row["blend_score"]))
        au.check("blend", int(row["blend_rank"]) == v.blend_rank[key], f, item + " blend rank",
                 v.blend_rank[key], int(row["blend_rank"]))
    au.check("blend", seen == set(v.blend_score), f, "pair set", len(v.blend_score), len(seen))


def check_runs(v: RunView, au: Audit) -> None:
    for m, key in (("rrf", "run_rrf"), ("ce", "run_ce"), ("blend", "run_blend")):
        f, run = str(v.path(key)), read_run(v.path(key))
        au.check("runs", list(run) == v.analysed, f, "query order", len(v.analysed), len(run))
        for q in v.analysed:
            got = run.get(q, [])
            au.check("runs", [d for d, _, _ in got] == v.orders[m][q], f, f"qid {q} order", v.orders[m][q][:5],
                     [d for d, _, _ in got][:5])
            scores = [float(s) for _, _, s in got]
            ok = [r for _, r, _ in got] == list(range(1, len(got) + 1)) and all(a > b for a, b in zip(scores, scores[1:]))
            au.check("runs", ok, f, f"qid {q} ranks/scores", "ranks 1..n with strictly decreasing scores", "not so")


def check_qrels(v: RunView, au: Audit) -> None:
    f = str(v.path("run_qrels"))
    for q in v.analysed:
        src = v.source_qrels.get(q)
        au.check("qrels", src is not None and v.qrels.get(q) == src, f, f"qid {q}",
                 src if src is not None else "judgements in the pinned qrels file", v.qrels.get(q))
    au.check("qrels", set(v.qrels) <= set(v.analysed), f, "extra queries", [], sorted(set(v.qrels) - set(v.analysed)))


def check_per_query(v: RunView, au: Audit) -> None:
    f, rows = str(v.path("per_query")), v.per_query_rows
    au.check("per_query", [r["qid"] for r in rows] == v.analysed, f, "query rows",
             f"{len(v.analysed)} rows in analysed order",
             f"{len(rows)} rows; missing {sorted(set(v.analysed) - {r['qid'] for r in rows})[:5]}")
    by_q = {r["qid"]: r for r in rows}
    for q, rec in v.recomputed.items():
        row = by_q.get(q, {})
        for col, val in rec.items():
            found = row.get(col)
            if col.endswith("first_rel_rank"):
                ok = (found == "" and val is None) or (found not in ("", None) and int(found) == val)
            else:
                ok = found is not None and float(found) == val
            au.check("per_query", ok, f, f"qid {q} {col}", val, found)


def check_groups(v: RunView, au: Audit) -> None:
    width = max(3, len(str(len(v.groups))))
    expect = [(f"G{i + 1:0{width}d}", str(i), str(len(g)), q) for i, g in enumerate(v.groups) for q in g]
    got = [(r["group_id"], r["group_index"], r["group_size"], r["qid"]) for r in v.group_rows]
    first_diff = next((i for i, (a, b) in enumerate(zip(expect, got)) if a != b), min(len(expect), len(got)))
    au.check("groups", got == expect, str(v.path("groups")), "membership/order/sizes",
             expect[first_diff] if first_diff < len(expect) else None,
             got[first_diff] if first_diff < len(got) else None)
    gmeta = read_json(v.path("groups_meta"))
    au.check("groups", gmeta["groups"] == {f"G{i + 1:0{width}d}": g for i, g in enumerate(v.groups)},
             str(v.path("groups_meta")), "groups", len(v.groups), gmeta.get("n_groups"))


def check_settings(v: RunView, au: Audit) -> None:
    """Every setting the run says it used equals its anchor (committed config / frozen protocol)."""
    f = str(v.manifest_path)
    au.note("settings", f"anchor: {v.anchor_path}")
    for key in sorted(set(v.settings) | set(v.manifest_settings)):
        au.check("settings", v.manifest_settings.get(key, "missing") == v.settings.get(key, "missing"), f,
                 f"settings.{key} (anchor {v.anchor_path.name})", v.settings.get(key, "missing"),
                 v.manifest_settings.get(key, "missing"))


def check_bootstrap_indices(v: RunView, au: Audit) -> None:
    """Both index matrices are the draws of numpy's default_rng(seed), seed from the ANCHOR, reproduced here
    element by element: grouped integers(0, G, (B, G)) then query-level integers(0, n, (B, n))."""
    B, seed = v.settings["bootstrap_B"], v.settings["bootstrap_seed"]
    rng = DefaultRng(seed)
    for key, matrix, high in (("grouped_indices", v.grouped_idx, len(v.groups)),
                              ("query_indices", v.query_idx, len(v.analysed))):
        f = str(v.path(key))
        expected = rng.integers_matrix(high, B, high)
        au.check("bootstrap_indices", len(matrix) == B, f, "replicate count", B, len(matrix))
        for b, (row, want) in enumerate(zip(matrix, expected)):
            au.check("bootstrap_indices", row == want, f, f"replicate {b} (seed {seed})",
                     want[:8], row[:8] if row != want else "same")


def check_replicates(v: RunView, au: Audit) -> None:
    f, saved = str(v.path("replicates")), read_table(v.path("replicates"))
    B = v.settings["bootstrap_B"]
    au.check("replicates", len(saved) == B, f, "replicate count", B, len(saved))
    au.check("replicates", set(saved[0]) == {"replicate"} | set(v.replicates) if saved else False, f, "columns",
             sorted(v.replicates), sorted(saved[0]) if saved else "no rows")
    for col, vals in v.replicates.items():
        for b, (row, val) in enumerate(zip(saved, vals)):
            found = row.get(col)
            au.check("replicates", found is not None and float(found) == val, f, f"replicate {b} {col}", val, found)


# ---- summary.json: every number recomputed here (or taken from the anchor), nothing else accepted
PROSE_KEYS = frozenset({"generator", "estimator", "note", "definition", "assumption", "rule", "exploratory_test",
                        "formula"})
LIBRARY_P_KEYS = frozenset({"p", "p_holm", "p_bh"})  # the pipeline computes these with scipy / statsmodels
P_ULPS = 4  # stated bound: scipy's binomtest sums the tail in floating point (measured: <= 1 ulp from the exact value)


def sign_counts(d):
    return sum(x > 0 for x in d), sum(x < 0 for x in d)


def holm(ps):
    m, order = len(ps), sorted(range(len(ps)), key=lambda i: (ps[i], i))
    out, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        out[i] = running
    return out


def benjamini_hochberg(ps):
    m, order = len(ps), sorted(range(len(ps)), key=lambda i: (ps[i], i))
    out, running = [0.0] * m, 1.0
    for rank in range(m - 1, -1, -1):
        i = order[rank]
        running = min(running, ps[i] * m / (rank + 1))
        out[i] = min(1.0, running)
    return out


def chance_hit(n_cand: int, m: int, k: int) -> float:
    from fractions import Fraction
    if m == 0:
        return 0.0
    k = min(k, n_cand)
    return float(1 - Fraction(math.comb(n_cand - m, k), math.comb(n_cand, k)))


def slice_of(family: str, n_rel: int, in_c: int) -> str:
    if family == "relevant_count":
        return "one" if n_rel == 1 else "several"
    if family == "candidate_coverage":
        return "all" if in_c == n_rel else ("none" if in_c == 0 else "partly")
    raise ValueError(f"slice family {family!r} is not defined in the audit")


def expected_evalstats(v: RunView, summary_comparisons: dict) -> dict:
    st, rc, metric, qids = v.settings, v.recomputed, v.metric, v.analysed
    ev, n, depth = st["evalstats"], len(qids), st["depth"]
    multi = {q for g in v.groups if len(g) > 1 for q in g}
    group_of = {q: i for i, g in enumerate(v.groups) for q in g}
    succ = {m: [rc[q][f"{m}_first_rel_rank"] == 1 for q in qids] for m in METHODS}
    mc = {}
    for name, (a, b) in v.comparisons.items():
        x, y = succ[a], succ[b]
        gained = sum(1 for i in range(n) if x[i] and not y[i])
        lost = sum(1 for i in range(n) if y[i] and not x[i])
        disc = [qids[i] for i in range(n) if x[i] != y[i]]
        mc[name] = {"gained": gained, "lost": lost, "unchanged": n - gained - lost,
                    "both_yes": sum(1 for i in range(n) if x[i] and y[i]),
                    "both_no": sum(1 for i in range(n) if not x[i] and not y[i]), "p": exact_mcnemar(gained, lost),
                    "discordant_in_multi_query_groups": sum(1 for q in disc if q in multi),
                    "discordant_groups": len({group_of[q] for q in disc})}
    counts = {q: (sum(1 for g in v.qrels[q].values() if g > 0), sum(1 for d in v.cands[q] if v.qrels[q].get(d, 0) > 0))
              for q in qids}
    k = ev["chance_k"]
    chance = {"k": k, "candidates_per_query": depth,
              "mean_chance_success": mean(chance_hit(depth, counts[q][1], k) for q in qids),
              "mean_chance_recall": mean(min(k, depth) / depth * counts[q][1] / counts[q][0] for q in qids),
              "observed_success": {m: sum(1 for q in qids if rc[q][f"{m}_first_rel_rank"] is not None
                                          and rc[q][f"{m}_first_rel_rank"] <= k) / n for m in METHODS},
              "queries_without_relevant_candidate": sum(1 for q in qids if counts[q][1] == 0)}
    slices = {}
    for family, weights in ev["slices"].items():
        members = {s_: [q for q in qids if slice_of(family, *counts[q]) == s_] for s_ in weights}
        fam = {"slices": {}, "raw_mean": {}, "declared_weight_mean": {}}
        for s_, qs in members.items():
            fam["slices"][s_] = {"n": len(qs), "weight": weights[s_], "population_share": len(qs) / n,
                                 "means": {m: (mean(rc[q][f"{m}_{metric}"] for q in qs) if qs else None)
                                           for m in METHODS}}
        for m in METHODS:
            fam["raw_mean"][m] = mean(rc[q][f"{m}_{metric}"] for q in qids)
            total = 0.0
            for s_ in sorted(weights):
                if weights[s_] == 0:
                    continue
                if fam["slices"][s_]["means"][m] is None:
                    total = None
                    break
                total += weights[s_] * fam["slices"][s_]["means"][m]
            fam["declared_weight_mean"][m] = total
        slices[family] = fam
    guard = {name: {"tolerated_loss": loss, "grouped_lower": summary_comparisons[name]["grouped_interval"][0],
                    "mean": summary_comparisons[name]["mean"],
                    "pass": summary_comparisons[name]["grouped_interval"][0] >= -loss}
             for name, loss in ev["guardrails"].items()}
    explo = []
    for family in ev["exploratory"]["families"]:
        for s_ in ev["slices"][family]:
            qs = [q for q in qids if slice_of(family, *counts[q]) == s_]
            for name in ev["exploratory"]["comparisons"]:
                a, b = v.comparisons[name]
                d = [rc[q][f"{a}_{metric}"] - rc[q][f"{b}_{metric}"] for q in qs]
                w, l = sign_counts(d)
                explo.append({"family": family, "slice": s_, "comparison": name, "n": len(qs),
                              "mean_delta": mean(d) if d else None, "wins": w, "losses": l, "ties": len(d) - w - l,
                              "p": exact_mcnemar(w, l) if d else None})
    tested = [e for e in explo if e["p"] is not None]
    for e in explo:
        e["p_holm"] = e["p_bh"] = None
    for e, h, q in zip(tested, holm([e["p"] for e in tested]), benjamini_hochberg([e["p"] for e in tested])):
        e["p_holm"], e["p_bh"] = h, q
    out = {"mcnemar": {"outcome": ev["binary_outcome"], "comparisons": mc}, "chance": chance, "slices": slices,
           "plan": {"primary": {"comparison": st["comparisons"]["primary"], "metric": metric},
                    "guardrails": guard, "exploratory": explo}}
    pw = ev["power"]
    if len(v.groups) >= 2:
        from statistics import NormalDist
        d = v.deltas[st["comparisons"]["primary"]]
        g_count, dbar = len(v.members), math.fsum(d) / n
        resid = [math.fsum(d[i] for i in mem) - len(mem) * dbar for mem in v.members]
        var = g_count / (g_count - 1) * math.fsum(r * r for r in resid) / n ** 2
        sd = math.sqrt(n * var)
        z = NormalDist().inv_cdf(1 - pw["alpha"] / 2) + NormalDist().inv_cdf(pw["power"])
        out["power"] = {"alpha": pw["alpha"], "power": pw["power"], "n_development": n,
                        "n_confirmation": pw["confirm_n"], "grouped_variance_of_mean": var, "sd_eff": sd,
                        "mde_confirmation": z * sd / math.sqrt(pw["confirm_n"])}
    else:
        out["power"] = None
    return out


def expected_summary(v: RunView) -> dict:
    """summary.json as the definitions and the anchor say it must be (prose fields excepted)."""
    st, rc, metric, qids = v.settings, v.recomputed, v.metric, v.analysed
    ms = st["metrics"]
    others = ([f"recall@{k}" for k in ms["recall_ks"]] + [f"capped_recall@{k}" for k in ms["recall_ks"]]
              + [f"mrr@{ms['mrr_k']}"])
    hist: dict[str, int] = {}
    for g in sorted(v.groups, key=len):
        hist[str(len(g))] = hist.get(str(len(g)), 0) + 1
    width = max(3, len(str(len(v.groups))))
    comps = {}
    for name, (a, b) in v.comparisons.items():
        exp = dict(v.expected_comparisons[name])
        logo = None
        if "leave_one_group_out.min" in exp:
            d = v.deltas[name]
            vals = [seq_sum(d[i] for i in range(len(d)) if i not in set(mem)) / (len(d) - len(mem))
                    for mem in v.members]
            logo = {"min": min(vals), "max": max(vals), "min_group": f"G{vals.index(min(vals)) + 1:0{width}d}",
                    "max_group": f"G{vals.index(max(vals)) + 1:0{width}d}"}
        exp.pop("leave_one_group_out.min", None)
        exp.pop("leave_one_group_out.max", None)
        comps[name] = {"a": a, "b": b, **exp, "leave_one_group_out": logo}
    primary = st["comparisons"]["primary"]
    a, b = v.comparisons[primary]
    d = v.deltas[primary]
    worst = [{"qid": qids[i], "delta": d[i], f"{a}_{metric}": rc[qids[i]][f"{a}_{metric}"],
              f"{b}_{metric}": rc[qids[i]][f"{b}_{metric}"],
              f"{a}_first_rel_rank": rc[qids[i]][f"{a}_first_rel_rank"],
              f"{b}_first_rel_rank": rc[qids[i]][f"{b}_first_rel_rank"]}
             for i in sorted(range(len(d)), key=lambda i: (d[i], i))[:3]]
    ce_loss = [q for q in qids if rc[q][f"ce_{metric}"] < rc[q][f"rrf_{metric}"]]
    ce_win = [q for q in qids if rc[q][f"ce_{metric}"] > rc[q][f"rrf_{metric}"]]
    out = {
        "metric": metric, "n_queries": len(qids), "n_groups": len(v.groups),
        "group_size_histogram": dict(sorted(hist.items(), key=lambda kv: int(kv[0]))),
        "bootstrap": {"B": st["bootstrap_B"], "seed": st["bootstrap_seed"], "percentiles": st["percentiles"]},
        "threshold": st["threshold"], "primary": primary,
        "methods": {m: {"mean": v.method_means[m], **{f"mean_{x}": mean(rc[q][f"{m}_{x}"] for q in qids)
                                                      for x in others}} for m in METHODS},
        "comparisons": comps, "worst_primary": worst,
        "repair": {"ce_losses_vs_rrf": len(ce_loss),
                   "repaired_by_blend": sum(rc[q][f"blend_{metric}"] > rc[q][f"ce_{metric}"] for q in ce_loss),
                   "ce_wins_vs_rrf": len(ce_win),
                   "weakened_by_blend": sum(rc[q][f"blend_{metric}"] < rc[q][f"ce_{metric}"] for q in ce_win)},
        "scorer": v.scorer,
        "inputs": {"per_query_sha256": v.art["per_query"]["sha256"], "groups_sha256": v.art["groups"]["sha256"]},
        "comparisons_definition": {k: f"{x} - {y} (per-query {metric})" for k, (x, y) in v.comparisons.items()},
    }
    out["evalstats"] = expected_evalstats(v, comps)
    return out


def compare_tree(au: Audit, f: str, found, want, path: str) -> None:
    """Every leaf of summary.json must equal the recomputed one (p-values within P_REL_TOL); a missing
    section fails; a number the audit does not know fails ('not audited'); only prose is exempt."""
    check = "evalstats" if path.startswith("evalstats") else "summary"
    if isinstance(want, dict):
        if not isinstance(found, dict):
            au.check(check, False, f, path or "summary", "a section", found if found is None else type(found).__name__)
            return
        for key in sorted(set(found) | set(want)):
            sub = f"{path}.{key}" if path else key
            if key in PROSE_KEYS and key not in want:
                continue
            if key not in want:
                au.check(check, False, f, sub, "nothing (not a number the audit recomputes)", found[key])
            elif key not in found:
                au.check(check, False, f, sub, want[key], "missing")
            else:
                compare_tree(au, f, found[key], want[key], sub)
    elif path.endswith("plan.exploratory") and isinstance(want, list):
        # one entry per (family, slice, comparison); their list order follows the config's mapping order,
        # which the audit's anchor (e.g. a canonical-JSON protocol) need not share: compare by name
        def keyed(entries):
            return {f"{e.get('family')}/{e.get('slice')}/{e.get('comparison')}": e for e in entries}
        found_k = keyed(found) if isinstance(found, list) else found
        au.check(check, isinstance(found, list) and len(found) == len(want), f, f"{path} entries", len(want),
                 len(found) if isinstance(found, list) else found)
        compare_tree(au, f, found_k, keyed(want), path + "{by family/slice/comparison}")
    elif isinstance(want, list) and want and isinstance(want[0], dict):
        au.check(check, isinstance(found, list) and len(found) == len(want), f, f"{path} entries", len(want),
                 len(found) if isinstance(found, list) else found)
        for i, (x, y) in enumerate(zip(found if isinstance(found, list) else [], want)):
            compare_tree(au, f, x, y, f"{path}[{i}]")
    elif path.rsplit(".", 1)[-1] in LIBRARY_P_KEYS and isinstance(want, float) and isinstance(found, float):
        au.check(check, abs(found - want) <= P_ULPS * math.ulp(max(abs(found), abs(want))), f, path, want, found)
    else:
        same = found == want and type(found) is type(want) or (isinstance(found, (int, float)) and
                                                               not isinstance(found, bool) and
                                                               isinstance(want, (int, float)) and
                                                               not isinstance(want, bool) and found == want)
        au.check(check, same, f, path, want, found)


def check_summary(v: RunView, au: Audit) -> None:
    compare_tree(au, str(v.path("summary")), v.summary, expected_summary(v), "")


def check_verification(v: RunView, au: Audit) -> None:
    """The re-inference record exists, covers exactly the batches the seed names (sample rule
    re-implemented here), and every re-inferred logit equals pairs.tsv bit for bit."""
    f = str(v.path("verification"))
    rec = read_json(v.path("verification"))
    seed, k = v.settings["verify_seed"], v.settings["verify_batches"]
    batches = sorted({(r["qid"], int(r["batch"])) for r in v.pair_rows},
                     key=lambda qb: hashlib.sha256(f"{seed}\t{qb[0]}\t{qb[1]}".encode("utf-8")).hexdigest())
    sample = batches if k is None or k >= len(batches) else batches[:k]
    au.check("verification", [tuple(x) for x in rec["sample"]] == sample, f, f"sample (seed {seed}, k {k})",
             [list(x) for x in sample], rec["sample"])
    recorded = {(r["qid"], r["doc_id"]): (int(r["batch"]), r["logit"]) for r in v.pair_rows}
    wanted = {(q, d) for (q, d), (b, _) in recorded.items() if (q, b) in set(sample)}
    got = {(p["qid"], p["doc_id"]): p for p in rec["pairs"]}
    au.check("verification", set(got) == wanted, f, "re-inferred pairs", f"{len(wanted)} pairs of the sampled batches",
             f"{len(got)} pairs")
    for key in sorted(wanted & set(got)):
        p, (batch, logit) = got[key], recorded[key]
        ok = (p["batch"] == batch and p["reinferred_batch"] == batch and p["equal"] is True
              and p["reinferred_logit"] is not None and float(p["reinferred_logit"]) == float(logit)
              and float(p["logit"]) == float(logit))
        au.check("verification", ok, f, f"qid {key[0]} doc {key[1]} batch {batch}", logit,
                 p.get("reinferred_logit"))
    au.check("verification", rec["all_equal"] is True, f, "all_equal", True, rec["all_equal"])


def check_shape(v: RunView, au: Audit) -> None:
    """The shape check was done on the first query's first pairs, padded to max_length, and found the
    pinned architecture's shapes: input_ids [n, L], last hidden [n, L, hidden], logits [n, num_labels]."""
    f, sc = str(v.path("shape_check")), read_json(v.path("shape_check"))
    arch = v.lock("model_pins.json")["cross_encoder"]["architecture"]
    first = v.analysed[0]
    n, length = min(v.config["ce"]["shape_check_pairs"], len(v.cands[first])), v.settings["max_length"]
    want = {"input_ids": [n, length], "last_hidden_state": [n, length, arch["hidden_size"]],
            "logits": [n, arch["num_labels"]],
            "hidden_size": arch["hidden_size"], "pairs": n, "ok": True, "qid": first, "doc_ids": v.cands[first][:n]}
    for key, val in want.items():
        au.check("shape_check", sc.get(key) == val, f, key, val, sc.get(key))


def check_trec_candidates(v: RunView, au: Audit) -> None:
    """A TREC-run table (study.candidates: trec) is the committed run file's top ``depth`` per query in
    trec_eval's order (score descending, ties by document id string descending), the score kept as the
    run's text; the run file is the pinned one."""
    f, pin = str(v.path("candidates")), v.lock("derived_pins.json")["candidates"]
    run_path = v.lockdir / pin["provenance"]["run_file"]
    au.check("frozen_candidates", sha256_of(run_path) == pin["provenance"]["run_sha256"], str(run_path),
             "TREC run sha256", pin["provenance"]["run_sha256"], sha256_of(run_path))
    lines: dict[str, dict[str, str]] = {}
    for line in run_path.read_text(encoding="utf-8").splitlines():
        q, _q0, d, _r, score, _tag = line.split()
        lines.setdefault(q, {})[d] = score
    by_q: dict[str, list[dict]] = {}
    for row in read_table(v.path("candidates")):
        by_q.setdefault(row["qid"], []).append(row)
    depth = pin["params"]["depth"]
    for q, rows in by_q.items():
        run = lines.get(q, {})
        order = tie_rule_order({d: float(sc) for d, sc in run.items()})[:depth]
        got = [r["doc_id"] for r in sorted(rows, key=lambda r: int(r["rank"]))]
        au.check("frozen_candidates", got == order, f, f"qid {q} rank order (the run's)", order[:5], got[:5])
        for r in rows:
            au.check("frozen_candidates", run.get(r["doc_id"]) == r["run_score"], f,
                     f"qid {q} doc {r['doc_id']} run_score", run.get(r["doc_id"]), r["run_score"])


def check_frozen_candidates(v: RunView, au: Audit) -> None:
    """The frozen table's r0 order is its RRF order: rrf_score = 1/(k + bm25_rank) + 1/(k + dense_rank)
    (a term only for a list holding the document, added in that order from 0.0) and ranks follow score
    descending, ties by document id string descending; k from the candidates' pin."""
    if v.lock("derived_pins.json")["candidates"].get("source") == "trec":
        return check_trec_candidates(v, au)
    f = str(v.path("candidates"))
    k = v.lock("derived_pins.json")["candidates"]["params"]["rrf_k"]
    by_q: dict[str, list[dict]] = {}
    for row in read_table(v.path("candidates")):
        by_q.setdefault(row["qid"], []).append(row)
    for q, rows in by_q.items():
        scores = {}
        for r in rows:
            s = 0.0
            for col in ("bm25_rank", "dense_rank"):
                if r[col]:
                    s += 1.0 / (k + int(r[col]))
            scores[r["doc_id"]] = s
            au.check("frozen_candidates", float(r["rrf_score"]) == s, f, f"qid {q} doc {r['doc_id']} rrf_score", s,
                     r["rrf_score"])
        order = tie_rule_order(scores)
        got = [r["doc_id"] for r in sorted(rows, key=lambda r: int(r["rank"]))]
        ranks_ok = sorted(int(r["rank"]) for r in rows) == list(range(1, len(rows) + 1))
        au.check("frozen_candidates", ranks_ok and got == order, f, f"qid {q} rank order", order[:5], got[:5])


def check_report(v: RunView, au: Audit) -> None:
    """The methods and comparison tables of report.md show the recomputed numbers (6 decimals); the
    cells are found by their column headers."""
    f = str(v.path("report"))
    methods = next((t for t in v.report_tables if t and "method" in t[0] and any(k.startswith("mean ndcg") for k in t[0])),
                   None)
    comps = next((t for t in v.report_tables if t and "comparison" in t[0] and "W/T/L" in t[0]), None)
    au.check("report", methods is not None and comps is not None, f, "methods and comparisons tables",
             "both present", [methods is not None, comps is not None])
    if methods is None or comps is None:
        return
    mean_col = f"mean {v.metric}"
    by_method = {r["method"]: r for r in methods}
    for m, val in v.method_means.items():
        found = by_method.get(m, {}).get(mean_col)
        au.check("report", found == f"{val:.6f}", f, f"method {m} mean", f"{val:.6f}", found)
    by_name = {r["comparison"].replace(" (primary)", ""): r for r in comps}
    header = list(comps[0])
    col = {"grouped": next(h for h in header if h.startswith("grouped ") and h.endswith("interval")),
           "query": next(h for h in header if h.startswith("query-level ") and h.endswith("interval")),
           "logo": next(h for h in header if h.startswith("leave-one-group-out"))}
    for name, exp in v.expected_comparisons.items():
        row = by_name.get(name)
        if row is None:
            au.check("report", False, f, f"{name} row", "a comparison row", "missing")
            continue
        want = {"mean Δ": f"{exp['mean']:.6f}",
                col["grouped"]: f"[{exp['grouped_interval'][0]:.6f}, {exp['grouped_interval'][1]:.6f}]",
                col["query"]: f"[{exp['query_interval'][0]:.6f}, {exp['query_interval'][1]:.6f}]",
                "W/T/L": f"{exp['wins']}/{exp['ties']}/{exp['losses']}"}
        if "leave_one_group_out.min" in exp:
            want[col["logo"]] = f"{exp['leave_one_group_out.min']:.6f} … {exp['leave_one_group_out.max']:.6f}"
        for header_name, text in want.items():
            au.check("report", row.get(header_name) == text, f, f"{name} {header_name}", text, row.get(header_name))


def check_seal(v: RunView, au: Audit) -> None:
    confirm_ids = set(v.split_confirm)
    if v.kind == "confirmation":
        au.note("seal", "confirmation run: every analysed query must be a confirmation query")
        au.check("seal", set(v.analysed) <= confirm_ids, str(v.path("run_queries")), "analysed queries",
                 "confirmation ids only", sorted(set(v.analysed) - confirm_ids)[:5])
        return
    tables = {"run_queries": v.analysed, "run_candidates": list(v.cands), "pairs": list(v.logits),
              "run_qrels": list(v.qrels), "per_query": [r["qid"] for r in v.per_query_rows],
              "groups": [r["qid"] for r in v.group_rows],
              "rankings": [r["qid"] for r in read_table(v.path("rankings"))],
              "summary worst_primary": [w["qid"] for w in v.summary["worst_primary"]]}
    for key in ("run_rrf", "run_ce", "run_blend"):
        tables[key] = list(read_run(v.path(key)))
    for name, ids in tables.items():
        leaked = sorted(set(ids) & confirm_ids)
        au.check("seal", not leaked, name, "query ids", "no confirmation query id", leaked[:10])


def check_protocol(v: RunView, au: Audit) -> None:
    """A confirmation run against its FROZEN protocol (lockdir/protocol.json, the one the manifest names),
    not against lockfiles that may have been re-pinned since: every data/split/candidate/model pin and the
    method hash (its settings: check_settings, anchored to the same protocol)."""
    if v.kind != "confirmation":
        au.note("protocol", "development run: no frozen protocol applies")
        return
    path = v.lockdir / "protocol.json"
    f = str(path)
    au.check("protocol", sha256_of(path) == v.manifest.get("protocol_sha256"), f, "protocol.json sha256",
             v.manifest.get("protocol_sha256"), sha256_of(path))
    p = read_json(path)  # its settings are checked by check_settings (the protocol is the anchor)
    pins = {"corpus": p["data"]["corpus.jsonl"]["sha256"], "queries": p["data"]["queries.jsonl"]["sha256"],
            "qrels_confirm": p["data"][pinned_role(p["data"], "qrels_confirm")]["sha256"], "split_dev": p["splits"]["dev"]["sha256"],
            "split_confirm": p["splits"]["confirm"]["sha256"], "candidates": p["candidates"]["sha256"]}
    for key, pin in pins.items():
        found = v.art[key]["sha256"] if key in v.art else "not in the manifest"
        au.check("protocol", found == pin, str(v.manifest_path), f"pin {key}", pin, found)
    scorer = "pinned" if p["model"]["scorer"] == "pinned" else STANDIN
    au.check("protocol", v.scorer == scorer, str(v.manifest_path), "scorer", scorer, v.scorer)
    if scorer == "pinned":
        weights = p["model"]["files_sha256"]["model.safetensors"]
        au.check("protocol", v.manifest.get("model_weights_sha256") == weights, str(v.manifest_path), "model weights",
                 weights, v.manifest.get("model_weights_sha256"))
    method = p.get("method", {}).get("sha256")
    au.check("protocol", v.manifest.get("method_sha256") == method, str(v.manifest_path), "method sha256", method,
             v.manifest.get("method_sha256"))


CHECKS = (
    ("settings", check_settings), ("manifest_hashes", check_manifest_hashes), ("lockfile_pins", check_lockfile_pins),
    ("analysed_queries", check_analysed_queries), ("candidates", check_candidates), ("pairs", check_pairs),
    ("scorer_label", check_scorer_label), ("blend", check_rankings), ("runs", check_runs), ("qrels", check_qrels),
    ("per_query", check_per_query), ("groups", check_groups), ("bootstrap_indices", check_bootstrap_indices),
    ("replicates", check_replicates), ("summary", check_summary), ("verification", check_verification),
    ("shape_check", check_shape), ("frozen_candidates", check_frozen_candidates),
    ("report", check_report), ("seal", check_seal), ("protocol", check_protocol),
)


def audit_run(rundir: Path, lockdir: Path | None, au: Audit, config_anchor: Path = DEFAULT_CONFIG,
              study_anchor: Path | None = None) -> dict:
    t0 = time.perf_counter()
    v = RunView(rundir, lockdir, config_anchor, study_anchor)
    for name, fn in CHECKS:
        au.run(name, fn, v)
    info = {"run": v.manifest.get("run"), "kind": v.kind, "scorer": v.scorer,
            "anchor": {"config": str(config_anchor), "config_sha256": sha256_of(config_anchor),
                       **({"study_file": str(study_anchor), "study_file_sha256": sha256_of(study_anchor)}
                          if study_anchor else {})},
            "manifest_sha256": sha256_of(v.manifest_path)}  # which manifest this audit vouches for
    for key, fn in (("queries", lambda: len(v.analysed)), ("pairs", lambda: len(v.pair_rows)),
                    ("groups", lambda: len(v.groups)), ("replicates", lambda: v.settings["bootstrap_B"])):
        try:
            info[key] = fn()
        except Exception:  # noqa: BLE001 - the failing check has already said why
            info[key] = None
    info["seconds"] = round(time.perf_counter() - t0, 3)
    return info


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rundir", type=Path)
    ap.add_argument("--lockdir", type=Path, default=None, help="lockfile folder (default: the manifest's)")
    ap.add_argument("--out", type=Path, default=None, help="where to write audit.json (default: RUNDIR/audit.json)")
    ap.add_argument("--config", type=Path, default=DEFAULT_CONFIG,
                    help="the committed config a development run is anchored to (default: this checkout's "
                         "config/config.yaml); a confirmation opening is anchored to <lockdir>/protocol.json")
    ap.add_argument("--study", type=Path, default=None,
                    help="another study: its name (config/studies/<name>.yaml) or its study file; the file's values over "
                         "the committed config are the development run's anchor (a run of a study needs it: the "
                         "DAG's audit rule passes it)")
    args = ap.parse_args(argv)
    if args.study is not None and not args.study.suffix in (".yaml", ".yml"):
        args.study = DEFAULT_CONFIG.parent / "studies" / f"{args.study}.yaml"  # a study's name
    if args.study is not None and not args.study.is_file():
        ap.error(f"--study {args.study}: no such study file")
    au = Audit()
    try:
        info = audit_run(args.rundir, args.lockdir, au, args.config, args.study)
    except Unauditable as exc:
        print(f"AUDIT ERROR: {args.rundir} cannot be audited: {exc}", file=sys.stderr)
        return 2
    failed = au.failed
    result = {"ok": not failed, "failed_checks": failed, "info": info,
              "float_comparison": "exact (same documented summation order on both sides)",
              "checks": {n: {"checked": c["checked"], "failures": len(c["failures"]),
                             "first_failures": c["failures"][:MAX_FAILURES_SHOWN], **({"note": c["note"]} if "note" in c else {})}
                         for n, c in au.checks.items()}}
    out = args.out or (args.rundir / "audit.json")
    tmp = out.with_name(f".{out.name}.partial")
    tmp.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(out)
    print(f"audit of {args.rundir} ({info['kind']}, scorer {info['scorer']}): {info['queries']} queries, "
          f"{info['pairs']} pairs, {info['groups']} groups, B={info['replicates']}, {info['seconds']} s")
    print(f"{'check':<20} {'checked':>9} {'failed':>7}")
    for n, c in au.checks.items():
        print(f"{n:<20} {c['checked']:>9} {len(c['failures']):>7}")
    if failed:
        print("\nFAILED CHECKS:")
        for n in failed:
            for fl in au.checks[n]["failures"][:MAX_FAILURES_SHOWN]:
                print(f"  [{n}] {fl['file']} :: {fl['item']} :: expected {fl['expected']!r} found {fl['found']!r}")
            extra = len(au.checks[n]["failures"]) - MAX_FAILURES_SHOWN
            if extra > 0:
                print(f"  [{n}] ... and {extra} more")
        print(f"AUDIT FAILED: {', '.join(failed)}")
        return 1
    print("AUDIT PASSED: every check agrees")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
