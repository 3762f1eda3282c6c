"""Facts about the machine, read from /proc files and /etc/os-release; here from files written by the test,
so the expected values are known. torch_facts (and facts(with_torch=True)) import torch and are left to the
workflow tests that record them."""

import io
import os

import pytest

from rerank_study.core import machine

CPUINFO = """processor\t: 0
model name\t: Imaginary CPU 9000 @ 3.00GHz
flags\t\t: sse2 avx2 fpu avx
bogomips\t: 6000.00

processor\t: 1
model name\t: Some Other CPU
flags\t\t: zzz
"""


def fake_files(monkeypatch, contents):
    """machine's ``open`` reads ``contents[path]``; a path not given is absent (OSError)."""
    def fake_open(path, *args, **kw):
        if path not in contents:
            raise FileNotFoundError(path)
        return io.StringIO(contents[path])
    monkeypatch.setattr(machine, "open", fake_open, raising=False)


def test_cpu_info_takes_the_first_model_and_sorts_the_first_flags(monkeypatch):
    fake_files(monkeypatch, {"/proc/cpuinfo": CPUINFO})
    monkeypatch.setattr(machine.platform, "processor", lambda: "")
    assert machine.cpu_info() == {"model": "Imaginary CPU 9000 @ 3.00GHz", "flags": "avx avx2 fpu sse2",
                                  "logical_cpus": os.cpu_count()}


def test_cpu_info_prefers_the_platforms_processor_name_and_survives_no_cpuinfo(monkeypatch):
    fake_files(monkeypatch, {})
    monkeypatch.setattr(machine.platform, "processor", lambda: "arm")
    assert machine.cpu_info() == {"model": "arm", "flags": "", "logical_cpus": os.cpu_count()}


@pytest.mark.parametrize("meminfo, expected", [
    ("MemTotal:       16318764 kB\nMemFree: 1 kB\n", 16),  # 16318764 / 2**20 = 15.56 GiB
    ("MemFree: 1 kB\nMemTotal:  1572864 kB\n", 2),          # 1.5 GiB: the nearest whole GiB is 2
    ("MemTotal:  1048575 kB\n", 1),
    ("MemTotal: lots kB\n", None),                          # unreadable number
    ("MemTotal:\n", None),                                  # no number at all
    ("MemFree: 1 kB\n", None),                              # no MemTotal line
])
def test_memory_gb_is_memtotal_in_whole_gib(monkeypatch, meminfo, expected):
    fake_files(monkeypatch, {"/proc/meminfo": meminfo})
    assert machine.memory_gb() == expected


def test_memory_gb_is_none_without_meminfo(monkeypatch):
    fake_files(monkeypatch, {})
    assert machine.memory_gb() is None


def test_distribution_is_the_pretty_name_or_none(monkeypatch):
    monkeypatch.setattr(machine.platform, "freedesktop_os_release",
                        lambda: {"NAME": "Debian GNU/Linux", "PRETTY_NAME": "Debian GNU/Linux 12 (bookworm)"})
    assert machine.distribution() == "Debian GNU/Linux 12 (bookworm)"
    monkeypatch.setattr(machine.platform, "freedesktop_os_release", lambda: {"NAME": "x"})
    assert machine.distribution() is None

    def no_release():
        raise OSError("no /etc/os-release")
    monkeypatch.setattr(machine.platform, "freedesktop_os_release", no_release)
    assert machine.distribution() is None


def test_ir_metadata_facts_have_the_shape_platform_section_takes(monkeypatch):
    fake_files(monkeypatch, {"/proc/cpuinfo": CPUINFO, "/proc/meminfo": "MemTotal: 8388608 kB\n"})
    monkeypatch.setattr(machine.platform, "processor", lambda: "")
    monkeypatch.setattr(machine.platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(machine.platform, "system", lambda: "Linux")
    monkeypatch.setattr(machine.platform, "release", lambda: "6.1.0")
    monkeypatch.setattr(machine.platform, "freedesktop_os_release", lambda: {"PRETTY_NAME": "Some OS 1"})
    cpu, system = machine.ir_metadata_facts()
    assert cpu == {"model": "Imaginary CPU 9000 @ 3.00GHz", "architecture": "x86_64",
                   "operation_mode": "64-bit", "cores": os.cpu_count()}
    assert system == {"kernel": "Linux 6.1.0", "distribution": "Some OS 1", "ram_gb": 8}


def test_facts_without_torch_does_not_import_it(monkeypatch):
    fake_files(monkeypatch, {"/proc/cpuinfo": CPUINFO})
    monkeypatch.setattr(machine.platform, "processor", lambda: "")
    monkeypatch.setattr(machine.platform, "python_version", lambda: "3.11.9")
    out = machine.facts(with_torch=False)
    assert set(out) == {"cpu", "machine", "system", "python"}
    assert out["cpu"]["model"] == "Imaginary CPU 9000 @ 3.00GHz" and out["python"] == "3.11.9"
