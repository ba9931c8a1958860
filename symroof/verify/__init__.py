"""Claims: documents' figures checked against the engine (claim files, annotated documents).

>>> from symroof.verify import parse_claims, run_claims, EXAMPLE
>>> run_claims(parse_claims(EXAMPLE, "example.toml")).counts
{'match': 1}
"""

from __future__ import annotations

from symroof.verify.run import Alternative, Outcome, Result, derive, run_claims
from symroof.verify.schema import (EXAMPLE, Chart, Claim, ClaimFile, Document, load_claims,
                                   parse_claims)

__all__ = ["Alternative", "Outcome", "Result", "derive", "run_claims", "EXAMPLE", "Chart",
           "Claim", "ClaimFile", "Document", "load_claims", "parse_claims"]
