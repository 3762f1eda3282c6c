"""Rule synthesis runs the synthesis's own audit on the files it has just written, as each study's run is
audited: ``python -I -S -B scripts/audit --synthesis <folder> --run <run> ... [--configfile F ...] --out
<folder>/audit.json`` (the standard-library audit, synthesis_checks: every number of synthesis.json
recomputed from the studies' audited files and the saved index matrices). A failed audit stops the rule,
naming the checks; a passing one is shown in synthesis.md."""

from __future__ import annotations

import os
import subprocess

from ..core.errors import PipelineError

PASSED = ("Audit of this synthesis: PASSED (`scripts/audit --synthesis`: every number of synthesis.json "
          "recomputed from the studies' audited files and the saved index matrices; audit.json).")


def command(python: str, script: str, folder: str, runs, configfiles, out: str) -> list[str]:
    return [python, "-I", "-S", "-B", "-X", "pycache_prefix=/dev/null/pycache", script, "--synthesis", folder,
            *[a for r in runs for a in ("--run", str(r))],
            *[a for c in configfiles for a in ("--configfile", str(c))], "--out", out]


def audited(sm) -> list[str]:
    """Run the audit of the synthesis (rule synthesis's params ``audit``, ``runs``, ``configfiles``); the
    lines synthesis.md shows, or a PipelineError naming what failed."""
    python, script = sm.params.audit
    cmd = command(python, script, os.path.dirname(sm.output.json), sm.params.runs, sm.params.configfiles,
                  sm.output.audit)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise PipelineError(f"the audit of this synthesis FAILED (exit {proc.returncode}); nothing of it is "
                            f"to be trusted. Its report:\n{proc.stdout[-4000:]}{proc.stderr[-2000:]}\nFix: "
                            "rerun `snakemake synthesis` from the studies' audited runs; a key the audit "
                            "does not know needs the audit extended (scripts/audit/synthesis_checks.py).")
    return [PASSED, ""]
