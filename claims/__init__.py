"""Claim files that ship with symroof (installed as ``symroof.claims``): the seed
appendix's claims, and examples for authors."""
