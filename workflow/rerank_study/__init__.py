"""rerank_study: the pure, tested science of a sealed reranking experiment.

Modules (one place for each concept):
  errors     - the three kinds of loud failure (pin, missing input, malformed input) + config
  fileio     - sha256/md5, atomic writes, canonical JSON, exact float text
  config     - load + schema-validate the experiment config, derived run settings
  config_docs - config/README.md rendered from the schema's key descriptions
  beir       - BEIR SciFact reader (corpus / queries / qrels) with file+line errors
  acquire    - pinned acquisition of SciFact (cache -> mirror/zip -> URL)
  splits     - development / confirmation query splits (drawn once, pinned)
  ranking    - the tie rule, rank materialisation, reciprocal-rank fusion (RRF and blend)
  trec       - TREC run files
  retrieval  - BM25 (bm25s) and dense (all-MiniLM-L6-v2) first-stage retrieval
  candidates - the frozen RRF-50 candidate table
  models     - pinned model files, verification, resolution, the STAND-IN
  scoring    - cross-encoder scoring of (query, candidate) pairs
  scoring_batches - tokenise once, the per-query batch plan, the row order inside a batch
  scoring_model   - the numeric setup, loading the cross-encoder, the forward pass of one batch
  metrics    - nDCG@10 (trec_eval ndcg_cut), Recall@K, MRR@10, first relevant rank
  grouping   - evidence groups: connected components of queries sharing a relevant doc
  bootstrap  - grouped / query-level paired bootstrap, percentiles, diagnostics
  evalstats  - McNemar, capped recall, chance level, slices, multiplicity, power
  protocol   - frozen confirmation protocol, unsealing guards, ledger
  report     - markdown report and plots
"""

__version__ = "0.1.0"
