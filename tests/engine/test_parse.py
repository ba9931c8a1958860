"""Tests for symroof.parse: the safe parser for user-typed expressions."""

from __future__ import annotations

import inspect
import re

import pytest
import sympy as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symroof import parse as parse_module
from symroof.errors import SymroofError
from symroof.parse import (
    MAX_BITS, MAX_DEPTH, MAX_EXPONENT, MAX_LENGTH, parse_assignment, parse_assignments,
    parse_expr,
)
from symroof.symbols import CANONICAL, B, K, M, N, S, b, d_h, quantity


# --- values ---------------------------------------------------------------------------

def test_canonical_symbols_are_the_symbols_module_objects():
    assert parse_expr("2*M*N*K") - 2 * M * N * K == 0
    assert parse_expr("S") is S  # the dimension, never SymPy's S singleton registry
    assert parse_expr("N") is N  # never sympy.N (evalf)
    assert parse_expr("d_h * b") == d_h * b
    assert parse_expr("(2*M*N*K) / (b*(M*K + K*N + M*N))") == \
        2 * M * N * K / (b * (M * K + K * N + M * N))


@pytest.mark.parametrize("name", ["E", "I", "Q", "pi", "oo", "x"])
def test_sympy_builtins_are_unknown_names(name):
    with pytest.raises(SymroofError, match=f"unknown name '{name}'"):
        parse_expr(name)


def test_custom_table_replaces_canonical():
    Q = quantity("Q")
    assert parse_expr("Q/2", {"Q": Q}) == Q / 2
    with pytest.raises(SymroofError, match="unknown name 'M'"):
        parse_expr("M", {"Q": Q})


@pytest.mark.parametrize("text, value", [
    ("1.5e3", 1500), ("0.1", sp.Rational(1, 10)), ("1_000", 1000), ("2.5e-3", sp.Rational(1, 400)),
    (".5", sp.Rational(1, 2)), ("1e5", 100000), ("1_000.25", sp.Rational(4001, 4)),
    ("0.1 + 0.2", sp.Rational(3, 10)), ("4*1024", 4096), ("2**13", 8192), ("-2**2", -4),
    ("2**-1", sp.Rational(1, 2)), ("0x10", 16), ("8k", 8000), ("4Ki", 4096),
    ("1.5Mi", 3 * 2**19), ("2Gi", 2**31), ("1Ti", 2**40), ("1/8k", sp.Rational(1, 8000)),
    ("8k**2", 64 * 10**6), ("  3 ", 3), ("(1 +\n 2)", 3),
])
def test_numbers_are_exact(text, value):
    result = parse_expr(text)
    assert result == value
    assert not result.has(sp.Float)


@pytest.mark.parametrize("text, value", [
    ("sqrt(M)", sp.sqrt(M)), ("log(M)", sp.log(M)), ("log(M, 2)", sp.log(M, 2)),
    ("log2(M)", sp.log(M, 2)), ("exp(1)", sp.E), ("ceil(S/128)", sp.ceiling(S / 128)),
    ("ceiling(S/128)", sp.ceiling(S / 128)), ("floor(7/2)", 3), ("min(M, N)", sp.Min(M, N)),
    ("Max(M, N, 3)", sp.Max(M, N, 3)), ("abs(-3)", 3), ("Abs(M)", M),
    ("ceil(S/128) * 0.5", sp.ceiling(S / 128) / 2),
])
def test_functions(text, value):
    assert parse_expr(text) == value


# --- rejected constructs ----------------------------------------------------------------

