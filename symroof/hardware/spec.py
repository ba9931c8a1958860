"""Validated, exact chip specs: the frozen value types and the TOML-table parser.

Units live in key names (``bf16_tflops``, ``bandwidth_tb_per_s``, ``capacity_gib``) and
are converted here to FLOP/s, bytes/s and bytes as exact ``sympy.Rational`` values.

>>> spec = parse_spec({"name": "toy", "display_name": "Toy", "ops_per_mac": 2,
...     "main_memory": "dram", "peak": {"vector": {"fp32_gflops": "17.6", "source": "s"}},
...     "memory": {"dram": {"bandwidth_gb_per_s": 15, "source": "s"}}}, "toy.toml")
>>> spec.peak("fp32"), spec.ridge("fp32")
(17600000000, 88/75)
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import sympy as sp

from symroof.errors import SymroofError, suggest
from symroof.precision import PRECISIONS  # precisions a file may list, widest first

__all__ = ["PRECISIONS", "UNITS", "DIRECTIONS", "Peak", "MemoryLevel", "Link", "HardwareSpec",
           "parse_spec"]

#: Compute units: the matrix engine (tensor / matrix cores, systolic array) and the vector unit.
UNITS = ("matrix", "vector")

_TEN, _TWO = sp.Integer(10), sp.Integer(2)
#: Peak suffixes; decimal prefixes only (vendors quote TFLOPS as 10**12, never 2**40).
_RATE = {"pflops": _TEN**15, "tflops": _TEN**12, "gflops": _TEN**9, "mflops": _TEN**6,
         "pops": _TEN**15, "tops": _TEN**12, "gops": _TEN**9, "mops": _TEN**6}
#: Byte prefixes: k/M/G/T are powers of 10, Ki/Mi/Gi/Ti powers of 2.
_BYTES = {"b": sp.Integer(1), "kb": _TEN**3, "mb": _TEN**6, "gb": _TEN**9, "tb": _TEN**12,
          "kib": _TWO**10, "mib": _TWO**20, "gib": _TWO**30, "tib": _TWO**40}
_DECIMAL = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_TOP_KEYS = ("name", "display_name", "ops_per_mac", "main_memory", "notes",
             "peak", "memory", "interconnect")


@dataclass(frozen=True)
class Peak:
    """One dense peak as the file states it, in FLOP/s (or OP/s) of the file's MAC count."""

    unit: str            # "matrix" or "vector"
    precision: str       # one of PRECISIONS
    rate: sp.Rational    # operations per second, counting a MAC as the file's ops_per_mac
    source: str


@dataclass(frozen=True)
class MemoryLevel:
    """A memory level: bandwidth in bytes/s and capacity in bytes, either may be unknown."""

    name: str
    bandwidth: sp.Rational | None
    capacity: sp.Rational | None
    source: str


#: How a link's figure counts its two directions (key ``direction`` of an interconnect):
#: ``"both"``, the sum of both directions (how NVIDIA and AMD quote NVLink, Infinity
#: Fabric and PCIe; the default), or ``"each"``, what one direction carries.
DIRECTIONS = ("both", "each")


@dataclass(frozen=True)
class Link:
    """A chip-to-chip or host link: its bandwidth in bytes/s as the source states it, and
    whether that figure is both directions together or each one (``direction``)."""

    name: str
    bandwidth: sp.Rational
    source: str
    direction: str = "both"
    step_latency_s: sp.Rational | None = None   # alpha: seconds per step of a collective
    base_latency_s: sp.Rational | None = None   # seconds each collective costs once
    latency_source: str | None = None

    @property
    def per_direction(self) -> sp.Rational:
        """Bytes/s one direction carries: what a device sends while it also receives."""
        return self.bandwidth / 2 if self.direction == "both" else self.bandwidth


