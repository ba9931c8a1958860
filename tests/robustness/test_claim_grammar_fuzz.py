"""Claims generated from the recipe grammar (issue 28), not mutations of the seed file.

Every claim file here is built from :data:`symroof.verify.grammar.NODE_KEYS` and
``SPEC_KEYS``: every kind of node with every key it takes, nested nodes, each chart
field, and at each place sometimes a wrong type (a table for a number, a string for a
list, true for a count), a value out of range (negative, zero, fractional, huge, nan,
inf), an unknown key or a missing one. Each file goes through ``parse_claims`` and
``run_claims``, its charts through ``render_charts`` and its results through
``claims_text``. The only outcomes allowed: a result for every claim, or an error of
that claim (a SymroofError's message naming the file, line, claim and field, never an
"internal error", which is what any other exception becomes), or a SymroofError for the
whole file at parse time; and no derived number that is not finite.

Seeded (``random.Random(SEED)``) and bounded by the number of files, not by the clock;
the solvers' guard runs at a 1 s limit during the run. ``pytest -s`` prints how many
claims were refused and how many ran, by kind of node.
"""

from __future__ import annotations

import json
import math
import os
import random
from collections import Counter
from typing import Any

import pytest
import sympy as sp

from symroof import budget
from symroof.errors import SymroofError
from symroof.verify import parse_claims, run_claims
from symroof.verify.grammar import NODE_KEYS, SPEC_KEYS, dimension_of
from symroof.verify.units import BASE_UNITS, UNIT_DIMENSIONS

SEED = 0x28_F022
FILES = int(110 * float(os.environ.get("SYMROOF_FUZZ_SCALE", "1")))
CLAIMS_PER_FILE = 4
GUARD_S = 1.0

SYMBOLS = ["B", "S", "D", "H", "L", "M", "N", "K", "n", "b", "d_ff", "peak", "bw", "x"]
HARDWARE = ["h100-sxm", "l4", "a100-80gb", "tpu-v1"]
MODELS = ["seed-6.4b", "llama-3-8b", "gpt2"]
PRECISIONS = ["bf16", "fp8", "fp32", "int4"]
# names no table knows, used where a wrong value is drawn
BAD_NAMES = ["nonesuch", "$hw", "fp5", "Q_bogus", "op_X:up", "op_Q:x", "speed", "zz", "none"]
Q_NAMES = {
    "workload": ["F", "Q", "I", "F_weights", "F_attention", "tokens", "Q_weight",
                 "Q_kv_cache", "Q_activation", "op_F:up"],
    "model": ["params", "kv_bytes_per_token", "weight_bytes_total", "layers", "vocab"],
    "hardware": ["peak", "ridge", "bandwidth", "capacity"],
    "memory": ["weights", "kv_cache", "activations", "gradients", "optimizer_state", "total"],
    "roofline": ["time_s", "compute_time_s", "memory_time_s", "time_serial_s",
                 "tokens_per_s", "tokens_per_s_per_user", "attainable", "ridge", "margin",
                 "flops", "bytes"],
    "curve": ["expr", "invariant"],
}