@pytest.mark.parametrize("text, fragment", [
    ('os.system("x")', "attribute access '.system' at column 3 is not allowed"),
    ("M.__class__.__bases__", "attribute access '.__class__'"),
    ("M[0]", "subscript 'M[0]'"),
    ('__import__("os")', "unknown function '__import__'"),
    ("lambda: 1", "lambda 'lambda: 1'"),
    ("[x for x in M]", "comprehension"),
    ("sum(x for x in M)", "unknown function 'sum'"),
    ("M < N", "comparison 'M < N'"),
    ('"abc"', 'string "abc"'),
    ("b'x'", "bytes b'x'"),
    ("min(M, key=N)", "keyword argument 'key=N' at column 8"),
    ("max(*M)", "starred argument '*M' at column 5"),
    ("True", "boolean True"),
    ("None", "constant None"),
    ("1j", "complex number 1j"),
    ("M // 2", "operator '//' at column 3 is not allowed (use floor(a/b))"),
    ("M % 2", "operator '%'"),
    ("M ^ 2", "operator '^'"),
    ("M @ N", "operator '@'"),
    ("not M", "operator 'not'"),
    ("~M", "operator '~'"),
    ("M if N else K", "conditional expression"),
    ("(M := 3)", "assignment expression"),
    ("M and N", "boolean operator"),
    ("M, N", "tuple 'M, N'"),
    ("[M]", "list '[M]'"),
    ("{M: 1}", "dict"),
    ('f"{M}"', "f-string"),
    ("M(2)", "unknown function 'M' at column 1 (products need '*')"),
    ("(2)(3)", "call of '2'"),
    ("sqrt", "function 'sqrt' at column 1 must be called"),
    ("foo(M)", "unknown function 'foo'"),
    ("Min()", "Min() at column 1 takes 1+ argument(s), got 0"),
    ("sqrt(M, N)", "sqrt() at column 1 takes 1 argument(s), got 2"),
    ("M + Sx", "unknown name 'Sx' at column 5 (did you mean 'S'?)"),
    ("2M", "invalid syntax"),
    ("8K", "size suffixes are k, Ki, Mi, Gi, Ti"),
    ("M +", "invalid syntax"),
    ("(M", "invalid syntax"),
    ("M = 3", "invalid syntax"),
    ("", "empty expression"),
    ("  \n ", "empty expression"),
    ("M\x00", "character '\\x00' at column 2 is not allowed"),
    ("M + \u00b5", "character '\u00b5' at column 5"),
    ("\uff2d", "character"),  # fullwidth M: no NFKC surprises
    ("(yield)", "yield"),
    ("1/0", "'1/0' at column 1 is undefined or infinite"),
    ("log(0)", "undefined or infinite"),
    ("M/(N-N)", "undefined or infinite"),
    ("sqrt(-1)", "is not real"),
    ("log(-2)", "is not real"),
])
def test_rejected_constructs_name_the_token(text, fragment):
    with pytest.raises(SymroofError) as info:
        parse_expr(text)
    assert fragment in str(info.value)
    assert str(info.value).startswith("expression ")


def test_message_names_the_field_and_maps_columns_through_suffixes():
    with pytest.raises(SymroofError, match=r"^--set B '8k \+ x': unknown name 'x' at column 6"):
        parse_expr("8k + x", what="--set B")
    with pytest.raises(SymroofError, match="unknown name 'x' at column 4"):
        parse_expr("   x")


# --- resource guards --------------------------------------------------------------------

