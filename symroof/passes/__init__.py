"""Graph -> Graph passes: backward (training). Each returns a new graph."""

from __future__ import annotations

from symroof.passes.backward import Backward, backward

__all__ = ["Backward", "backward"]
