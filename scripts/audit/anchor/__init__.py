"""What a run must have used, taken from outside it: the committed config (or the frozen protocol)
and the lock folder's pins, a derived backend's pin, the model's architecture."""

__all__ = ['anchors', 'backend', 'model_config']
