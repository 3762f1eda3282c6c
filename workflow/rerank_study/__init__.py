"""rerank_study: the pure, tested science of a sealed reranking experiment.

One subpackage for each concept (each package's ``__all__`` lists its modules):
  core        - loud errors, file I/O and hashes, names, the layout, rule-script glue, machine facts
  settings    - the config and its README, the studies, the parse-time checks of a study
  data        - pinned acquisition, the BEIR catalogue and readers, the pins, the query splits
  rankings    - the tie rule and fusion, TREC run files, first-stage retrieval, the frozen candidates
  reranker    - pinned models, cross-encoder scoring, derived backends, a run file as the reranker
  stats       - metrics, evidence groups, the paired bootstrap, evaluation statistics, the analysis
  calibration - how far the grouped interval can be trusted on a run's own data
  repro       - the reference, reproducibility measures, conclusion retention of a derived backend
  report      - the markdown and HTML report, the query browser, paper tables, ir_metadata, cross-study table
  seal        - the sealed confirmation: frozen protocol, guarded opening, the ledger of every look
  synthesis   - one declared answer across datasets: pooled and per-dataset estimates, multiplicity, its audit
and one module, evalstats: the evaluation statistics' command line under its published name
(``python -m rerank_study.evalstats``, as every report prints it).
"""

__version__ = "0.1.0"

__all__ = ['calibration', 'core', 'data', 'evalstats', 'rankings', 'report', 'repro', 'reranker', 'seal',
    'settings', 'stats', 'synthesis']