class Gen:
    """Random recipe parts; ``bad`` is the chance of a wrong value at any one place."""

    def __init__(self, rng: random.Random, bad: float) -> None:
        self.rng, self.bad = rng, bad

    def wrong(self) -> Any:
        return self.rng.choice([True, -1, 0, 2.5, math.nan, math.inf, -math.inf, 10**18,
                                "", "not an expr", "2**(2**64)", [], [1, "x"], {"k": 1},
                                {"expr": "1/0"}, "B/0", "-B", *BAD_NAMES])

    def maybe(self, good: Any) -> Any:
        return self.wrong() if self.rng.random() < self.bad else good

    def size(self) -> Any:
        r = self.rng
        return self.maybe(r.choice([r.choice(SYMBOLS[:9]), r.randint(1, 4096),
                                    f"{r.choice(SYMBOLS[:9])} + {r.randint(1, 9)}",
                                    f"{r.randint(1, 8)}*{r.choice(SYMBOLS[:9])}",
                                    f"({r.choice(SYMBOLS[:4])} + 1)**{r.randint(1, 6)}"]))

    def number(self) -> Any:
        return self.maybe(self.rng.choice([1, 2, 8, 64, 512, 4096, 8192]))

    def expr(self) -> Any:
        r = self.rng
        a, c = r.choice(SYMBOLS), r.choice(SYMBOLS)
        return self.maybe(r.choice([f"{a}*{c}", f"{a}/({c} + 1)", f"2*{a} + {c}**2",
                                    f"Min({a}, {c})", f"sqrt({a})", f"{a}**{r.randint(1, 20)}",
                                    f"({a} + {c})**{r.randint(2, 12)}", str(r.randint(0, 99)),
                                    f"exp({a})", f"log({a})", f"floor({a}/3)"]))

    def model(self) -> Any:
        r = self.rng
        if r.random() < 0.5:
            return self.maybe(r.choice(MODELS))
        table: dict[str, Any] = ({"preset": r.choice(MODELS)} if r.random() < 0.5 else
                                 {"transformer": {"layers": self.size(), "d_model": self.size(),
                                                  "heads": self.size()}})
        for key in SPEC_KEYS["model"][2:]:
            if r.random() < 0.2:
                table[key] = self.maybe({"replace": {"d_ff": self.size()}, "bytes": self.size(),
                                         "weights": r.choice(PRECISIONS),
                                         "kv_cache": r.choice(PRECISIONS),
                                         "activations": r.choice(PRECISIONS)}[key])
        return self.extra(table)

    def extra(self, table: dict[str, Any]) -> dict[str, Any]:
        """Sometimes an unknown key, sometimes a key missing."""
        r = self.rng
        if r.random() < self.bad / 2:
            table["bogus_" + str(r.randint(0, 9))] = 1
        if table and r.random() < self.bad / 3:
            table.pop(r.choice(list(table)))
        return table

    def workload(self, depth: int, numeric: bool = False) -> Any:
        r = self.rng
        builder = self.maybe(r.choice(["gemm", "gemv", "elementwise", "attention", "conv2d",
                                       "decode", "prefill", "training"]))
        nargs = {"gemm": 3, "gemv": 2, "elementwise": 1, "attention": 3, "conv2d": 6,
                 "decode": 2, "prefill": 2, "training": 2}.get(str(builder), 1)
        if r.random() < 0.15:
            spec: dict[str, Any] = {"graph": [["input", "x", [self.size(), self.size()]],
                                              ["weight", "w", [self.size(), self.size()]],
                                              ["gemm", "y", "x", "w"],
                                              ["elementwise", "z", ["y"], self.size()],
                                              ["output", "z"]][:r.randint(1, 5)]}
        else:
            spec = {"builder": builder, "args": [self.number() if numeric else self.size()
                                                 for _ in range(nargs)]}
            if builder in ("decode", "prefill", "training") or r.random() < 0.1:
                spec["model"] = self.model()
            if r.random() < 0.2:
                spec["options"] = self.maybe({r.choice(["causal", "fused", "traffic", "zz"]):
                                              r.choice([True, False, "seed", 3])})
            if r.random() < 0.1:
                spec["kwargs"] = self.maybe({r.choice(["flop_count", "past", "q"]): self.size()})
        if r.random() < 0.1:
            spec["tile"] = self.maybe({r.choice(SYMBOLS[:9]): self.size()})
        if r.random() < 0.1:
            spec["fuse"] = self.maybe([["up", "gelu"]])
        if r.random() < 0.1:
            spec["convention"] = self.maybe({"flop_count": r.choice(["one_per_mac", "x", 2])})
        return self.extra(spec)

    def node(self, depth: int = 0) -> Any:
        r = self.rng
        if depth > 1 + (r.random() < 0.3) or r.random() < 0.15:
            return self.expr()
        kind = r.choice(list(NODE_KEYS))
        node: dict[str, Any] = {}
        sub = lambda: self.node(depth + 1)  # noqa: E731
        if kind == "let":
            names = [f"v{i}" for i in range(r.randint(1, 3))]
            node["let"] = {n: sub() for n in names}
            node["expr"] = self.maybe(" + ".join(names) if r.random() < 0.7 else
                                      f"{names[0]}**{r.randint(2, 20)}")
        elif kind == "expr":
            node["expr"] = self.expr()
        elif kind == "workload":
            node["workload"] = self.workload(depth)
        elif kind == "model":
            node["model"] = self.model()
        elif kind == "hardware":
            node["hardware"] = self.maybe(r.choice(HARDWARE))
            for key in ("precision", "unit", "level", "ops_per_mac"):
                if r.random() < 0.25:
                    node[key] = self.maybe({"precision": r.choice(PRECISIONS),
                                            "unit": r.choice(["matrix", "vector", "x"]),
                                            "level": r.choice(["hbm", "l2", "x"]),
                                            "ops_per_mac": r.choice([1, 2, 3])}[key])
        elif kind == "memory":
            node["memory"] = self.extra({"model": self.model(), "batch": self.size(),
                                         "context": self.size(),
                                         "training": self.maybe(r.choice([True, False]))})
        elif kind == "capacity":
            node["capacity"] = self.extra({"model": self.model(),
                                           "hardware": self.maybe(r.choice(HARDWARE)),
                                           "context": self.size(),
                                           "tp": self.maybe(r.choice([1, 2, 4, 8])),
                                           "precision": self.maybe(r.choice(PRECISIONS))})
        elif kind == "roofline":
            spec = {"workload": self.workload(depth, numeric=r.random() < 0.7),
                    "hardware": self.maybe(r.choice(HARDWARE))}
            if r.random() < 0.5:
                spec["subs"] = self.maybe({r.choice(SYMBOLS): self.size()})
            if r.random() < 0.3:
                spec["devices"] = self.maybe(r.choice([1, 2, 8]))
            if r.random() < 0.3:
                spec["precision"] = self.maybe(r.choice(PRECISIONS))
            node["roofline"] = self.extra(spec)
        elif kind == "roofline_formula":
            leaf = (lambda: self.maybe(r.choice(["F", "Q", "peak", "bw", "2*B", 1000, 10**12])))
            node["roofline_formula"] = self.extra({k: sub() if r.random() < 0.2 else leaf()
                                                   for k in ("F", "Q", "peak", "bandwidth",
                                                             "tokens")})
        elif kind == "limit":
            node["limit"] = sub()
            node["var"] = self.maybe(r.choice(SYMBOLS[:9]) if r.random() < 0.8 else
                                     [r.choice(SYMBOLS[:9]), r.choice(SYMBOLS[:9])])
            if r.random() < 0.3:
                node["to"] = self.maybe(r.choice(["oo", 0, "1"]))
        elif kind in ("crossover", "curve"):
            v, w = r.sample(SYMBOLS[:9], 2)
            keys = ({"lhs": sub(), "rhs": sub()} if r.random() < 0.3 else
                    {"lhs": self.maybe(f"{v}**2 + {w}"), "rhs": self.maybe(f"{r.randint(1, 9)}*{v}*{w}")})
            if kind == "crossover":
                keys["var"] = self.maybe(v if r.random() < 0.8 else r.choice(SYMBOLS[:9]))
            else:
                keys["x"], keys["y"] = self.maybe(w), self.maybe(v)
            node[kind] = self.extra(keys)
            if r.random() < 0.3:
                node["index"] = self.maybe(r.randint(0, 2))
        elif kind == "theta":
            node["theta"] = sub()
            if r.random() < 0.4:
                node["small"] = self.maybe([[r.choice(SYMBOLS[:9]), r.choice(SYMBOLS[:9])]])
        elif kind == "sensitivity":
            node["sensitivity"] = sub()
            node["var"] = self.maybe(r.choice(SYMBOLS[:9]))
        elif kind == "operation":
            name = r.choice(["tile_for_ridge", "waves", "gemm_io_lower_bound",
                             "inner_loop_intensity", "elementwise_flops.gelu"])
            node["operation"] = self.maybe(name)
            arity = {"tile_for_ridge": 2, "waves": 2, "gemm_io_lower_bound": 4,
                     "inner_loop_intensity": 3}.get(name, 0)
            if arity or r.random() < self.bad:
                node["args"] = self.maybe([self.size() if r.random() < 0.8 else sub()
                                           for _ in range(arity)])
        elif kind in ("min", "max"):
            node[kind] = self.maybe([sub() for _ in range(r.randint(1, 3))])
        else:
            node["over_hardware"] = self.maybe(r.sample(HARDWARE[:5], r.randint(1, 3)))
            node["node"] = {"hardware": "$hw", "q": r.choice(Q_NAMES["hardware"])}
            if r.random() < 0.3:
                node["reduce"] = self.maybe(r.choice(["min", "max"]))
        if "q" in NODE_KEYS[kind] and kind in Q_NAMES and r.random() < 0.8:
            node["q"] = self.maybe(r.choice(Q_NAMES[kind]))
        if r.random() < 0.15:
            node["subs"] = self.maybe({r.choice(SYMBOLS): self.size()})
        return self.extra(node)

    def claim(self, i: int) -> dict[str, Any]:
        r = self.rng
        unit = r.choice(list(BASE_UNITS))
        if r.random() < 0.3:
            unit = r.choice(["G", "T", "m", "Ki", ""]) + r.choice(["FLOP", "B", "s", "FLOP/s"])
        value = self.node()
        dim = dimension_of(value)
        if dim is not None and r.random() > self.bad:  # a unit that fits, mostly
            unit = r.choice([u for u, d in UNIT_DIMENSIONS.items() if d == dim])
        c: dict[str, Any] = {"id": f"c{i}", "document": "0", "section": "s", "quote": "q",
                             "quantity": "x", "unit": self.maybe(unit), "value": value}
        choice = r.random()
        symbolic = isinstance(value, dict) and any(
            k in value for k in ("crossover", "curve", "roofline_formula", "theta", "limit",
                                 "sensitivity", "let", "expr"))
        if choice < (0.8 if symbolic else 0.4):
            c["kind"] = "exercise"
        elif choice < 0.4:
            c["claimed_formula"] = self.expr()
            c["rounding"] = {"exact": True}
        else:
            c["claimed"] = self.maybe(r.choice([1, 2731, 0.25, 6.06, 10**9]))
            rule = r.choice(["exact", "sig", "decimals", "rel", "abs", "orders", "at_most"])
            value = {"exact": True, "at_most": True, "sig": r.randint(1, 6),
                     "decimals": r.randint(0, 4), "rel": 0.05, "abs": 1, "orders": 1}[rule]
            c["rounding"] = {rule: self.maybe(value)}
        if r.random() < 0.3:
            c["subs"] = {r.choice(SYMBOLS): self.size() for _ in range(r.randint(1, 3))}
        if r.random() < 0.1:
            c["alternatives"] = [{"label": "alt", "value": self.node(1),
                                  "subs": self.maybe({r.choice(SYMBOLS): self.size()})}]
        return c

    def chart(self, i: int, claims: list[str]) -> dict[str, Any]:
        r = self.rng
        target = r.choice(claims + ["missing"])
        if r.random() < 0.5:
            chart: dict[str, Any] = {"id": f"chart{i}", "kind": "roofline", "document": "0",
                                     "hardware": self.maybe(r.choice(HARDWARE[:5])),
                                     "precisions": self.maybe([r.choice(PRECISIONS)]),
                                     "points": self.maybe([{"claim": target, "label": "p"}])}
        else:
            chart = {"id": f"chart{i}", "kind": self.maybe("curve"), "document": "0",
                     "claim": target, "x": self.maybe("n" if r.random() < 0.7 else
                                                      r.choice(SYMBOLS[:9])),
                     "y": self.maybe("y"), "from": self.maybe(r.choice([1, 0.5, 16])),
                     "to": self.maybe(r.choice([1000, 64, 2])),
                     "marks": self.maybe([{"claim": target, "x": r.choice([2, 8])}])}
        for key in ("title", "after"):
            if r.random() < 0.3:
                chart[key] = self.maybe("t")
        return self.extra(chart)


