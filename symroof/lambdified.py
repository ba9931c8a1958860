"""The old path of :mod:`symroof.compiled.lambdified` (compiled functions, cached), kept
so that imports written against it keep working."""

from symroof.compiled.lambdified import (MAXSIZE, CacheInfo, cache_clear, cache_info, function,
                                         run)

__all__ = ["function", "run", "cache_info", "cache_clear", "CacheInfo", "MAXSIZE"]
