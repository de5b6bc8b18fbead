"""The TT-NN functional simulator: `from tt_models.sim import ttnn`."""

from . import ttnn

__all__ = ["ttnn"]
