"""What a plan is asked: chips on offer (with prices), the traffic, the objectives, the
load and the model of the service, each checked when made (an impossible value is a
:class:`~symroof.errors.SymroofError` naming its field).

>>> Traffic.of([(2000, 500)]).final_context
2500
>>> Traffic.of([(1000, 300), (4000, 200, 0.25)]).mean_output    # weights are shares
280.0
>>> Load(users=-3)
Traceback (most recent call last):
...
symroof.errors.SymroofError: load users: expected a positive integer, got -3
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from typing import TYPE_CHECKING

from symroof.errors import SymroofError
from symroof.precision import Numerics

if TYPE_CHECKING:
    from symroof.hardware import HardwareSpec
    from symroof.models import TransformerModel

__all__ = ["Offer", "Traffic", "Objectives", "Load", "Mode", "DecodeContext", "ChunkTTFT",
           "Service", "Draft", "parse_prices", "parse_numerics", "IGNORED"]


def _positive(value: object, what: str, *, integer: bool = False,
              zero: bool = False) -> float:
    kind = "a positive integer" if integer else "a number >= 0" if zero else "a positive number"
    if not isinstance(value, (int, float, Fraction)) or isinstance(value, bool):
        raise SymroofError(f"{what}: expected {kind}, got {value!r}")
    x = float(value)
    ok = math.isfinite(x) and (x >= 0 if zero else x > 0) and (not integer or x == int(x))
    if not ok:
        raise SymroofError(f"{what}: expected {kind}, got {value!r}")
    return x


@dataclass(frozen=True)
class Offer:
    """A chip on offer: how many are available and, optionally, the price of one for
    an hour (any currency; the plan's costs are in it)."""

    chip: HardwareSpec
    count: int
    price_per_hour: float | None = None

    def __post_init__(self) -> None:
        _positive(self.count, f"chips {self.chip.name} count", integer=True)
        if self.price_per_hour is not None:
            _positive(self.price_per_hour, f"prices {self.chip.name}")
        if self.chip.capacity() is None:
            raise SymroofError(f"chips {self.chip.name}: publishes no memory capacity "
                               "(the plan needs it for the fit)")


@dataclass(frozen=True)
class Traffic:
    """Requests as classes of (prompt tokens, output tokens, weight); weights are shares
    of the requests (normalised)."""

    classes: tuple[tuple[int, int, Fraction], ...]

    @classmethod
    def of(cls, items: Sequence[Sequence[object]]) -> Traffic:
        """From ``[(prompt, output)]`` or ``[(prompt, output, weight)]`` rows."""
        if isinstance(items, (str, bytes)) or not items:
            raise SymroofError("workload: expected at least one (prompt, output) pair")
        rows = []
        for i, item in enumerate(items):
            if len(item) not in (2, 3):
                raise SymroofError(f"workload[{i}]: expected (prompt, output[, weight]), got "
                                   f"{item!r}")
            p = int(_positive(item[0], f"workload[{i}] prompt", integer=True))
            o = int(_positive(item[1], f"workload[{i}] output", integer=True))
            w = Fraction(str(_positive(item[2], f"workload[{i}] weight"))) if len(item) == 3 \
                else Fraction(1)
            rows.append((p, o, w))
        total = sum(w for _, _, w in rows)
        return cls(tuple((p, o, w / total) for p, o, w in rows))

    @property
    def longest_prompt(self) -> int:
        return max(p for p, _, _ in self.classes)

    @property
    def final_context(self) -> int:
        """The longest prompt + output: the cache a sequence holds at its last token."""
        return max(p + o for p, o, _ in self.classes)

    @property
    def mean_context(self) -> int:
        """prompt + output/2 averaged over the classes (rounded up): the mean cache a
        decode step reads over a sequence's life."""
        return math.ceil(sum(w * (p + Fraction(o, 2)) for p, o, w in self.classes))

    @property
    def mean_prompt(self) -> float:
        return float(sum(w * p for p, _, w in self.classes))

    @property
    def mean_output(self) -> float:
        return float(sum(w * o for _, o, w in self.classes))

    def __str__(self) -> str:
        return ", ".join(f"{p}+{o}" + ("" if w == 1 else f" ({float(w):.0%})")
                         for p, o, w in self.classes)


@dataclass(frozen=True)
class Objectives:
    """Service-level objectives (None: not asked): time to first token (s), inter-token
    latency (s), tokens per second each user gets."""

    ttft_s: float | None = None
    itl_s: float | None = None
    tokens_per_user: float | None = None

    def __post_init__(self) -> None:
        for name in ("ttft_s", "itl_s", "tokens_per_user"):
            v = getattr(self, name)
            if v is not None:
                _positive(v, f"objectives {name}")


@dataclass(frozen=True)
class Load:
    """The load: concurrent users (each decoding a sequence) or requests per second."""

    users: float | None = None
    requests_per_s: float | None = None

    def __post_init__(self) -> None:
        if self.users is not None:
            _positive(self.users, "load users", integer=True)
        if self.requests_per_s is not None:
            _positive(self.requests_per_s, "load requests_per_s")
        if (self.users is None) == (self.requests_per_s is None):
            raise SymroofError("load: give users or requests_per_s (one of them)")

    def __str__(self) -> str:
        return f"{self.users:g} concurrent users" if self.users is not None else \
            f"{self.requests_per_s:g} requests/s"


class Mode(StrEnum):
    """Where prefill runs (option ``mode``; default colocated)."""

    COLOCATED = "colocated"          # on the decode replicas, between decode steps
    DISAGGREGATED = "disaggregated"  # on replicas of their own (same chip, own layout), the
                                     # prompt's KV cache sent to a decode replica
    CHUNKED = "chunked"              # in chunks riding every decode step (one roofline each)


class DecodeContext(StrEnum):
    """The cache a decode step reads (option ``decode_context``; default final)."""

    FINAL = "final"  # the longest prompt + output: the slowest step of a sequence
    MEAN = "mean"    # prompt + output/2: the average step


class ChunkTTFT(StrEnum):
    """How chunked prefill's time to first token is taken (option ``chunk_ttft``;
    default steps). ``C`` is ``chunk_tokens``; ``t_x(B)`` a decode step of the batch that
    carries ``x`` prompt tokens."""

    STEPS = "steps"      # floor(P/C) t_C(B) + t_(P mod C)(B): a chunk rides each step
    PREFILL = "prefill"  # the prompt's own prefill on an idle replica (a lower bound)


#: What the service model leaves out, printed with every plan.
IGNORED = (
    "queueing and scheduling: TTFT is one prompt's prefill on an idle replica (chunked: "
    "its chunks' decode steps), never a wait behind other prompts",
    "prefill-decode interference in ITL: a decode step's time is its own (colocated "
    "prefills lower the throughput, not the ITL checked; chunked prefill puts them in it)",
    "disaggregated: the KV-cache transfer overlapping anything (it is added to TTFT, over "
    "one link; the prefill replicas are busy for the prefill only)",
    "activations and runtime buffers beside weights and KV cache (see reserve)",
    "pipeline: micro-batches overlapping across decode steps (each step runs its m "
    "micro-batches through the pp stages, m + pp - 1 stage times: bubble (pp-1)/(m+pp-1))",
)


@dataclass(frozen=True)
class Service:
    """The model of the service: where prefill runs, which cache a decode step reads,
    the achieved fractions of peak compute and of bandwidth (memory and link; 1: the
    bound), the share of memory kept back; for chunked prefill the chunk size
    ``chunk_tokens`` (prompt tokens a decode step carries at most; default 512) and how
    its TTFT is taken (:class:`ChunkTTFT`); for disaggregated serving the bandwidth
    (bytes/s) of the link the prompt's KV cache crosses from a prefill replica to a
    decode replica (``kv_link_bandwidth``; None: the chip's fastest interconnect, one
    direction, and an error naming this field where the chip file lists none)."""

    mode: Mode = Mode.COLOCATED
    decode_context: DecodeContext = DecodeContext.FINAL
    compute_efficiency: float = 1.0
    bandwidth_efficiency: float = 1.0
    reserve: float = 0.0
    chunk_tokens: int = 512
    chunk_ttft: ChunkTTFT = ChunkTTFT.STEPS
    kv_link_bandwidth: float | None = None

    def __post_init__(self) -> None:
        for name in ("compute_efficiency", "bandwidth_efficiency"):
            v = _positive(getattr(self, name), f"service {name}")
            if v > 1:
                raise SymroofError(f"service {name}: expected a fraction 0 < x <= 1, got {v}")
        if _positive(self.reserve, "service reserve", zero=True) >= 1:
            raise SymroofError(f"service reserve: expected 0 <= x < 1, got {self.reserve}")
        _positive(self.chunk_tokens, "service chunk_tokens", integer=True)
        if self.kv_link_bandwidth is not None:
            _positive(self.kv_link_bandwidth, "service kv_link_bandwidth")
        try:
            Mode(self.mode), DecodeContext(self.decode_context), ChunkTTFT(self.chunk_ttft)
        except ValueError as err:
            raise SymroofError(f"service: {err}; modes: colocated, disaggregated, chunked; decode "
                               "contexts: final, mean; chunk_ttft: steps, prefill") from None


@dataclass(frozen=True)
class Draft:
    """Speculative decoding: a draft model proposing ``tokens`` per round, each accepted
    with probability ``acceptance``; it runs on the target's devices and tp."""

    model: TransformerModel
    tokens: int = 4
    acceptance: float = 0.7

    def __post_init__(self) -> None:
        _positive(self.tokens, "draft tokens", integer=True)
        if not (isinstance(self.acceptance, (int, float)) and 0 <= self.acceptance <= 1):
            raise SymroofError(f"draft acceptance: expected a probability 0 <= a <= 1, got "
                               f"{self.acceptance!r}")


def parse_prices(table: Mapping[str, object], chips: Sequence[str],
                 origin: str = "prices") -> dict[str, float]:
    """A price file's table (``[price]`` chip = price per chip hour, ``currency``) checked
    against the chips given: a price for a chip not given is an error naming it."""
    unknown = sorted(set(table) - {"price", "currency"})
    if unknown:
        raise SymroofError(f"{origin}: unknown key {unknown[0]!r}; expected currency and a "
                           "[price] table")
    prices = table.get("price")
    if not isinstance(prices, Mapping):
        raise SymroofError(f"{origin}: expected a [price] table of chip = price per hour")
    out = {}
    for chip, value in prices.items():
        if chip not in chips:
            raise SymroofError(f"{origin} price.{chip}: no such chip among the chips given "
                               f"({', '.join(chips)})")
        out[chip] = _positive(value, f"{origin} price.{chip}")
    return out


def parse_numerics(text: str, what: str = "precision") -> Numerics:
    """A precision choice: ``bf16`` (every kind) or ``weights=int4,kv_cache=fp8`` (kinds
    not named stay bf16; the peak is the activations'); ``what`` names it in errors."""
    if not isinstance(text, str):
        raise SymroofError(f"{what}: expected a format name or KIND=FORMAT,..., got "
                           f"{type(text).__name__}")
    text = text.strip()
    if "=" not in text:
        return Numerics.resolve(weights=text, kv_cache=text, activations=text,
                                names={k: what for k in ("weights", "kv_cache", "activations")})
    kinds: dict[str, str] = {}
    for part in text.split(","):
        key, _, value = part.partition("=")
        key = key.strip().replace("-", "_")
        if key not in ("weights", "kv_cache", "activations"):
            raise SymroofError(f"{what} {text}: unknown kind {key!r}; expected weights, "
                               "kv_cache or activations")
        kinds[key] = value.strip()
    full = {k: kinds.get(k, "bf16") for k in ("weights", "kv_cache", "activations")}
    return Numerics.resolve(**full, names={k: f"{what} {text}: {k}" for k in full})


def numerics_name(n: Numerics) -> str:
    """``bf16`` when every kind is one format, else ``w=int4 kv=fp8 a=bf16``."""
    if n.weights == n.kv_cache == n.activations:
        return str(n.weights)
    return f"w={n.weights} kv={n.kv_cache} a={n.activations}"
