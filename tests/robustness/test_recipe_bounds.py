"""Claim recipes meet the command line's budget, domains and units (issue 28).

Each test runs a tiny claim file through ``run_claims`` beside a good claim, and checks
that the bad claim becomes an error naming the file, the line, the claim id and the
field (and what was expected), while the good claim is still computed.
"""

from __future__ import annotations

import re

import pytest

from symroof import budget
from symroof.verify import parse_claims, run_claims
from symroof.verify import recipe as recipe_module

HEAD = '''title = "t"

[symbols]
peak = "quantity"

[[document]]
id = "0"
file = "0.txt"
title = "d"
'''

GOOD = '''
[[claim]]
id = "good"
document = "0"
section = "s"
quote = "q"
quantity = "a square GEMM's intensity"
unit = "FLOP/B"
claimed = 2731
rounding = {sig = 4}
value = {workload = {builder = "gemm", args = ["n", "n", "n"]}, q = "I"}
subs = {n = 8192, b = 2}
'''


def claim(cid: str, body: str, unit: str = "FLOP/B", claimed: str = "claimed = 1") -> str:
    return f'''
[[claim]]
id = "{cid}"
document = "0"
section = "s"
quote = "q"
quantity = "x"
unit = "{unit}"
{claimed}
{body}
'''


def run(*claims: str, path: str = "bad.toml"):
    """The results by id of a file holding ``claims`` and then the good claim."""
    text = HEAD + "".join(claims) + GOOD
    outcome = run_claims(parse_claims(text, path))
    by_id = {r.claim.id: r for r in outcome.results}
    assert by_id["good"].status == "match", by_id["good"].message
    return by_id, text


