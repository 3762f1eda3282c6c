"""One declared answer across datasets: the pooled and per-dataset estimates of a family of comparisons,
their multiplicity, the synthesis report and its independent audit."""

__all__ = ['synthesis', 'synthesis_audit', 'synthesis_report']
