"""Rule synthesis_confirm: rule synthesis's script (workflow/scripts/synthesis.py, named by params
``synthesis_script``) on each study's completed opening of a frozen family; with params ``family`` it adds the
family's decision (decision.json, synthesis.md, the family's ledger)."""

import importlib.util

from rerank_study.core.rule import run


def main(sm):
    spec = importlib.util.spec_from_file_location("synthesis_rule", sm.params.synthesis_script)
    rule = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rule)
    rule.main(sm)


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