@dataclass(frozen=True)
class HardwareSpec:
    """A chip: dense peaks per unit and precision, memory levels, links, each with a source.

    Derived figures (ridge points) are computed on request, never stored.
    """

    name: str
    display_name: str
    ops_per_mac: int                    # how the file's peaks count one multiply-accumulate
    main_memory: str                    # the level the default roofline uses
    peaks: tuple[Peak, ...]
    levels: tuple[MemoryLevel, ...]
    interconnects: Mapping[str, Link]
    notes: str = ""

    def __hash__(self) -> int:
        return hash((self.name, self.ops_per_mac, self.peaks, self.levels,
                     tuple(self.interconnects.values())))

    def precisions(self, unit: str | None = None) -> tuple[str, ...]:
        """Precisions with a peak on ``unit`` (any unit when None), widest first."""
        units = UNITS if unit is None else (self._unit(unit),)
        have = {p.precision for p in self.peaks if p.unit in units}
        return tuple(p for p in PRECISIONS if p in have)

    def peak(self, precision: str, unit: str | None = None, ops_per_mac: int = 2) -> sp.Rational:
        """Dense peak in operations/s, counting a MAC as ``ops_per_mac`` (2: vendor FLOPs).

        ``unit=None`` takes the matrix unit if it lists ``precision``, else the vector unit.
        """
        if ops_per_mac not in (1, 2):
            raise SymroofError(f"{self.name}: ops_per_mac must be 1 or 2, got {ops_per_mac!r}")
        return self._find(precision, unit).rate * ops_per_mac / self.ops_per_mac

    def level(self, name: str) -> MemoryLevel:
        """The memory level called ``name``."""
        for lvl in self.levels:
            if lvl.name == name:
                return lvl
        known = [lvl.name for lvl in self.levels]
        raise SymroofError(f"{self.name}: no memory level {name!r}; it has {', '.join(known)}"
                           f"{suggest(str(name), known)}")

    def bandwidth(self, level: str | None = None) -> sp.Rational:
        """Bandwidth of ``level`` (None: main memory) in bytes/s."""
        lvl = self.level(self.main_memory if level is None else level)
        if lvl.bandwidth is None:
            raise SymroofError(f"{self.name}: memory level {lvl.name!r} has no published bandwidth")
        return lvl.bandwidth

    def capacity(self, level: str | None = None) -> sp.Rational | None:
        """Capacity of ``level`` (None: main memory) in bytes, or None if unpublished."""
        return self.level(self.main_memory if level is None else level).capacity

    def ridge(self, precision: str, unit: str | None = None, level: str | None = None,
              ops_per_mac: int = 2) -> sp.Rational:
        """Ridge point: peak / bandwidth, in operations per byte of ``level`` traffic."""
        return self.peak(precision, unit, ops_per_mac) / self.bandwidth(level)

    def source(self, field: str) -> str:
        """Where a figure comes from, for a path like ``"peak.matrix.bf16"`` or ``"memory.hbm"``."""
        table = {**{f"peak.{p.unit}": p.source for p in self.peaks},
                 **{f"peak.{p.unit}.{p.precision}": p.source for p in self.peaks},
                 **{f"memory.{m.name}": m.source for m in self.levels},
                 **{f"interconnect.{k}": v.source for k, v in self.interconnects.items()}}
        for suffix in ("", ".bandwidth", ".capacity"):
            if field.endswith(suffix) and field[:len(field) - len(suffix)] in table:
                return table[field[:len(field) - len(suffix)]]
        raise SymroofError(f"{self.name}: no figure {field!r}{suggest(str(field), table)}")

    def _unit(self, unit: str) -> str:
        if unit not in UNITS:
            raise SymroofError(f"{self.name}: unit {unit!r}: expected one of {', '.join(UNITS)}"
                               f"{suggest(str(unit), UNITS)}")
        return unit

    def _find(self, precision: str, unit: str | None) -> Peak:
        if precision not in PRECISIONS:
            raise SymroofError(f"{self.name}: unknown precision {precision!r}; expected one of "
                               f"{', '.join(PRECISIONS)}{suggest(str(precision), PRECISIONS)}")
        units = UNITS if unit is None else (self._unit(unit),)
        for u in units:     # matrix before vector
            for p in self.peaks:
                if p.unit == u and p.precision == precision:
                    return p
        offers = "; ".join(f"{u}: {', '.join(self.precisions(u))}"
                           for u in UNITS if self.precisions(u))
        raise SymroofError(f"{self.name}: no {unit or 'matrix or vector'} peak for {precision} "
                           f"(this chip offers {offers})")