# -- a TOML writer for the generated data (strings as JSON strings, tables inline) ----


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v) if abs(v) < 2**63 else json.dumps(str(v))
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{json.dumps(str(k))} = {toml_value(x)}" for k, x in v.items()) + "}"


#: Two claims every file ends with, for charts to draw: a number and a formula in n.
FIXED = [{"id": "fixed-number", "document": "0", "section": "s", "quote": "q",
          "quantity": "x", "unit": "FLOP/B", "claimed": 2731, "rounding": {"sig": 4},
          "value": {"workload": {"builder": "gemm", "args": ["n", "n", "n"]}, "q": "I"},
          "subs": {"n": 8192, "b": 2}},
         {"id": "fixed-formula", "document": "0", "section": "s", "quote": "q",
          "quantity": "x", "unit": "FLOP/B", "kind": "exercise",
          "value": {"workload": {"builder": "gemm", "args": ["n", "n", "n"]}, "q": "I"},
          "subs": {"b": 2}}]


def toml_file(claims: list[dict[str, Any]], charts: list[dict[str, Any]]) -> str:
    out = ['title = "fuzz"', "", "[symbols]", 'peak = "quantity"', 'bw = "quantity"',
           'F = "quantity"', 'Q = "quantity"',
           'x = "dimension"', "", "[[document]]", 'id = "0"', 'file = "0.txt"', 'title = "d"']
    for c in claims:
        out += ["", "[[claim]]"] + [f"{json.dumps(k)} = {toml_value(v)}" for k, v in c.items()]
    for ch in charts:
        out += ["", "[[chart]]"] + [f"{json.dumps(k)} = {toml_value(v)}" for k, v in ch.items()]
    return "\n".join(out) + "\n"


