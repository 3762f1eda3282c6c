"""The scoring process's numeric mode and memory behaviour, set by construction and verified.

Why (measured on the reference machine kind, AMD EPYC, AVX2, torch 2.13.0+cpu with oneMKL 2024.2):
every ``nn.Linear`` and attention matrix product of the cross-encoder runs in oneMKL SGEMM. In
MKL's default mode (conditional numerical reproducibility OFF) MKL promises neither deterministic
reductions nor the same kernel for every thread count, and indeed a 10-row batch scored at 2
threads differs from 4 threads in the last bit of 9 of 50 logits (docs/scoring.md).
oneMKL's *strict CNR mode* (``MKL_CBWR=AUTO,STRICT``) documents bitwise-reproducible ``?gemm``
results on its AVX2 / AVX-512 code branches "even when the number of threads changes", and the
reproducibility conditions ask for ``MKL_DYNAMIC=FALSE`` and ``OMP_DYNAMIC=FALSE`` (Intel oneMKL
Developer Guide for Linux, "Reproducibility Conditions"). Under that mode the logits measured
here are the same bits at 1, 2 and 4 threads (150 logits: the smoke batches whose 9 logits move
between 2 and 4 threads in the default mode, and 16-row token-sorted dev batches; and the stress
benchmark, scripts/bench.py stress, at 1-4 threads); the thread count is then a speed setting.

MKL reads ``MKL_CBWR`` once, at its first call: the mode must be in the environment before the
process's first matrix product. ``configure_process`` sets it (a scoring script calls it before
it imports torch); ``enforce_cnr`` then asks MKL itself which mode it runs (``mkl_serv_cbwr_get``,
exported by torch's bundled MKL), switches it on if MKL has not computed anything yet, and stops
the run otherwise. The mode is recorded in the measurements and is part of the score-cache key
(OFF and AUTO give different bits).

Memory: glibc raises its mmap threshold dynamically when a large block is freed, so after a few
batches the 10-50 MB activation tensors come from the heap, which fragments and grows (seen:
1.1-1.24 GiB peak for 5000 pairs). A FIXED threshold of 256 KiB (``mallopt(M_MMAP_THRESHOLD)``,
which also disables the dynamic adjustment) returns every large tensor to the system when it is
freed; ``malloc_trim`` after each query gives back the small-block slack.

Nothing here imports torch at module import.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

from ..core.errors import PipelineError

# The process environment of scoring. MKL_CBWR value names: AUTO = the ISA branch MKL would pick
# anyway, with fixed cache sizes, deterministic reductions and static scheduling; STRICT = bitwise
# results independent of the thread count for ?gemm on AVX2/AVX-512 branches.
CNR_ENV = {"MKL_CBWR": "AUTO,STRICT", "MKL_DYNAMIC": "FALSE", "OMP_DYNAMIC": "FALSE"}
# mkl.h: MKL_CBWR_BRANCH_OFF 1, AUTO 2, COMPATIBLE 3, ...; MKL_CBWR_STRICT 0x10000; MKL_CBWR_ALL ~0
CBWR_BRANCHES = {0: "OFF", 1: "OFF", 2: "AUTO", 3: "COMPATIBLE", 4: "SSE2", 6: "SSSE3", 7: "SSE4_2",
                 8: "SSE4_2", 9: "AVX", 10: "AVX2", 11: "AVX512_MIC", 12: "AVX512", 13: "AVX512_MIC_E1",
                 14: "AVX512_E1"}
CBWR_STRICT = 0x10000
CBWR_ALL = -1
CBWR_SUCCESS = 0
WANTED_CNR = 2 | CBWR_STRICT  # AUTO,STRICT, as MKL reports it
M_MMAP_THRESHOLD = -3  # glibc malloc.h
MMAP_THRESHOLD_BYTES = 256 * 1024


class NumericModeError(PipelineError):
    """The scoring process does not run in the documented numeric mode."""


def cnr_name(code: int | None) -> str:
    """MKL's CNR code as text, e.g. ``AUTO,STRICT`` (``None``: MKL absent or not queryable)."""
    if code is None:
        return "unknown"
    name = CBWR_BRANCHES.get(code & ~CBWR_STRICT & 0xFFFF, f"code {code & 0xFFFF}")
    return name + (",STRICT" if code & CBWR_STRICT else "")


def configure_process(environ=None) -> dict:
    """Call at the top of a scoring process BEFORE torch is imported: put the CNR mode into the
    environment (MKL reads it at its first call) and fix glibc's mmap threshold. Returns what was
    set, to be recorded. Values already in the environment that differ are overwritten: the mode
    is part of the scoring contract, not a user preference."""
    environ = os.environ if environ is None else environ
    environ.update(CNR_ENV)  # if torch is already imported this still counts until MKL's first call
    return {"env": dict(CNR_ENV), "mmap_threshold_bytes": fix_mmap_threshold()}


