"""Facts about the machine and numeric libraries a result was computed with.

Recorded next to anything whose last bits could depend on the CPU (reference results, frozen
candidates' provenance), so a user comparing their run can tell a different machine from a bug.
"""

from __future__ import annotations

import os
import platform
import re
import sys


def cpu_info() -> dict:
    """CPU model name and feature flags (sorted, space-separated) from /proc/cpuinfo (Linux); empty
    elsewhere."""
    model, flags = platform.processor() or "", ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and not model:
                    model = value.strip()
                elif key == "flags" and not flags:
                    flags = " ".join(sorted(value.split()))
    except OSError:
        pass
    return {"model": model, "flags": flags, "logical_cpus": os.cpu_count()}


def torch_facts() -> dict:
    import torch

    shown = torch.__config__.show()
    mkl = re.search(r"Math Kernel Library Version ([^\s]+)", shown)
    dnn = re.search(r"MKL-DNN v([^\s]+)", shown)
    return {"torch": torch.__version__, "mkl": mkl.group(1) if mkl else None, "onednn": dnn.group(1) if dnn
            else None,
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "mkl_cbwr": os.environ.get("MKL_CBWR")}


def facts(with_torch: bool = True) -> dict:
    out = {"cpu": cpu_info(), "machine": platform.machine(), "system": platform.system(),
           "python": platform.python_version()}
    if with_torch:
        out["torch"] = torch_facts()
    return out


def memory_gb() -> int | None:
    """The machine's memory (MemTotal of /proc/meminfo) in whole GiB; None where it cannot be read."""
    try:
        with open("/proc/meminfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2**20)
    except (OSError, ValueError, IndexError):
        pass
    return None


def distribution() -> str | None:
    """The operating system's PRETTY_NAME (/etc/os-release); None where there is none."""
    try:
        return platform.freedesktop_os_release().get("PRETTY_NAME")
    except OSError:
        return None


def ir_metadata_facts() -> tuple[dict, dict]:
    """(cpu, os) facts in the shape ``run_metadata.platform_section`` takes."""
    cpu = {"model": cpu_info()["model"], "architecture": platform.machine(),
           "operation_mode": "64-bit" if sys.maxsize > 2**32 else "32-bit", "cores": os.cpu_count()}
    return cpu, {"kernel": f"{platform.system()} {platform.release()}", "distribution": distribution(),
                 "ram_gb": memory_gb()}
