"""Crossover atlas: every crossover a workload's F and Q contain, found and solved.

For each pair of F's parts (weight GEMMs, attention, other ops) and each pair of Q's parts
(bytes by tensor kind), and for the intensity against a ridge (a symbol ``R`` and each
chip's ridge per precision and memory level), :func:`atlas` solves ``lhs = rhs`` in each
variable of ``over`` with :func:`symroof.solve.crossover` (conditions come with each
solution), says which side dominates below and above the crossing and which lever helps
there, takes the limits, and lists pairs that never cross with the reason. Work is
bounded: a degree and size check runs before every solve (:class:`AtlasBudget`), and a pair
beyond it is reported as unsolved, never left running. :func:`family` sets the atlases
of several workloads side by side (FP16 / FP8 / INT4 weights, MHA / GQA).

>>> import symroof as sr
>>> from symroof.symbols import B, S, L, D, H
>>> dec = sr.workloads.decode(sr.models.transformer(layers=L, d_model=D, heads=H), B, S)
>>> a = atlas(dec, over=[B, S])
>>> a.find("F_attention", "F_weights", S).solutions[0].value
6*D
>>> a.find("F_attention", "F_weights", B).reason
<Reason.PROPORTIONAL: 'proportional'>
>>> a.find("Q_kv_cache", "Q_weight", S).invariants[0].form
Eq(B*S, 6*D)
"""

from __future__ import annotations

from symroof.atlas.build import atlas, parts
from symroof.atlas.family import Family, FamilyRow, family
from symroof.atlas.records import (LEVERS, RIDGE, Asymptote, Atlas, AtlasBudget, Entry, Invariant,
                                   Part, Reason, Ridge, Side, Status)

__all__ = ["atlas", "parts", "family", "Family", "FamilyRow", "RIDGE", "LEVERS", "Status",
           "Reason", "AtlasBudget", "Part", "Ridge", "Side", "Asymptote", "Invariant", "Entry",
           "Atlas"]
