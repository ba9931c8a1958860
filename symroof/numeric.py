"""The old path of :mod:`symroof.compiled.numeric` (a workload's roofline over a grid,
``symroof eval``'s rows), kept so that imports written against it keep working."""

from symroof.compiled.numeric import (FIGURES, Rooflines, check_rows_domain, points,
                                      refuse_not_finite, rooflines)

__all__ = ["FIGURES", "Rooflines", "rooflines", "points", "refuse_not_finite",
           "check_rows_domain"]