# -- the run --------------------------------------------------------------------------


def _finite(value: sp.Expr | None) -> bool:
    if value is None or value.free_symbols:
        return True
    return not value.has(sp.oo, -sp.oo, sp.zoo, sp.nan) and value.is_real is not False


def test_claims_from_the_grammar_end_in_a_result_or_a_named_error():
    from symroof.present.appendix import claims_text
    from symroof.present.claim_charts import render_charts

    rng = random.Random(SEED)
    counts: Counter[str] = Counter()
    kinds: Counter[tuple[str, str]] = Counter()
    failures: list[str] = []
    with budget.limits(seconds=GUARD_S):
        for case in range(FILES):
            gen = Gen(rng, bad=rng.choice([0.0, 0.05, 0.2]))
            claims = [gen.claim(i) for i in range(CLAIMS_PER_FILE)]
            targets = [c["id"] for c in claims + FIXED]
            charts = [gen.chart(i, targets) for i in range(rng.randint(0, 2))]
            text = toml_file(claims + FIXED, charts)
            try:
                source = parse_claims(text, f"fuzz{case}.toml")
            except SymroofError:
                counts["file refused"] += 1
                continue
            except Exception as err:  # noqa: BLE001 - the failure this test looks for
                failures.append(f"case {case}: parse_claims raised {type(err).__name__}: {err}"
                                f"\n{text}")
                continue
            outcome = run_claims(source)
            for r, c in zip(outcome.results, claims):
                kind = next((k for k in NODE_KEYS if isinstance(c["value"], dict)
                             and k in c["value"]), "leaf")
                ran = r.status != "error"
                counts["ran" if ran else "refused"] += 1
                kinds[(kind, "ran" if ran else "refused")] += 1
            for r in outcome.results:
                if r.status == "error" and (not r.message.startswith(f"fuzz{case}.toml:")
                                            or "internal error" in r.message):
                    failures.append(f"case {case} claim {r.claim.id}: {r.message}\n{text}")
                if not (_finite(r.derived) and _finite(r.claimed)):
                    failures.append(f"case {case} claim {r.claim.id}: derived {r.derived}\n{text}")
                for a in r.alternatives:
                    if not _finite(a.derived) or "internal error" in a.message:
                        failures.append(f"case {case} claim {r.claim.id} alternative: "
                                        f"{a.derived} {a.message}\n{text}")
            counts["charts drawn"] += len(outcome.source.charts)
            counts["charts refused"] += sum(r.claim.id.startswith("chart:")
                                            for r in outcome.results)
            try:
                render_charts(outcome)
                json.loads(claims_text(outcome))
            except Exception as err:  # noqa: BLE001 - a chart must fail alone, as an error
                failures.append(f"case {case}: rendering raised {type(err).__name__}: {err}"
                                f"\n{text}")
    print(f"\ngrammar fuzz, {FILES} files: {dict(counts)}")
    for kind in NODE_KEYS:
        print(f"  {kind:18} ran {kinds[(kind, 'ran')]:4}  refused {kinds[(kind, 'refused')]:4}")
    for f in failures[:40]:
        print("FAIL", f.splitlines()[0][:300])
    assert not failures, f"{len(failures)} failure(s); first:\n{failures[0]}"
    # the generator reaches both outcomes, and every kind of node runs at least once
    assert counts["ran"] > FILES // 2 and counts["refused"] > FILES // 2
    assert all(kinds[(k, "ran")] + kinds[(k, "refused")] > 0 for k in NODE_KEYS)
    assert counts["charts drawn"] > 0 and counts["charts refused"] > 0


@pytest.mark.parametrize("value", [math.nan, math.inf, -(10**18), "2**64**64", {"expr": "B"}])
def test_a_claimed_or_subs_value_of_the_wrong_kind_is_refused_by_field(value):
    gen = Gen(random.Random(1), bad=0.0)
    c = gen.claim(0)
    c["value"] = {"expr": "n"}
    c.pop("alternatives", None)
    c["subs"] = {"n": value}
    c["kind"] = "exercise"
    for k in ("claimed", "claimed_formula", "rounding"):
        c.pop(k, None)
    outcome = run_claims(parse_claims(toml_file([c], []), "one.toml"))
    (r,) = outcome.results
    assert r.status == "error"
    assert r.message.startswith("one.toml:") and "field 'subs'" in r.message, r.message
