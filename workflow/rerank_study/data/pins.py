"""Reading every pin, and verifying an archive against its pin: the data pins (``<lockdir>/data_pins.json``,
``DataPins``), the model pins (``model_pins.json``), and the pins derived by the pipeline itself (query
splits, frozen candidates, the sealed set record) in ``derived_pins.json``.

A derived pin is written only when the run explicitly allows it (``--config repin=...``) or
when it does not exist yet AND the run allows it; otherwise a run verifies and never rewrites.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from ..core import layout
from ..core.errors import MissingInputError, PinMismatchError
from ..core.fileio import VerifiedFile, canonical_json, input_bytes, read_json, sha256_file, write_json

log = logging.getLogger(__name__)
DERIVED = layout.DERIVED_PINS


@dataclass(frozen=True)
class DataPins:
    """A dataset's pins. ``zip`` is absent for a local-only dataset (then only a mirror folder serves it)."""

    url: str | None
    zip_sha256: str | None
    zip_md5: str | None
    zip_bytes: int | None
    zip_top: str | None
    files: dict  # name -> {"sha256", "bytes", optional "content_sha256"}
    dataset: str = "scifact"

    @classmethod
    def load(cls, path) -> DataPins:
        raw = read_json(path)
        z = raw.get("zip") or {}
        return cls(z.get("url"), z.get("sha256"), z.get("md5"), int(z["bytes"]) if "bytes" in z else None,
                   z.get("top_folder"), raw["files"], raw.get("dataset", "scifact"))

    @property
    def zip_name(self) -> str:
        return f"{self.dataset}.zip"

    def pin(self, name: str) -> dict:
        if name not in self.files:
            raise KeyError(f"{name!r} has no pin in the data lockfile (pinned: {sorted(self.files)})")
        return self.files[name]


def load_model_pins(lockdir) -> dict:
    return read_json(Path(lockdir) / layout.MODEL_PINS)



def derived_path(lockdir) -> Path:
    return Path(lockdir) / DERIVED


def load_derived(lockdir) -> dict:
    p = derived_path(lockdir)
    return read_json(p) if p.exists() else {}


def get_pin(lockdir, name: str) -> dict | None:
    return load_derived(lockdir).get(name)


def set_pin(lockdir, name: str, value: dict) -> None:
    pins = load_derived(lockdir)
    old = pins.get(name)
    if old is not None and old != value:
        log.warning("RE-PINNING %s in %s:\n  old: %s  new: %s", name, derived_path(lockdir),
                    canonical_json(old), canonical_json(value))
    pins[name] = value
    write_json(derived_path(lockdir), pins)



def verify_against(path, expected_sha256: str, what: str, fix: str) -> VerifiedFile:
    """``path`` read once and checked against its pin; the result carries the checked bytes for the reader."""
    verified = VerifiedFile(path, input_bytes(path))
    actual = sha256_file(verified)
    if actual != expected_sha256:
        raise PinMismatchError(what, path, "sha256", expected_sha256, actual, None, fix)
    return verified


def verify_frozen_candidates(derived_pins_path, table_path) -> tuple[dict, VerifiedFile]:
    """Check the committed candidate table against its pin; return the pin and the checked table."""
    derived = read_json(derived_pins_path)
    pin = derived.get("candidates")
    if pin is None:
        raise MissingInputError(
            f"NO CANDIDATE PIN in {derived_pins_path}. The candidates are a committed, frozen input: restore "
            "lockfiles/ from git, or freeze them knowingly with: snakemake --config repin=candidates")
    table = verify_against(table_path, pin["sha256"], "the frozen candidate table",
                           "It must be the committed file: restore it from git (git checkout -- "
                           "lockfiles/candidates), or re-freeze knowingly with: snakemake --config "
                           "repin=candidates (this changes the experiment).")
    return pin, table


# ---------------------------------------------------------------------------------------- archives --
ARCHIVE_FIX = ("The archive is not the pinned one (truncated, or another file); it was not opened and "
               "nothing was written.")


def verify_archive(path, name: str, expected: dict, source: str, fix: str = ARCHIVE_FIX) -> dict:
    """Check an archive BEFORE it is opened: its size, then md5 and sha256 where ``expected`` has them (a
    catalogue entry has size and md5; a pin also sha256). Return the measured {"bytes", "md5", "sha256"}."""
    from ..core.fileio import md5_file

    path = Path(path)
    size = path.stat().st_size
    if size != expected["bytes"]:
        raise PinMismatchError(name, path, "size (bytes)", expected["bytes"], size, source, fix)
    measured = {"bytes": size, "md5": md5_file(path), "sha256": sha256_file(path)}
    for algo in ("md5", "sha256"):
        if expected.get(algo) and measured[algo] != expected[algo]:
            raise PinMismatchError(name, path, algo, expected[algo], measured[algo], source, fix)
    return measured


def download(url: str, dest, timeout: float) -> None:
    """Fetch ``url`` to ``dest`` (the caller verifies it; a failure names the URL and the way around it)."""
    import shutil
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp, open(dest, "wb") as out:  # noqa: S310
            shutil.copyfileobj(resp, out)
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        raise MissingInputError(f"DOWNLOAD FAILED: {url}: {exc}. Download it yourself and give its path "
                                "(data_zip=...): it is checked the same way.") from None
