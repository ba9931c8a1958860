"""Graph -> Graph passes (each returns a new graph): backward (training), fuse, tile."""

from __future__ import annotations

from symroof.passes.backward import Backward, backward
from symroof.passes.fuse import Fuse, FusedGroup, fuse, unfuse
from symroof.passes.tile import Tile, tile

__all__ = ["Backward", "backward", "Fuse", "FusedGroup", "fuse", "unfuse", "Tile", "tile"]