def parse_spec(data: Mapping[str, Any], origin: str) -> HardwareSpec:
    """Validate a parsed TOML document; ``origin`` (the file) prefixes every error."""
    _known(data, _TOP_KEYS, origin, "top level")
    for key in ("name", "display_name", "ops_per_mac", "main_memory", "peak", "memory"):
        if key not in data:
            raise SymroofError(f"{origin}: missing required field {key!r}")
    name = _text(data, "name", origin)
    display = _text(data, "display_name", origin)
    mac = data["ops_per_mac"]
    if type(mac) is not int or mac not in (1, 2):
        raise SymroofError(f"{origin}: ops_per_mac: expected the integer 1 or 2, got {mac!r}")
    main = _text(data, "main_memory", origin)
    notes = _text(data, "notes", origin) if "notes" in data else ""
    peaks = _peaks(_table(data["peak"], "peak", origin), origin)
    levels = tuple(_level(k, _table(v, f"memory.{k}", origin), origin)
                   for k, v in _table(data["memory"], "memory", origin).items())
    links = {k: _link(k, _table(v, f"interconnect.{k}", origin), origin)
             for k, v in _table(data.get("interconnect", {}), "interconnect", origin).items()}
    if not levels:
        raise SymroofError(f"{origin}: [memory] lists no level; expected e.g. [memory.hbm]")
    by_name = {m.name: m for m in levels}
    if main not in by_name:
        raise SymroofError(f"{origin}: main_memory = {main!r} names no [memory.*] table; "
                           f"expected one of {', '.join(by_name)}{suggest(main, by_name)}")
    if by_name[main].bandwidth is None:
        raise SymroofError(f"{origin}: [memory.{main}] is the main memory and needs a "
                           f"bandwidth_<unit>_per_s")
    return HardwareSpec(name, display, mac, main, peaks, levels, MappingProxyType(links), notes)


def _peaks(table: Mapping[str, Any], origin: str) -> tuple[Peak, ...]:
    _known(table, UNITS, origin, "[peak]")
    out: list[Peak] = []
    for unit in UNITS:
        if unit not in table:
            continue
        sub = _table(table[unit], f"peak.{unit}", origin)
        where = f"[peak.{unit}]"
        source = _source(sub, origin, where)
        seen: dict[str, sp.Rational] = {}
        for key, value in sub.items():
            if key == "source":
                continue
            precision, _, suffix = key.partition("_")
            if precision not in PRECISIONS:
                raise SymroofError(f"{origin}: {where} {key}: unknown key; expected "
                                   f"<precision>_<unit> with precision one of "
                                   f"{', '.join(PRECISIONS)}{suggest(precision, PRECISIONS)}")
            if suffix not in _RATE:
                raise SymroofError(f"{origin}: {where} {key}: unknown unit suffix {suffix!r}; "
                                   f"expected one of {', '.join(_RATE)}{suggest(suffix, _RATE)}")
            if precision in seen:
                raise SymroofError(f"{origin}: {where} {key}: {precision} is given twice")
            seen[precision] = _number(value, origin, f"{where} {key}") * _RATE[suffix]
        if not seen:
            raise SymroofError(f"{origin}: {where} lists no peak; expected keys like bf16_tflops")
        out += [Peak(unit, p, seen[p], source) for p in PRECISIONS if p in seen]
    if not out:
        raise SymroofError(f"{origin}: [peak] has no [peak.matrix] or [peak.vector] table")
    return tuple(out)


def _level(name: str, table: Mapping[str, Any], origin: str) -> MemoryLevel:
    where = f"[memory.{name}]"
    source = _source(table, origin, where)
    found = _quantities(table, origin, where, ("bandwidth", "capacity"))
    if not found:
        raise SymroofError(f"{origin}: {where} needs bandwidth_<unit>_per_s or capacity_<unit>")
    return MemoryLevel(name, found.get("bandwidth"), found.get("capacity"), source)


def _link(name: str, table: Mapping[str, Any], origin: str) -> Link:
    where = f"[interconnect.{name}]"
    source = _source(table, origin, where)
    direction = table.get("direction", "both")
    if direction not in DIRECTIONS:
        raise SymroofError(f"{origin}: {where} direction: expected one of "
                           f"{', '.join(DIRECTIONS)} (does the figure count both directions "
                           f"together, or each?), got {direction!r}")
    latency_keys = ("latency_us", "base_latency_us", "latency_source")
    found = _quantities({k: v for k, v in table.items()
                         if k != "direction" and k not in latency_keys}, origin, where,
                        ("bandwidth",))
    if "bandwidth" not in found:
        raise SymroofError(f"{origin}: {where} missing required field bandwidth_<unit>_per_s")
    # alpha of the alpha-beta model: per step of a collective, and once per collective
    lat = {k: _number(table[k], origin, f"{where} {k}") / 10**6
           for k in latency_keys[:2] if k in table}
    lat_source = table.get("latency_source")
    if lat and (not isinstance(lat_source, str) or not lat_source.strip()):
        raise SymroofError(f"{origin}: {where} latency_us needs latency_source (where the "
                           "figure comes from)")
    return Link(name, found["bandwidth"], source, direction, lat.get("latency_us"),
                lat.get("base_latency_us"), lat_source if lat else None)


