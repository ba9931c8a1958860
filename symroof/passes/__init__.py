"""Graph -> Graph passes, one per file, run in the order of :mod:`symroof.passes.pipeline`:
fuse, tile, shard (tensor and pipeline parallelism), backward (training), optimizer step.

Three modules here are not passes but the helpers the passes and their readers share:
:mod:`~symroof.passes.tensor_parallel` (where tensor parallelism splits each tensor, which
``shard`` applies), :mod:`~symroof.passes.saved` (the forward values a backward pass reads,
for training memory) and :mod:`~symroof.passes.recompute` (which forward ops a recomputation
strategy runs again in the backward pass). They read graphs and return facts about them;
none returns a graph.
"""

from __future__ import annotations

from symroof.ir import FusedGroup
from symroof.passes.backward import GRADIENT_RULES, Backward, backward, gradient_rule
from symroof.passes.fuse import Fuse, fuse, unfuse
from symroof.passes.optimizer import ADAM, Optimizer, OptimizerStep
from symroof.passes.pipeline import ORDER, Pass, Pipeline
from symroof.passes.shard import Collective, Shard, Sharding, shard, sharding
from symroof.passes.tile import Tile, tile

__all__ = ["Backward", "backward", "GRADIENT_RULES", "gradient_rule", "Fuse", "FusedGroup",
           "fuse", "unfuse", "Tile", "tile", "Optimizer", "OptimizerStep", "ADAM", "Pass",
           "Pipeline", "ORDER", "Shard", "shard", "Collective", "Sharding", "sharding"]