@pytest.mark.parametrize("text, fragment", [
    ("9**9**9**9", "exponent '387420489' in '9**9**9'"),
    ("2**65", "exponent '65'"),
    ("2**(1/100)", "exponent '1/100'"),
    ("(2**64)**64", "too large (numbers are limited to"),
    ("2**64 * 2**64 * 2**64 * 2**64 * 2**64 * 2**64 * 2**64 * 2**64 * 2**64 * 2**64"
     " * 2**64 * 2**64 * 2**64 * 2**64 * 2**64 * 2**64 * 2**64", "too large"),
    ("M**64 * M**64", "exponent '128'"),
    ("((M+1)**64)**64", "exponent '4096'"),
    ("exp(log(3)*2**30)", "exponent '1073741824*log(3)'"),
    ("1e999999999", "number '1e999999999' at column 1 is too large"),
    ("2**M**(2**40)", "exponent"),
    ("-" * 200 + "M", f"nesting deeper than {MAX_DEPTH} levels"),
    ("sqrt(" * 100 + "M" + ")" * 100, "nesting deeper"),
    ("(" * 300 + "M" + ")" * 300, "invalid syntax"),
    ("M" * (MAX_LENGTH + 1), f"longer than {MAX_LENGTH} characters"),
])
def test_resource_guards_fail_fast_and_cleanly(text, fragment, numeric_powers):
    with pytest.raises(SymroofError) as info:
        parse_expr(text)
    assert fragment in str(info.value)
    assert len(str(info.value)) < 300  # long input is shortened in messages
    # refused before the work: no power past the parser's bounds was computed on the way
    assert all(bits <= POWER_BITS for bits in numeric_powers), numeric_powers


#: The largest numeric power the parser may compute before it refuses a value: a number
#: of MAX_BITS bits to the largest exponent allowed (a refusal is "fast" because of this
#: bound, not because of how fast the machine is).
POWER_BITS = MAX_BITS * MAX_EXPONENT


class PowerTooBig(BaseException):
    """A numeric power past POWER_BITS was about to be computed (a BaseException: the
    parser's own error handling must not turn it into a SymroofError)."""