def line_of(text: str, cid: str, field: str) -> int:
    """The 1-based line of ``field = `` in claim ``cid`` (or its [[claim]] header)."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln == f'id = "{cid}"')
    for i in range(start, len(lines)):
        if re.match(rf"{re.escape(field)}\s*=", lines[i]) or lines[i].startswith(
                f"[claim.{field}"):
            return i + 1
        if i > start and lines[i].startswith("[[claim"):
            break
    return start  # the header's line


def assert_error(by_id, text, cid: str, field: str, *fragments: str) -> str:
    r = by_id[cid]
    assert r.status == "error", (r.status, r.derived)
    line = line_of(text, cid, field)
    assert r.message.startswith(f"bad.toml:{line}: claim {cid!r} field {field!r}"), r.message
    for f in fragments:
        assert f in r.message, (f, r.message)
    assert "internal error" not in r.message
    return r.message


# -- bounds ---------------------------------------------------------------------------


def test_a_chain_of_let_bindings_cannot_compose_past_the_degree_limit():
    # each text is small and of degree 8; composed, a3 is of degree 8**3 (the old
    # interpreter expanded it for 80 s into a MemoryError)
    body = '''kind = "exercise"
[claim.value]
let.a = "(B + S + D + 1)**8"
let.a2 = "a**8 + a"
let.a3 = "a2**8 + a2"
expr = "a3/(a3 + 1)"
'''
    by_id, text = run(claim("chain", body, unit="-", claimed=""))
    message = assert_error(by_id, text, "chain", "value", ".let.a2", "degree 64 in B",
                           "more than the limit of 16", "--budget degree=N")
    assert "a3" not in message   # refused at the first binding past the limit


def test_a_let_binding_past_the_digits_limit_is_refused_before_it_is_computed():
    # each text is within the parser's limits (exponents <= 64); composed, x3 = 2**262144
    body = '''[claim.value]
let.x = "2**64"
let.x2 = "x**64"
let.x3 = "x2**64"
expr = "x3"
'''
    by_id, text = run(claim("digits", body, unit="-", claimed="claimed = 1"))
    assert_error(by_id, text, "digits", "value", ".let.x3", "78,9", "digits",
                 "limit of 4,000", "--budget digits=N")


def test_work_that_never_ends_in_a_recipe_is_stopped_at_the_seconds_limit_and_named():
    # within the size and degree limits, but cancelling it expands (17 symbols)**16: about
    # 6e8 terms, which no machine finishes; the guard ends it and names the step
    names = "B + S + D + H + L + M + N + K + n + V + P + T + C + t + G + d_h + d_ff"
    body = f'''kind = "exercise"
[claim.value]
let.a = "({names} + 1)**16"
expr = "a/(a + 1)"
'''
    with budget.limits(seconds=3.0, memory_mib=512):
        by_id, text = run(claim("endless", body, unit="-", claimed=""))
    message = assert_error(by_id, text, "endless", "value", "cancelling")
    assert ("stopped at the seconds limit" in message or "MiB" in message), message


def test_a_workload_built_from_heavy_sizes_runs_in_the_guard():
    names = "B + S + D + H + L + M + N + K + n + V + P + T + C + t + G + d_h + d_ff"
    body = f'''[claim.value]
let.a = "({names} + 1)**16"
let.w.workload = {{builder = "gemm", args = ["a", "a + 1", "a + 2"]}}
let.w.q = "I"
expr = "w"
'''
    with budget.limits(seconds=3.0, memory_mib=512):
        by_id, text = run(claim("heavy", body))
    message = assert_error(by_id, text, "heavy", "value", ".let.w.workload")
    assert "seconds limit" in message or "MiB" in message, message


@pytest.mark.parametrize("rounding, fragment", [
    ("{sig = 100000000}", "expected an integer from 1 to 40"),
    ("{sig = 0}", "expected an integer from 1 to 40"),
    ("{decimals = 1000000000}", "expected an integer from 0 to 40"),
    ("{rel = inf}", "expected a positive finite number"),
    ("{abs = nan}", "expected a positive finite number"),
])
def test_rounding_parameters_have_ranges(rounding, fragment):
    body = f'''rounding = {rounding}
value = {{workload = {{builder = "gemm", args = [1, 2, 3]}}, q = "F"}}
'''
    by_id, text = run(claim("rounding", body, unit="FLOP", claimed="claimed = 12"))
    assert_error(by_id, text, "rounding", "rounding", fragment)


def test_a_derived_number_past_the_digits_limit_is_an_error():
    body = '''value = {expr = "2**n"}
subs = {n = 1048576}
'''
    by_id, text = run(claim("big-subs", body, unit="-", claimed="claimed = 1"))
    assert by_id["big-subs"].status == "error"
    assert_error(by_id, text, "big-subs", "value", "2**1048576 would have about 315,653 digits",
                 "limit of 4,000")


# -- domains --------------------------------------------------------------------------


@pytest.mark.parametrize("subs, fragment", [
    ("{M = -4, N = 2, K = 3}", "value of M: expected a positive integer (a dimension), got -4"),
    ("{M = 0, N = 2, K = 3}", "value of M: expected a positive integer (a dimension), got 0"),
    ("{M = 2.5, N = 2, K = 3}", "value of M: expected a positive integer (a dimension), got 5/2"),
    ("{M = 2, N = 2, K = 3, b = -2}", "value of b: expected a positive number, got -2"),
    ("{M = 2, N = 2, K = 3, b = 0}", "value of b: expected a positive number, got 0"),
])
def test_claim_substitutions_have_the_command_lines_domains(subs, fragment):
    body = f'''rounding = {{rel = 0.5}}
value = {{workload = {{builder = "gemm", args = ["M", "N", "K"]}}, q = "I"}}
subs = {subs}
'''
    by_id, text = run(claim("domain", body))
    assert_error(by_id, text, "domain", "subs", fragment)


@pytest.mark.parametrize("devices", ["1.5", "0", "-2", '"n"', "2.0"])
def test_a_device_count_is_a_positive_integer(devices):
    body = f'''rounding = {{rel = 0.5}}
value = {{roofline = {{workload = {{builder = "gemm", args = [1024, 1024, 1024]}}, hardware = "h100-sxm", devices = {devices}}}, q = "time_s"}}
'''
    by_id, text = run(claim("devices", body, unit="s"))
    assert_error(by_id, text, "devices", "value", "devices")


@pytest.mark.parametrize("tp", ["1.5", "true", "0", "2.0"])
def test_capacity_tp_is_a_positive_integer(tp):
    body = f'''rounding = {{rel = 0.5}}
value = {{capacity = {{model = "llama-3-8b", hardware = "h100-sxm", context = 8192, tp = {tp}}}}}
'''
    by_id, text = run(claim("tp", body, unit="sequences"))
    assert_error(by_id, text, "tp", "value", ".tp", "positive integer")


def test_training_false_as_a_string_is_an_error_not_true():
    body = '''value = {memory = {model = "seed-6.4b", batch = 1, context = 8, training = "false"}, q = "gradients"}
'''
    by_id, text = run(claim("training", body, unit="B", claimed="claimed = 0"))
    assert_error(by_id, text, "training", "value", ".training", "expected true or false",
                 "'false'")


def test_an_unknown_tensor_kind_is_an_error_not_zero():
    body = '''value = {workload = {builder = "gemm", args = [2, 2, 3]}, q = "Q_weights"}
'''
    # a kind the convention does not count still reads 0 bytes
    uncounted = '''value = {workload = {builder = "gemm", args = [2, 2, 3]}, q = "Q_kv_cache"}
rounding = {exact = true}
'''
    by_id, text = run(claim("kind", body, unit="B", claimed="claimed = 0"),
                      claim("uncounted", uncounted, unit="B", claimed="claimed = 0"))
    assert_error(by_id, text, "kind", "value", "unknown tensor kind 'weights'",
                 "did you mean 'weight'")
    assert by_id["uncounted"].status == "match"


@pytest.mark.parametrize("value, unit, fragment", [
    ('{workload = {builder = "gemm", args = [1, 2, 3]}, q = "F", bogus = 1}', "FLOP",
     "unknown key 'bogus'; a workload node takes workload, q, subs"),
    ('{workload = {builder = "gemm", args = [1, 2, 3], argz = [1]}, q = "F"}', "FLOP",
     "unknown key 'argz' (did you mean 'args'"),
    ('{expr = "2*M", q = "F"}', "-", "unknown key 'q'; a expr node takes expr, subs"),
    ('{hardware = "h100-sxm", q = "peak", precisoin = "fp8"}', "FLOP/s",
     "unknown key 'precisoin'"),
    ('{roofline = {workload = {builder = "gemm", args = [1, 2, 3]}, hardware = "l4", '
     'device = 2}, q = "time_s"}', "s", "unknown key 'device' (did you mean 'devices'"),
    ('{memory = {model = "seed-6.4b", batch = 1, context = 8, trainig = true}, q = "total"}',
     "B", "unknown key 'trainig' (did you mean 'training'?)"),
])
def test_unknown_keys_on_a_recipe_node_are_errors(value, unit, fragment):
    body = f"value = {value}\n"
    by_id, text = run(claim("keys", body, unit=unit, claimed="claimed = 12"))
    assert by_id["keys"].status == "error"
    assert fragment in by_id["keys"].message, by_id["keys"].message
    assert by_id["keys"].message.startswith(f"bad.toml:{line_of(text, 'keys', 'value')}: ")


def test_a_substitution_for_a_symbol_the_recipe_does_not_use_is_an_error():
    body = '''value = {workload = {builder = "gemm", args = ["M", "N", "K"]}, q = "F"}
subs = {M = 1, N = 2, K = 3, B = 4}
'''
    # attention's intensity cancels D and H, but they are the claim's inputs (seed 000)
    cancelled = '''rounding = {exact = true}
value = {workload = {builder = "attention", args = ["S", "D", "H"]}, q = "I"}
subs = {S = 4096, D = 4096, H = 32, b = 2}
'''
    by_id, text = run(claim("unused", body, unit="FLOP", claimed="claimed = 12"),
                      claim("cancelled", cancelled, claimed="claimed = 1024"))
    assert_error(by_id, text, "unused", "subs", "'subs'.B", "the recipe does not use B",
                 "K, M, N")
    assert by_id["cancelled"].status == "match", by_id["cancelled"].message


def test_a_node_substitution_for_a_symbol_it_does_not_use_is_an_error():
    body = '''value = {workload = {builder = "gemm", args = ["M", "N", "K"]}, q = "F", subs = {S = 2}}
'''
    by_id, text = run(claim("node-unused", body, unit="FLOP", claimed="claimed = 12"))
    assert_error(by_id, text, "node-unused", "value", "subs.S", "does not use S")


def test_a_node_substitution_evaluates_at_a_point_but_never_at_a_negative_size():
    base = '''kind = "exercise"
[claim.value]
let.P1.model = {transformer = {layers = 1, d_model = "D", heads = "H", d_ff = "d_ff"}}
let.P1.q = "params"
let.P0.model = {transformer = {layers = 1, d_model = "D", heads = "H", d_ff = "d_ff"}}
let.P0.q = "params"
'''
    ok = base + 'let.P0.subs = {d_ff = 0}\nexpr = "P1 - P0"\n'
    bad = base + 'let.P0.subs = {d_ff = -1}\nexpr = "P1 - P0"\n'
    by_id, text = run(claim("zero-point", ok, unit="parameters", claimed=""),
                      claim("negative-point", bad, unit="parameters", claimed=""))
    assert str(by_id["zero-point"].derived) == "2*D*d_ff"
    assert_error(by_id, text, "negative-point", "value", "subs.d_ff", "got -1")


# -- units ----------------------------------------------------------------------------


def test_a_ridge_claimed_in_tflop_per_s_is_an_error_naming_the_units_that_fit():
    body = '''rounding = {sig = 3}
value = {hardware = "h100-sxm", q = "ridge"}
'''
    by_id, text = run(claim("ridge", body, unit="TFLOP/s", claimed="claimed = 295"))
    assert_error(by_id, text, "ridge", "unit", "'TFLOP/s' measures a compute rate",
                 "the value is an intensity", "expected a unit such as FLOP/B, OP/B")


def test_a_time_claimed_in_gigabytes_is_an_error():
    body = '''rounding = {rel = 0.5}
value = {roofline = {workload = {builder = "gemm", args = [1024, 1024, 1024]}, hardware = "h100-sxm"}, q = "time_s"}
'''
    by_id, text = run(claim("time", body, unit="GB"))
    assert_error(by_id, text, "time", "unit", "'GB' measures bytes", "the value is a time",
                 "s, h, days")


def test_units_that_fit_their_quantity_pass_and_one_that_does_not_is_refused():
    bodies = {
        "peak-tflops": ('value = {hardware = "h100-sxm", q = "peak"}\nrounding = {sig = 3}',
                        "TFLOP/s", "claimed = 989"),
        "bw": ('value = {hardware = "h100-sxm", q = "bandwidth"}\nrounding = {sig = 3}',
               "TB/s", "claimed = 3.35"),
        "f-per-token": ('value = {workload = {builder = "gemm", args = [1, 2, 3]}, q = "F"}\n'
                        'rounding = {exact = true}', "FLOP/token", "claimed = 12"),
        "limit": ('value = {limit = {workload = {builder = "gemm", args = ["M", "n", "n"]}, '
                  'q = "I"}, var = "n"}\nsubs = {M = 4, b = 2}\nrounding = {exact = true}',
                  "FLOP/B", "claimed = 4"),
    }
    wrong = '''rounding = {sig = 3}
value = {limit = {hardware = "h100-sxm", q = "ridge"}, var = "n"}
'''
    by_id, text = run(*(claim(k, b, unit=u, claimed=c) for k, (b, u, c) in bodies.items()),
                      claim("limit-of-ridge", wrong, unit="TB/s", claimed="claimed = 295"))
    assert_error(by_id, text, "limit-of-ridge", "unit", "'TB/s' measures a bandwidth",
                 "the value is an intensity")
    for k in bodies:
        assert by_id[k].status == "match", (k, by_id[k].message, by_id[k].derived)


# -- one bad claim never stops the others ---------------------------------------------


@pytest.mark.parametrize("body, unit", [
    ('value = {theta = {expr = "S"}, small = [["S"]]}', "-"),
    ('value = {crossover = {lhs = "n", rhs = "2", var = "n"}, index = "first"}', "-"),
    ('value = {workload = {builder = "gemm", args = [1, 2, 3], fuse = [1]}, q = "F"}', "FLOP"),
    ('value = {workload = {graph = [["input", "x", 5]]}, q = "F"}', "FLOP"),
    ('value = {workload = {graph = [["gemm", "y"]]}, q = "F"}', "FLOP"),
    ('value = {min = "notalist"}', "-"),
    ('value = {over_hardware = ["h100-sxm"], node = {hardware = "$hw"}, reduce = "median"}',
     "FLOP/B"),
])
def test_malformed_recipes_are_named_errors_of_their_claim(body, unit):
    by_id, text = run(claim("malformed", body, unit=unit))
    r = by_id["malformed"]
    assert r.status == "error"
    assert r.message.startswith(f"bad.toml:{line_of(text, 'malformed', 'value')}: claim "
                                "'malformed' field 'value'"), r.message
    assert "internal error" not in r.message


def test_any_exception_inside_a_recipe_becomes_that_claims_error(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("a bug deep in a builder")
    monkeypatch.setattr("symroof.workloads.basic.gemv", broken)
    body = 'value = {workload = {builder = "gemv", args = [2, 3]}, q = "F"}'
    by_id, text = run(claim("bug", body, unit="FLOP"))
    r = by_id["bug"]
    assert r.status == "error"
    assert r.message.startswith(f"bad.toml:{line_of(text, 'bug', 'value')}: claim 'bug' "
                                "field 'value'")
    assert "RuntimeError: a bug deep in a builder" in r.message


def test_a_library_error_is_named_by_file_line_claim_and_field():
    body = 'value = {workload = {builder = "gemm", args = [0, 2, 3]}, q = "F"}'
    by_id, text = run(claim("zero-arg", body, unit="FLOP"))
    # the recipe's args are a Request's fixed values: the one value rule's words, as on
    # the command line (--set M=0)
    assert_error(by_id, text, "zero-arg", "value",
                 "workload.args M: expected a positive integer (a dimension), got 0")


def test_a_bad_symbol_declaration_fails_only_the_claims_that_use_it():
    head = HEAD.replace('peak = "quantity"', 'peak = "quantity"\nx = "banana"\nB = "quantity"')
    body_x = 'value = {expr = "2*x"}\nkind = "exercise"'
    text = head + claim("uses-x", body_x, unit="-", claimed="") + GOOD
    outcome = run_claims(parse_claims(text, "bad.toml"))
    by_id = {r.claim.id: r for r in outcome.results}
    assert by_id["good"].status == "match"
    assert by_id["uses-x"].status == "error"
    assert "symbol 'x' is not declared" in by_id["uses-x"].message
    assert "expected \"dimension\" or \"quantity\", got 'banana'" in by_id["uses-x"].message


# -- charts ---------------------------------------------------------------------------

CHARTS = '''
[[chart]]
id = "bad-points"
kind = "roofline"
document = "0"
hardware = "h100-sxm"
points = [{claim = "good"}, 5]

[[chart]]
id = "good-chart"
kind = "roofline"
document = "0"
hardware = "h100-sxm"
points = [{claim = "good"}]

[[chart]]
id = "bad-range"
kind = "curve"
document = "0"
claim = "good"
x = "n"
y = "I"
from = 0
'''


def test_a_bad_chart_is_an_error_of_its_own_and_the_rest_are_reported():
    from symroof.present.claim_charts import render_charts

    outcome = run_claims(parse_claims(HEAD + GOOD + CHARTS, "bad.toml"))
    by_id = {r.claim.id: r for r in outcome.results}
    assert by_id["good"].status == "match"
    assert [c.id for c in outcome.source.charts] == ["good-chart"]
    assert [c.id for c in render_charts(outcome)] == ["good-chart"]
    errors = {k: r.message for k, r in by_id.items() if k.startswith("chart:")}
    assert set(errors) == {"chart:bad-points", "chart:bad-range"}
    assert errors["chart:bad-points"].startswith("bad.toml:")
    assert "chart 'bad-points' field 'points'[1]" in errors["chart:bad-points"]
    assert "field 'from'" in errors["chart:bad-range"]
    assert outcome.failed


def test_the_seed_appendix_still_runs_without_errors(seed_outcome):
    outcome = seed_outcome
    assert "error" not in outcome.counts, [r.message for r in outcome.results
                                           if r.status == "error"][:3]
    assert len(outcome.source.charts) >= 5