def _quantities(table: Mapping[str, Any], origin: str, where: str,
                allowed: tuple[str, ...]) -> dict[str, sp.Rational]:
    """Read ``bandwidth_<u>_per_s`` and ``capacity_<u>`` keys, converted to bytes(/s)."""
    found: dict[str, sp.Rational] = {}
    for key, value in table.items():
        if key == "source":
            continue
        quantity, _, suffix = key.partition("_")
        if quantity not in allowed:
            raise SymroofError(f"{origin}: {where} {key}: unknown key; expected "
                               f"{' or '.join(q + '_<unit>' for q in allowed)} and source")
        rate = quantity == "bandwidth"      # bandwidth_<u>_per_s, capacity_<u>
        prefix = suffix.removesuffix("_per_s") if rate and suffix.endswith("_per_s") else None
        prefix = prefix if rate else suffix
        if prefix not in _BYTES:
            expected = [f"{u}_per_s" if rate else u for u in _BYTES]
            raise SymroofError(f"{origin}: {where} {key}: unknown unit suffix {suffix!r}; "
                               f"expected one of {', '.join(expected)}{suggest(suffix, expected)}")
        if quantity in found:
            raise SymroofError(f"{origin}: {where} {key}: {quantity} is given twice")
        found[quantity] = _number(value, origin, f"{where} {key}") * _BYTES[prefix]
    return found


def _number(value: object, origin: str, where: str) -> sp.Rational:
    """An exact positive number from an int, a decimal string, or a TOML float's decimal text."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise SymroofError(f"{origin}: {where}: expected a number or a decimal string like "
                           f"\"989.4\", got {type(value).__name__} {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise SymroofError(f"{origin}: {where}: expected a finite number, got {value!r}")
    if isinstance(value, int) and abs(value) >= 10 ** 30:
        raise SymroofError(f"{origin}: {where}: expected a figure below 1e30 in the "
                           f"key's unit, got an integer of {len(str(abs(value)))} digits")
    text = repr(value) if isinstance(value, float) else str(value).strip()
    match = _DECIMAL.fullmatch(text) if len(text) <= 64 else None
    if match and match.group(2) and abs(int(match.group(2)[1:])) > 30:
        raise SymroofError(f"{origin}: {where}: exponent out of range (|e| <= 30), got {text}")
    if not match:
        raise SymroofError(f"{origin}: {where}: expected a decimal number like \"989.4\", "
                           f"got {value!r}")
    number = sp.Rational(text)      # repr(3.35) == "3.35": the decimal the file wrote
    if number <= 0:
        raise SymroofError(f"{origin}: {where}: expected a positive number, got {value!r}")
    return number


def _table(value: object, where: str, origin: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SymroofError(f"{origin}: {where}: expected a table ([{where}]), "
                           f"got {type(value).__name__} {value!r}")
    return value


def _text(data: Mapping[str, Any], key: str, origin: str) -> str:
    value = data[key]
    if not isinstance(value, str) or not value.strip():
        raise SymroofError(f"{origin}: {key}: expected a non-empty string, got {value!r}")
    return value


def _source(table: Mapping[str, Any], origin: str, where: str) -> str:
    if "source" not in table:
        raise SymroofError(f"{origin}: {where} missing required field 'source' (where the figures "
                           f"come from: document, table or page)")
    return _text(table, "source", f"{origin}: {where}")


def _known(table: Mapping[str, Any], keys: tuple[str, ...], origin: str, where: str) -> None:
    for key in table:
        if key not in keys:
            raise SymroofError(f"{origin}: {where}: unknown key {key!r}; expected one of "
                               f"{', '.join(keys)}{suggest(key, keys)}")