@pytest.fixture
def numeric_powers(monkeypatch):
    """Every numeric power SymPy evaluates during the test, as the bit length of its result
    (an upper bound), recorded before it is computed; one past POWER_BITS fails the test
    instead of running (9**387420489 would take minutes and gigabytes)."""
    sizes: list[int] = []
    for cls in (sp.Integer, sp.Rational):
        evaluate = cls.__dict__["_eval_power"]

        def bounded(self, expt, evaluate=evaluate):
            if isinstance(expt, sp.Rational):
                bits = max(abs(int(self.p)).bit_length(), int(self.q).bit_length())
                size = bits * -(-abs(int(expt.p)) // int(expt.q))
                sizes.append(size)
                if size > POWER_BITS:
                    raise PowerTooBig(f"{str(self)[:30]}**{str(expt)[:30]}: about {size} bits")
            return evaluate(self, expt)
        monkeypatch.setattr(cls, "_eval_power", bounded)
    return sizes


def test_the_power_bound_catches_a_tower(numeric_powers):
    """The fixture above can fail: a tower computed without the parser is stopped."""
    with pytest.raises(PowerTooBig, match="9[*][*]387420489"):
        sp.Integer(9) ** (sp.Integer(9) ** 9)
    assert numeric_powers[-1] == 4 * 387420489   # 9 has 4 bits (9**9 may come from SymPy's cache)


def test_long_flat_expressions_are_fine():
    assert parse_expr("+".join(["M"] * 500)) == 500 * M
    assert parse_expr("2**64 * 2**-64 * (M)") == M
    assert parse_expr("M**64 * M**-63") == M


@pytest.mark.parametrize("bad", [None, 5, b"M", ["M"]])
def test_non_string_input_is_a_symroof_error(bad):
    with pytest.raises(SymroofError, match="expected a string"):
        parse_expr(bad)  # type: ignore[arg-type]


def test_bad_symbol_table_is_a_symroof_error():
    with pytest.raises(SymroofError, match="symbol table"):
        parse_expr("M", {"M": 3})  # type: ignore[dict-item]


def test_source_never_evaluates_user_text():
    source = inspect.getsource(parse_module)
    assert not re.search(r"(?<![\w.])(eval|exec|compile|__import__)\(", source)
    for banned in ("sympify", "sympy.parsing", "sp.S(", "import builtins"):
        assert banned not in source


# --- assignments ------------------------------------------------------------------------

def test_parse_assignment_values():
    assert parse_assignment("B=32") == (B, (sp.Integer(32),))
    assert parse_assignment(" S = 1024, 2048,4096 ") == (S, (1024, 2048, 4096))
    assert parse_assignment("S=4*1024,2**13,8k") == (S, (4096, 8192, 8000))
    assert parse_assignment("S=Min(1, 2), 3") == (S, (1, 3))
    assert parse_assignment("D=4*d_h") == (CANONICAL["D"], (4 * d_h,))


@pytest.mark.parametrize("text, fragment", [
    ("B", "assignment 'B': missing '=' (expected NAME=VALUE[,VALUE...])"),
    ("B=", "empty value for B"),
    ("B=  ", "empty value for B"),
    ("S=1,,2", "empty value for S (value 2 of 3)"),
    ("S=1,", "empty value for S (value 2 of 2)"),
    ("=3", "missing name before '='"),
    ("Sx=3", "'Sx' is an unknown symbol (did you mean 'S'?)"),
    ("Q=3", "'Q' is an unknown symbol"),
    ("B=3x", "assignment B '3x': invalid syntax"),
    ("B=os.getcwd()", "attribute access '.getcwd'"),
    ("B==3", "assignment B '=3': invalid syntax"),
])
def test_parse_assignment_errors(text, fragment):
    with pytest.raises(SymroofError) as info:
        parse_assignment(text)
    assert fragment in str(info.value)


def test_parse_assignment_field_name_and_non_symbol_targets():
    with pytest.raises(SymroofError, match=r"^--set B '2\*\*99': exponent"):
        parse_assignment("B=2**99", what="--set")
    with pytest.raises(SymroofError, match="'two' is not a symbol"):
        parse_assignment("two=3", {"two": sp.Integer(2)})


def test_parse_assignments():
    assert parse_assignments(["B=32", "S=1k,2k"]) == {B: (32,), S: (1000, 2000)}
    assert parse_assignments("B=1") == {B: (1,)}
    assert parse_assignments([]) == {}
    with pytest.raises(SymroofError, match="B is set more than once"):
        parse_assignments(["B=1", "S=2", "B=3"])
    with pytest.raises(SymroofError):
        parse_assignments(5)  # type: ignore[arg-type]


# --- properties -------------------------------------------------------------------------

def _expr_or_error(text: str) -> None:
    try:
        result = parse_expr(text)
    except SymroofError:
        return
    assert isinstance(result, sp.Expr)


_FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_ALPHABET = "0123456789.eE_kKiM+-*/() ,=SNBbdh_fflogsqrtexpminaxl[]'\"\n"


@_FUZZ
@given(st.text(max_size=80))
def test_random_text_gives_expr_or_symroof_error(text):
    _expr_or_error(text)


@_FUZZ
@given(st.text(alphabet=_ALPHABET, max_size=60))
def test_expression_like_text_gives_expr_or_symroof_error(text):
    _expr_or_error(text)


_atom = st.sampled_from(["M", "N", "S", "b", "d_h", "0", "1", "2", "64", "0.5", "1e3", "8k"])
_tree = st.recursive(_atom, lambda inner: st.one_of(
    st.tuples(inner, st.sampled_from(["+", "-", "*", "/", "**"]), inner).map(
        lambda t: f"({t[0]}{t[1]}{t[2]})"),
    st.tuples(st.sampled_from(["sqrt", "log", "exp", "ceil", "floor", "Min", "max"]), inner).map(
        lambda t: f"{t[0]}({t[1]})"),
    inner.map(lambda s: f"-{s}"),
), max_leaves=12)


@_FUZZ
@given(_tree)
def test_grammatical_expressions_give_expr_or_symroof_error(text):
    _expr_or_error(text)


@_FUZZ
@given(st.text(max_size=40))
def test_random_assignments_give_result_or_symroof_error(text):
    try:
        symbol, values = parse_assignment("S=" + text)
    except SymroofError:
        return
    assert symbol is S and all(isinstance(v, sp.Expr) for v in values)