def fix_mmap_threshold(nbytes: int = MMAP_THRESHOLD_BYTES) -> int | None:
    """glibc ``mallopt(M_MMAP_THRESHOLD, nbytes)``: blocks of ``nbytes`` or more are mmapped and given
    back on free. Returns ``nbytes``, or None where glibc is absent (then nothing changes)."""
    libc = _libc()
    if libc is None or not hasattr(libc, "mallopt"):
        return None
    return nbytes if libc.mallopt(M_MMAP_THRESHOLD, int(nbytes)) == 1 else None


def malloc_trim() -> None:
    """Give free heap memory back to the system (glibc ``malloc_trim(0)``; no-op elsewhere)."""
    libc = _libc()
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)


def _libc():
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name) if name else None
    except OSError:
        return None


def _mkl_service():
    """(get, set) of torch's bundled oneMKL service layer, or None when torch has no MKL."""
    import torch

    if not torch.backends.mkl.is_available():
        return None
    lib = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))
    try:
        get, put = lib.mkl_serv_cbwr_get, lib.mkl_serv_cbwr_set
    except AttributeError:
        return None
    get.restype, get.argtypes = ctypes.c_int, [ctypes.c_int]
    put.restype, put.argtypes = ctypes.c_int, [ctypes.c_int]
    return get, put


def mkl_cnr_mode() -> int | None:
    """The CNR mode MKL reports for itself (``mkl_serv_cbwr_get(MKL_CBWR_ALL)``), or None."""
    svc = _mkl_service()
    return None if svc is None else svc[0](CBWR_ALL)


def enforce_cnr() -> dict:
    """Make sure MKL runs in strict CNR mode (AUTO,STRICT) and say so from MKL's own report.

    If MKL is in another mode and has not computed yet, it is switched (``mkl_serv_cbwr_set``); if it
    has already computed in another mode, MKL refuses the change and the run stops: scores computed
    in that process would not be the contract's bits."""
    svc = _mkl_service()
    if svc is None:
        raise NumericModeError(
            "NUMERIC MODE UNKNOWN: this torch build has no queryable oneMKL "
            "(torch.backends.mkl.is_available() is False, or mkl_serv_cbwr_get is not exported). The scoring "
            "contract (docs/scoring.md) was established with torch 2.13.0's bundled oneMKL in strict CNR "
            "mode; install torch as lockfiles/torch.txt says.")
    get, put = svc
    before = get(CBWR_ALL)
    if before != WANTED_CNR:
        status = put(WANTED_CNR)
        if status != CBWR_SUCCESS or get(CBWR_ALL) != WANTED_CNR:
            raise NumericModeError(
                f"NUMERIC MODE: oneMKL runs in CNR mode {cnr_name(before)} (expected {cnr_name(WANTED_CNR)}) "
                f"and refused to switch (mkl_serv_cbwr_set returned {status}: MKL has already computed in "
                "this process). Start the scoring process with "
                f"{' '.join(f'{k}={v}' for k, v in CNR_ENV.items())} in its environment, or call "
                "rerank_study.reranker.numerics.configure_process() before importing torch.")
    now = get(CBWR_ALL)
    omp_dynamic = _no_dynamic_threads()
    return {"mkl_cnr": cnr_name(now), "mkl_cnr_code": now, "switched_in_process": before != WANTED_CNR,
            "omp_dynamic": omp_dynamic, "env": {k: os.environ.get(k) for k in CNR_ENV}}


def _no_dynamic_threads() -> bool | None:
    """MKL_DYNAMIC=FALSE and OMP_DYNAMIC=FALSE also when the environment did not say so: MKL and OpenMP
    may not pick fewer threads than requested at run time (Intel's reproducibility conditions).
    Returns OpenMP's own report (``omp_get_dynamic``), None when not queryable."""
    import torch

    libdir = os.path.join(os.path.dirname(torch.__file__), "lib")
    cpu = ctypes.CDLL(os.path.join(libdir, "libtorch_cpu.so"))
    # the C interface (by value); mkl_set_dynamic is the Fortran one (by pointer)
    if hasattr(cpu, "MKL_Set_Dynamic"):
        cpu.MKL_Set_Dynamic.argtypes = [ctypes.c_int]
        cpu.MKL_Set_Dynamic(0)
    try:
        gomp = ctypes.CDLL(os.path.join(libdir, "libgomp.so.1"))
    except OSError:
        return None
    gomp.omp_set_dynamic.argtypes = [ctypes.c_int]
    gomp.omp_set_dynamic(0)
    gomp.omp_get_dynamic.restype = ctypes.c_int
    return bool(gomp.omp_get_dynamic())
