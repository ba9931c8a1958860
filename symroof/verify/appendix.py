"""The seed appendix's claim file, shipped with symroof (``claims/seeds.toml``)."""

from __future__ import annotations

from importlib import resources

from symroof.verify.schema import ClaimFile, parse_claims

__all__ = ["SEED_CLAIMS", "seed_claims"]

#: The name the seed claim file has in the checkout and in reports.
SEED_CLAIMS = "claims/seeds.toml"


def seed_claims() -> ClaimFile:
    """The seed appendix's claims, from the installed package (or the checkout)."""
    text = resources.files("symroof.claims").joinpath("seeds.toml").read_text(encoding="utf-8")
    return parse_claims(text, SEED_CLAIMS)
