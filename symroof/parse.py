"""The one safe parser for user-typed expressions (CLI ``--set``, claims, config values).

Text is parsed with :func:`ast.parse` and walked node by node; only numbers, names from a
fixed symbol table, ``+ - * / **`` and calls to :data:`FUNCTIONS` are accepted. Nothing
is ever evaluated as Python or passed to SymPy's own parser, so ``S``, ``N``, ``E``,
``I`` and ``Q`` mean only what the table says. Float literals become exact rationals
(``0.1`` is ``1/10``); a number may carry a size suffix (``8k`` = 8000, ``4Ki`` = 4096).
Every bad input raises :class:`~symroof.errors.SymroofError` naming the offending token.

>>> from symroof.symbols import M, N, K, S
>>> parse_expr("2*M*N*K") == 2*M*N*K
True
>>> parse_expr("1.5e3 + 0.1")
15001/10
>>> parse_assignment("S=1024, 2**11, 4Ki")
(S, (1024, 2048, 4096))
>>> parse_expr("os.system('x')")
Traceback (most recent call last):
...
symroof.errors.SymroofError: expression "os.system('x')": attribute access '.system' at column 3 is not allowed
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Callable, Iterable, Mapping

import sympy as sp

from symroof.budget import MAX_BITS, MAX_DEPTH, MAX_EXPONENT, MAX_LENGTH
from symroof.errors import SymroofError, suggest
from symroof.symbols import CANONICAL

__all__ = [
    "parse_expr", "parse_assignment", "parse_assignments",
    "FUNCTIONS", "SUFFIXES", "MAX_LENGTH", "MAX_DEPTH", "MAX_EXPONENT", "MAX_BITS",
]

# MAX_LENGTH, MAX_DEPTH, MAX_EXPONENT, MAX_BITS: the parser's limits, kept with every
# other limit in symroof.budget and re-exported here.

#: Size suffixes written right after a number: decimal ``k``, binary ``Ki`` ... ``Ti``.
SUFFIXES: dict[str, int] = {"k": 10**3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}

#: name -> (function, fewest args, most args or None for any number)
FUNCTIONS: dict[str, tuple[Callable[..., sp.Basic], int, int | None]] = {
    "sqrt": (sp.sqrt, 1, 1), "exp": (sp.exp, 1, 1), "log": (sp.log, 1, 2),
    "log2": (lambda x: sp.log(x, 2), 1, 1), "floor": (sp.floor, 1, 1),
    "ceiling": (sp.ceiling, 1, 1), "ceil": (sp.ceiling, 1, 1),
    "Min": (sp.Min, 1, None), "min": (sp.Min, 1, None),
    "Max": (sp.Max, 1, None), "max": (sp.Max, 1, None),
    "Abs": (sp.Abs, 1, 1), "abs": (sp.Abs, 1, 1),
}

_OPS = {ast.Add: sp.Add, ast.Sub: lambda a, b: a - b, ast.Mult: sp.Mul,
        ast.Div: lambda a, b: a / b, ast.Pow: sp.Pow}
_SYMBOLS = {ast.FloorDiv: "//", ast.Mod: "%", ast.MatMult: "@", ast.LShift: "<<",
            ast.RShift: ">>", ast.BitOr: "|", ast.BitAnd: "&", ast.BitXor: "^",
            ast.Not: "not", ast.Invert: "~"}
_KINDS = {ast.Attribute: "attribute access", ast.Subscript: "subscript",
          ast.Lambda: "lambda", ast.Compare: "comparison", ast.BoolOp: "boolean operator",
          ast.IfExp: "conditional expression", ast.NamedExpr: "assignment expression",
          ast.Starred: "starred argument", ast.Tuple: "tuple", ast.List: "list",
          ast.Set: "set", ast.Dict: "dict", ast.JoinedStr: "f-string",
          ast.ListComp: "comprehension", ast.SetComp: "comprehension",
          ast.DictComp: "comprehension", ast.GeneratorExp: "comprehension",
          ast.Slice: "slice", ast.Await: "await", ast.Yield: "yield",
          ast.YieldFrom: "yield"}
_SUFFIX_RE = re.compile(r"(?<![\w.])((?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)"
                        r"(?:[eE][+-]?\d[\d_]*)?)(k|Ki|Mi|Gi|Ti)(?!\w)")
_FLOAT_RE = re.compile(r"(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?")
_NOT_ALLOWED = " is not allowed"
_MAX_ROUNDED = 2**256  # floor/ceiling of an irrational number beyond this is refused


class _Reject(Exception):
    """A node-level rejection: message plus the 0-based column in the parsed text."""

    def __init__(self, message: str, col: int | None = None, tail: str = ""):
        super().__init__(message)
        self.message, self.col, self.tail = message, col, tail


def _show(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


class _Parser:
    def __init__(self, text: str, table: Mapping[str, sp.Basic], what: str) -> None:
        self.original, self.table, self.what = text, table, what
        stripped = text.strip(" \t\r\n\f\v")
        self.lead = len(text) - len(text.lstrip(" \t\r\n\f\v"))
        self.spans: list[tuple[int, int, int, int]] = []  # new start/end, old start/end
        parts, pos, shift = [], 0, 0
        for m in _SUFFIX_RE.finditer(stripped):  # 8k -> (8*1000), columns remembered
            new = f"({m.group(1)}*{SUFFIXES[m.group(2)]})"
            parts += [stripped[pos:m.start()], new]
            start = m.start() + shift
            self.spans.append((start, start + len(new), m.start(), m.end()))
            shift += len(new) - (m.end() - m.start())
            pos = m.end()
        self.text = "".join(parts) + stripped[pos:]

    def fail(self, message: str, col: int | None = None, tail: str = "") -> SymroofError:
        where = "" if col is None else f" at column {self.column(col)}"
        return SymroofError(f"{self.what} {_show(self.original)}: {message}{where}{tail}")

    def column(self, col: int) -> int:
        """1-based column in the user's text of a 0-based column in the parsed text."""
        shift = 0
        for new_start, new_end, old_start, old_end in self.spans:
            if col >= new_end:
                shift = old_end - new_end
            elif col >= new_start:
                return old_start + self.lead + 1
        return col + shift + self.lead + 1

    def segment(self, node: ast.AST) -> str:
        return self.text[node.col_offset:node.end_col_offset]  # type: ignore[attr-defined]

    def parse(self) -> sp.Expr:
        if not self.text:
            raise self.fail("empty expression")
        for i, ch in enumerate(self.text):
            if not (ch.isascii() and (ch.isprintable() or ch in "\t\r\n\f\v")):
                raise self.fail(f"character {ch!r}", i, _NOT_ALLOWED)
        flat = re.sub(r"[\t\r\n\f\v]", " ", self.text)  # one line: columns are offsets
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = ast.parse(flat, mode="eval")
        except SyntaxError as exc:
            col = None if exc.offset is None else max(exc.offset - 1, 0)
            hint = ""
            if "decimal literal" in (exc.msg or ""):
                hint = f" (write 2*M for a product; size suffixes are {', '.join(SUFFIXES)})"
            raise self.fail(f"invalid syntax ({exc.msg})", col, hint) from None
        except (ValueError, RecursionError, MemoryError, OverflowError):
            raise self.fail("expression is too complex") from None
        try:
            result = self.visit(tree.body, 0)
            if not isinstance(result, sp.Expr):
                raise self.fail(f"value {result} is not an expression")
        except _Reject as exc:
            raise self.fail(exc.message, exc.col, exc.tail) from None
        except SymroofError:
            raise
        except (ArithmeticError, TypeError, ValueError, AttributeError, RecursionError,
                MemoryError) as exc:
            raise self.fail(f"cannot evaluate ({type(exc).__name__}: {str(exc)[:80]})") from None
        return result

    def visit(self, node: ast.AST, depth: int) -> sp.Basic:
        if depth > MAX_DEPTH:
            col = node.col_offset  # type: ignore[attr-defined]
            raise _Reject(f"nesting deeper than {MAX_DEPTH} levels", col)
        if isinstance(node, ast.BinOp):
            chain = []  # walk the left spine iteratively: long sums are shallow
            while isinstance(node, ast.BinOp):
                chain.append(node)
                node = node.left
            value = self.visit(node, depth + 1)
            for op_node in reversed(chain):
                value = self.binop(op_node, value, self.visit(op_node.right, depth + 1))
            return value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
            value = self.visit(node.operand, depth + 1)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.Constant):
            return self.constant(node)
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.Call):
            return self.call(node, depth)
        return self.reject(node)

    def reject(self, node: ast.AST) -> sp.Basic:
        col = node.col_offset  # type: ignore[attr-defined]
        if isinstance(node, ast.Attribute):
            while isinstance(node.value, ast.Attribute):  # name the first attribute
                node = node.value
            col = self.text.rfind(".", 0, node.end_col_offset)
            raise _Reject(f"attribute access '.{node.attr}'", col, _NOT_ALLOWED)
        if isinstance(node, ast.UnaryOp):
            raise _Reject(f"operator {_SYMBOLS.get(type(node.op), '?')!r}", col, _NOT_ALLOWED)
        kind = _KINDS.get(type(node), type(node).__name__.lower())
        raise _Reject(f"{kind} {_show(self.segment(node), 30)}", col, _NOT_ALLOWED)

    def binop(self, node: ast.BinOp, left: sp.Basic, right: sp.Basic) -> sp.Basic:
        op = _OPS.get(type(node.op))
        if op is None:
            symbol = _SYMBOLS.get(type(node.op), "?")
            tail = " (use floor(a/b))" if symbol == "//" else ""
            col = self.text.find(symbol, node.left.end_col_offset)
            raise _Reject(f"operator {symbol!r}", col, _NOT_ALLOWED + tail)
        if isinstance(node.op, ast.Pow):
            self.check_exponent(right, node)
        return self.checked(op(left, right), node)

    def constant(self, node: ast.Constant) -> sp.Basic:
        value = node.value
        if isinstance(value, int) and not isinstance(value, bool):
            return self.checked(sp.Integer(value), node)
        if isinstance(value, float):
            match = _FLOAT_RE.fullmatch(self.segment(node).replace("_", ""))
            if match is None:
                raise _Reject(f"number {self.segment(node)!r}", node.col_offset, _NOT_ALLOWED)
            whole, frac, exp = match.group(1), match.group(2) or "", match.group(3) or "0"
            power = int(exp) - len(frac)
            if abs(power) > MAX_BITS:
                raise _Reject(f"number {self.segment(node)!r}", node.col_offset, " is too large")
            return self.checked(sp.Integer(int(whole + frac or "0")) * sp.Integer(10)**power,
                                node)
        kind = {bool: "boolean", complex: "complex number", str: "string", bytes: "bytes"}
        name = kind.get(type(value), "constant")
        raise _Reject(f"{name} {self.segment(node)}", node.col_offset, _NOT_ALLOWED)

    def name(self, node: ast.Name) -> sp.Basic:
        if node.id in self.table:
            return self.table[node.id]
        if node.id in FUNCTIONS:
            raise _Reject(f"function {node.id!r}", node.col_offset,
                          f" must be called, e.g. {node.id}(x)")
        raise _Reject(f"unknown name {node.id!r}", node.col_offset,
                      suggest(node.id, self.table))

    def call(self, node: ast.Call, depth: int) -> sp.Basic:
        if not isinstance(node.func, ast.Name):
            self.visit(node.func, depth + 1)  # rejects attributes, lambdas, strings ...
            raise _Reject(f"call of {_show(self.segment(node.func), 30)}", node.col_offset,
                          " is not allowed (products need '*')")
        name, col = node.func.id, node.col_offset
        if name not in FUNCTIONS:
            tail = (" (products need '*')" if name in self.table
                    else suggest(name, FUNCTIONS))
            raise _Reject(f"unknown function {name!r}", col, tail)
        for kw in node.keywords:
            raise _Reject(f"keyword argument {_show(self.segment(kw), 30)}", kw.col_offset,
                          _NOT_ALLOWED)
        func, low, high = FUNCTIONS[name]
        if not low <= len(node.args) <= (high or len(node.args)):
            count = str(low) if low == high else f"{low} to {high}" if high else f"{low}+"
            raise _Reject(f"{name}()", col, f" takes {count} argument(s), got {len(node.args)}")
        args = [self.visit(arg, depth + 1) for arg in node.args]
        if func is sp.exp:
            self.check_exponent(args[0], node)
        if func in (sp.floor, sp.ceiling) and args[0].is_number and not args[0].is_Rational:
            approx = args[0].evalf(20)  # SymPy's exact rounding of huge irrationals crawls
            if not approx.is_Number or abs(approx) > _MAX_ROUNDED:
                raise _Reject(_show(self.segment(node), 30), col,
                              " is too large to round exactly")
        return self.checked(func(*args), node)

    def check_exponent(self, value: sp.Basic, node: ast.AST) -> None:
        """An exponent's value is bounded (a tower such as exp(exp(64)) is refused); in a
        symbolic exponent, every number and numeric part is."""
        parts = [value] if value.is_number else [
            *value.atoms(sp.Rational), *(x for x in value.atoms(sp.Pow, sp.exp, sp.Function)
                                         if x.is_number)]
        for part in parts:
            size = self.magnitude(part)
            if size > MAX_EXPONENT or (value.is_Rational and value.q > MAX_EXPONENT):
                raise _Reject(f"exponent {_show(str(value), 30)} in "
                              f"{_show(self.segment(node), 30)}",
                              node.col_offset,  # type: ignore[attr-defined]
                              f" is out of range (|value| and denominator must be"
                              f" <= {MAX_EXPONENT}, the parser's exponent limit)")

    @staticmethod
    def magnitude(number: sp.Basic) -> float:
        """|number| as a float (inf when too large); its parts are already bounded."""
        if number.is_Rational:
            return float(abs(number)) if max(abs(number.p), number.q) < 2**64 else float("inf")
        approx = sp.Abs(number).evalf(15, maxn=30)
        return float(approx) if approx.is_Float else float("inf")

    def checked(self, value: sp.Basic, node: ast.AST) -> sp.Basic:
        """Reject infinite, non-real, too large values (cheap tests: no assumption queries)."""
        col = node.col_offset  # type: ignore[attr-defined]
        if value.has(sp.zoo, sp.nan, sp.oo, -sp.oo):
            raise _Reject(_show(self.segment(node), 30), col,
                          " is undefined or infinite (division by zero?)")
        if value.has(sp.I) or any(p.base.is_Number and p.base < 0 and not p.exp.is_integer
                                  for p in value.atoms(sp.Pow)):
            raise _Reject(_show(self.segment(node), 30), col, " is not real")
        for r in value.atoms(sp.Rational):
            if max(abs(r.p).bit_length(), r.q.bit_length()) > MAX_BITS:
                raise _Reject(_show(self.segment(node), 30), col,
                              f" is too large (numbers are limited to {MAX_BITS} bits)")
        for power in value.atoms(sp.Pow, sp.exp):
            self.check_exponent(power.exp, node)
        return value


