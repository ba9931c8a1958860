"""Training at scale: activation memory per layer under each recompute strategy, memory
per device under tensor, sequence, pipeline and data parallelism with ZeRO, FLOPs, and
the time a run takes.

- :mod:`~symroof.training.layout`: :class:`TrainingLayout`, ZeRO, in-flight micro-batches,
  the pipeline bubble;
- :mod:`~symroof.training.parts`: per-part sums of the training graph (layers, before and
  after them; split over a tensor-parallel group or whole);
- :mod:`~symroof.training.memory`: memory per device and stage;
- :mod:`~symroof.training.compute`: model and hardware FLOPs, time at a stated MFU;
- :mod:`~symroof.training.forms`: the papers' textbook forms;
- :mod:`~symroof.training.plan`: all of it for one run on one chip (``symroof train``).
"""

from __future__ import annotations

from symroof.training.compute import (TrainingCompute, TrainingTime, training_compute,
                                      training_time)
from symroof.training.forms import N_D, PSI, Factored, factor_out, per_layer_form, zero_form
from symroof.training.layout import TrainingLayout, bubble, in_flight, zero_bytes
from symroof.training.memory import StageMemory, TrainingMemory, training_memory
from symroof.training.parts import Part, TrainingParts, tensor_parallel_split, training_parts
from symroof.training.plan import TrainingPlan, plan_training

__all__ = ["TrainingLayout", "bubble", "in_flight", "zero_bytes", "Part", "TrainingParts",
           "tensor_parallel_split", "training_parts", "StageMemory", "TrainingMemory",
           "training_memory", "TrainingCompute", "TrainingTime", "training_compute",
           "training_time", "Factored", "factor_out", "per_layer_form", "zero_form", "PSI",
           "N_D", "TrainingPlan", "plan_training"]
