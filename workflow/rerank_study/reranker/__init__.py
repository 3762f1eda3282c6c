"""The reranker's scores: pinned model files and their first pins, the cross-encoder scoring
(numerics, batches, forward pass, shape check, re-inference), derived backends, a run file."""

__all__ = ['backend_session', 'backends', 'model_pinning', 'models', 'numerics', 'reranker_run', 'scoring',
    'scoring_batches', 'scoring_model', 'shape_check', 'verification']