def _table(symbols: Mapping[str, sp.Basic] | None, what: str) -> Mapping[str, sp.Basic]:
    table = CANONICAL if symbols is None else symbols
    if not isinstance(table, Mapping) or not all(
            isinstance(k, str) and isinstance(v, sp.Basic) for k, v in table.items()):
        raise SymroofError(f"{what}: symbol table must map names to SymPy objects")
    return table


def _text(text: str, what: str) -> str:
    if not isinstance(text, str):
        raise SymroofError(f"{what}: expected a string, got {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise SymroofError(f"{what} {_show(text)}: longer than {MAX_LENGTH} characters")
    return text


def parse_expr(text: str, symbols: Mapping[str, sp.Basic] | None = None, *,
               what: str = "expression") -> sp.Expr:
    """Parse *text* into an exact SymPy expression over *symbols* (default: canonical).

    >>> parse_expr("ceil(S/128) * 0.5", what="--set T")
    ceiling(S/128)/2
    """
    return _Parser(_text(text, what), _table(symbols, what), what).parse()


def _split_top_level(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch in "([{") - (ch in ")]}")
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return parts + [text[start:]]


def parse_assignment(text: str, symbols: Mapping[str, sp.Basic] | None = None, *,
                     what: str = "assignment") -> tuple[sp.Symbol, tuple[sp.Expr, ...]]:
    """Parse ``NAME=VALUE[,VALUE...]``; the name must be a symbol of the table.

    >>> parse_assignment("B=32", what="--set")
    (B, (32,))
    """
    table = _table(symbols, what)
    name, eq, rhs = _text(text, what).partition("=")
    name = name.strip()
    if not eq:
        raise SymroofError(f"{what} {_show(text)}: missing '=' (expected NAME=VALUE[,VALUE...])")
    if not name:
        raise SymroofError(f"{what} {_show(text)}: missing name before '='")
    symbol = table.get(name)
    if not isinstance(symbol, sp.Symbol):
        reason = "is not a symbol" if name in table else "is an unknown symbol"
        raise SymroofError(f"{what} {_show(text)}: {name!r} {reason}{suggest(name, table)}")
    pieces = _split_top_level(rhs)
    values = []
    for i, piece in enumerate(pieces, 1):
        if not piece.strip():
            where = f" (value {i} of {len(pieces)})" if len(pieces) > 1 else ""
            raise SymroofError(f"{what} {_show(text)}: empty value for {name}{where}")
        values.append(parse_expr(piece, table, what=f"{what} {name}"))
    return symbol, tuple(values)


def parse_assignments(items: Iterable[str], symbols: Mapping[str, sp.Basic] | None = None,
                      *, what: str = "assignment") -> dict[sp.Symbol, tuple[sp.Expr, ...]]:
    """Parse several assignments (a lone string counts as one); a repeated name is an error.

    >>> parse_assignments(["B=32", "S=1k,2k"])
    {B: (32,), S: (1000, 2000)}
    """
    if isinstance(items, str):
        items = [items]
    try:
        items = list(items)
    except TypeError:
        raise SymroofError(f"{what}: expected NAME=VALUE strings") from None
    result: dict[sp.Symbol, tuple[sp.Expr, ...]] = {}
    for item in items:
        symbol, values = parse_assignment(item, symbols, what=what)
        if symbol in result:
            raise SymroofError(f"{what} {_show(item)}: {symbol} is set more than once")
        result[symbol] = values
    return result
