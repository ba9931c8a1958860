"""A claim recipe's workload is a Request (issue 24): the recipe parses its table into
:func:`symroof.request.make` and builds through :func:`symroof.request.analysis`, the
one path every front door takes, so a recipe's workload is the command line's, and a bad
value meets the one rule's words."""

from __future__ import annotations

import pytest
import sympy as sp

from symroof import request
from symroof.cli import main
from symroof.errors import SymroofError
from symroof.models import PRESETS, get
from symroof.symbols import B, S, b, dim, n
from symroof.verify.builds import workload
from symroof.verify.context import Context

WHERE = "t.toml:3: claim 'x' field 'value'"


def built(spec: dict[str, object], **declared: sp.Symbol) -> tuple[object, request.Request, Context]:
    """The recipe's analysis of workload table ``spec``, the Request it ran, its context."""
    ctx = Context(declared)
    a = workload(spec, ctx, {}, f"{WHERE}.workload")
    (r,) = ctx.requests.values()
    return a, r, ctx


def same(a: object, b_: object) -> None:
    for q in ("flops", "bytes"):
        assert sp.cancel(getattr(a, q) - getattr(b_, q)) == 0, q


def test_a_recipe_gemm_is_the_request_of_its_args_and_the_seeds_formula():
    a, r, _ = built({"builder": "gemm", "args": ["n", "n", "n"],
                     "options": {"flop_count": "one_per_mac"}}, n=n)
    direct = request.analysis(request.make("gemm", fixed={"M": n, "N": n, "K": n},
                                           options={"flop_count": "one_per_mac"}))
    same(a, direct)
    assert r == request.make("gemm", fixed={"M": n, "N": n, "K": n},
                             options={"flop_count": "one_per_mac"})
    # independently: n**3 MACs counted once each, three n x n tensors of b bytes
    assert sp.cancel(a.flops - n**3) == 0 and sp.cancel(a.bytes - 3 * n**2 * b) == 0


def test_a_symbol_at_itself_is_not_fixed_so_the_recipe_asks_the_command_lines_request():
    m = get("llama-3-8b")
    a, r, _ = built({"builder": "decode", "model": "llama-3-8b", "args": ["B", "S"],
                     "kwargs": {"tp": 8}})
    assert r.fixed == () and r.layout.tp == 8 and r.model == m
    assert r == request.make("decode", model=m, tp=8)
    cli = request.analysis(request.make("decode", model="llama-3-8b", tp=8))
    same(a, cli)
    # independently: 32 query and 8 KV heads, an MLP of 14336 and a vocabulary of 128256
    # all split 8 ways, so each device does 1/8 of the one-device step's contractions
    one = request.analysis(request.make("decode", model="llama-3-8b")).quantities
    for q in ("F_weights", "F_attention"):
        assert sp.cancel(8 * a.quantities[q] - one[q]) == 0, q


def test_decode_given_past_leaves_its_context_out_and_is_the_step_at_past_plus_one():
    a, r, _ = built({"builder": "decode", "model": "llama-3-8b", "args": [32],
                     "kwargs": {"past": 2048}})
    assert dict(r.fixed) == {B: 32, S: None} and r.keywords == (("past", 2048),)
    # a second computation: the context is past + 1 (the new token included)
    at = request.analysis(request.make("decode", model="llama-3-8b", fixed={"B": 32, "S": 2049}))
    same(a, at)
    assert a.flops.free_symbols == set() and a.bytes.free_symbols == {b}


def test_a_conv2d_kernel_of_one_size_is_the_pair_and_padding_is_a_keyword():
    N, C, H, W, K = (dim(x) for x in "NCHWK")
    P, Q, R, Sf = dim("P_c"), dim("Q_c"), dim("R"), dim("S_f")
    one, _, _ = built({"builder": "conv2d", "args": ["N", "C", "H", "W", "K", 3],
                       "kwargs": {"padding": 1}}, W=W)
    pair, r, _ = built({"builder": "conv2d", "args": ["N", "C", "H", "W", "K", [3, 3]],
                        "kwargs": {"padding": 1}}, W=W)
    same(one, pair)
    assert dict(r.fixed) == {R: 3, Sf: 3} and dict(r.keywords) == {"padding": 1}
    # independently: a 3x3 'same' convolution keeps H x W, 2 FLOPs per MAC of
    # N*K*H*W outputs each summing C*9 products
    assert sp.cancel(pair.flops - 2 * N * K * H * W * C * 9) == 0
    # an expression for a size: H = P_c + R - 1 leaves P_c output rows (no padding)
    ex, r2, _ = built({"builder": "conv2d", "args": ["N", "C", "P_c + R - 1", "Q_c + S_f - 1",
                                                     "K", ["R", "S_f"]]},
                      P_c=P, Q_c=Q, R=R, S_f=Sf)
    assert dict(r2.fixed) == {H: P + R - 1, W: Q + Sf - 1}
    assert sp.cancel(ex.flops - 2 * N * K * P * Q * C * R * Sf) == 0


def test_a_model_table_is_the_requests_model():
    a, r, ctx = built({"builder": "decode", "model": {"preset": "llama-3-8b", "bytes": 1},
                       "args": ["B", "S"]})
    assert r.model == get("llama-3-8b").with_bytes(1)
    same(a, request.analysis(request.make("decode", model=get("llama-3-8b").with_bytes(1))))
    # cached per claim file: the same table is the same analysis and one request
    again = workload({"builder": "decode", "model": {"preset": "llama-3-8b", "bytes": 1},
                      "args": ["B", "S"]}, ctx, {}, f"{WHERE}.workload")
    assert again is a and len(ctx.requests) == 1


def error_of(spec: dict[str, object], **declared: sp.Symbol) -> str:
    with pytest.raises(SymroofError) as err:
        workload(spec, Context(declared), {}, f"{WHERE}.workload")
    return str(err.value)


def cli_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 2
    line = capsys.readouterr().err.strip()
    assert line.startswith("symroof: error: ") and "\n" not in line
    return line.removeprefix("symroof: error: ")


def test_a_bad_value_or_layout_gives_the_command_lines_words(capsys):
    recipe = error_of({"builder": "gemm", "args": [0, 2, 3]})
    cli = cli_error(capsys, "eval", "gemm", "--set", "M=0", "--set", "N=2", "--set", "K=3",
                    "--hardware", "h100-sxm")
    assert recipe == f"{WHERE}.workload.args M: expected a positive integer (a dimension), got 0"
    assert cli == "--set M: expected a positive integer (a dimension), got 0"
    recipe = error_of({"builder": "decode", "model": "llama-3-8b", "args": ["B", "S"],
                       "kwargs": {"tp": 3}})
    cli = cli_error(capsys, "derive", "decode", "--model", "llama-3-8b", "--tp", "3")
    assert recipe.startswith(f"{WHERE}.workload.kwargs.tp 3: does not split llama-3-8b")
    assert recipe.removeprefix(f"{WHERE}.workload.kwargs.tp") == cli.removeprefix("--tp")


def test_a_bad_option_is_the_registrys_one_error():
    recipe = error_of({"builder": "gemm", "args": ["M", "N", "K"], "options": {"lowering": "implicit"}})
    with pytest.raises(SymroofError) as err:
        request.make("gemm", options={"lowering": "implicit"}, names={"workload": f"{WHERE}.workload"})
    assert recipe == str(err.value) == (f"{WHERE}.workload.options: workload 'gemm' has no option "
                                        "'lowering'; its options: flop_count")


@pytest.mark.parametrize("spec, words", [
    ({"builder": "gemm", "args": ["M", "N", "K", "n"]},
     ".workload.args: workload 'gemm' takes 3 arguments (M, N, K), got 4"),
    ({"builder": "gemm", "args": ["M"]},
     ".workload.args N: gemm needs it (its N has no default)"),
    ({"builder": "gemm", "args": ["M", "N", "K"], "kwargs": {"padding": 1}},
     ".workload.kwargs padding: workload 'gemm' takes no keyword 'padding'"),
    ({"builder": "gemm", "args": ["M", "N", "K"], "kwargs": {"tp": 2}},
     ".workload.kwargs.tp: workload 'gemm' does not use it (its options: flop_count)"),
    ({"builder": "conv2d", "args": ["N", "C", "H", 8, "K", [3, 3, 3]]},
     ".workload.args[5]: expected one size or 2 (R, S_f), got 3 values"),
    ({"builder": "gemm", "args": ["M", "N", "K"], "kwargs": {"b": "-1"}},
     ".workload.kwargs b: expected a positive number, got -1"),
])
def test_a_bad_argument_or_keyword_names_the_recipes_field(spec, words):
    assert error_of(spec).startswith(WHERE + words), error_of(spec)


FILE = '''title = "t"

[[document]]
id = "0"
file = "0.txt"
title = "d"
''' + "".join(f'''
[[claim]]
id = "{cid}"
document = "0"
section = "s"
quote = "q"
quantity = "x"
unit = "FLOP/B"
claimed = {claimed}
rounding = {{sig = 4}}
value = {value}
subs = {subs}
''' for cid, claimed, value, subs in [
    ("square", 2731, '{workload = {builder = "gemm", args = ["n", "n", "n"]}, q = "I"}',
     "{n = 8192, b = 2}"),
    ("square-small", 341.3, '{workload = {builder = "gemm", args = ["n", "n", "n"]}, q = "I"}',
     "{n = 1024, b = 2}"),
    ("two", 2, '''{let = {a = {workload = {builder = "gemm", args = ["n", "n", "n"]}, q = "I"}, c = {workload = {builder = "gemm", args = [1, "N", "K"]}, q = "I"}}, expr = "a/c"}''',
     "{n = 4, N = 4, K = 4, b = 2}"),
])


def test_each_claim_carries_the_requests_its_recipe_ran():
    from symroof.verify import parse_claims, run_claims

    by_id = {r.claim.id: r for r in run_claims(parse_claims(FILE, "t.toml")).results}
    square = request.make("gemm", fixed={"M": n, "N": n, "K": n})
    # the second row's recipe is remembered (one evaluation): its request is replayed
    assert by_id["square"].status == by_id["square-small"].status == "match"
    assert by_id["square"].requests == by_id["square-small"].requests == (square,)
    assert by_id["two"].requests == (square, request.make("gemm", fixed={"M": 1}))
    # a second computation of the two's value: (2*4**3 / (3*16*2)) / (2*16 / ((4+16+4)*2))
    assert by_id["two"].derived == sp.Rational(4, 3) / sp.Rational(32, 48) == 2
    assert by_id["two"].status == "match"


def _reads_registry(node: object) -> bool:
    if isinstance(node, dict):
        return "builder" in node or any(_reads_registry(v) for v in node.values())
    return isinstance(node, list) and any(_reads_registry(v) for v in node)


def test_every_seed_claim_that_builds_a_workload_carries_its_requests_as_json(seed_outcome):
    import json

    from symroof.present.commands import request_doc

    built_ = [r for r in seed_outcome.results if r.status != "error"
              and (_reads_registry(r.claim.value)
                   or any(_reads_registry(a.get("value")) for a in r.claim.alternatives))]
    assert len(built_) > 150
    assert all(r.requests for r in built_), [r.claim.id for r in built_ if not r.requests][:5]
    ids = {id(r) for r in built_}
    assert not any(r.requests for r in seed_outcome.results if id(r) not in ids)
    docs = {r.claim.id: [json.loads(json.dumps(request_doc(q))) for q in r.requests]
            for r in built_}
    # the alternative that asks a decode step after 2048 cached tokens, as it was asked
    past = [d for d in docs["s001-we-kv-bytes"] if "keywords" in d]
    assert past == [{**past[0], "fixed": {"B": 32, "S": None}, "keywords": {"past": 2048}}]
    assert past[0]["model"] == "llama-3-8b" and past[0]["workload"] == "decode"


def test_the_number_twins_share_the_twins_caches_field_by_field():
    """A merge once shifted Context's positional fields, so the number twins' context got
    the twins' models as its requests; the caches are shared by name now."""
    from symroof.verify.context import Context

    ctx = Context({})
    twins, numbers = ctx.with_twins(), ctx.with_twins(numbers=True)
    assert numbers.workloads is twins.workloads and numbers.models is twins.models
    assert numbers.requests is twins.requests and numbers.twin_log is twins.twin_log
    assert numbers.twin_numbers and not twins.twin_numbers and numbers.twins


def _printed_as(have: object, printed: object) -> bool:
    """Whether a model field's value ``have`` is what the JSON printed."""
    if printed is None or isinstance(printed, bool):
        return have == printed
    if isinstance(printed, (int, float)):
        return float(have) == float(printed)
    assert not isinstance(printed, (dict, list)), f"a structured field: {printed!r}"
    return str(getattr(have, "value", have)) == printed


def test_the_claims_json_prints_requests_that_ask_the_same_workload_again(seed_outcome):
    """Each claim's ``requests`` in the JSON (issue 24: the request a claim ran, printed)
    is enough to make the Request again: rebuilt from the JSON alone, with the layout,
    formats, fixed values and keywords it prints, it builds the workload whose F and Q
    the claim's own Request builds."""
    from symroof.present.appendix import claims_json

    items = {i["id"]: i for i in claims_json(seed_outcome)}
    asked = tables = 0
    for r in seed_outcome.results:
        docs = items[r.claim.id]["requests"]
        assert len(docs) == len(r.requests)
        for doc, ran in zip(docs, r.requests):
            if "model_fields" in doc:
                # a model table of the claim file, or a preset the file changed (its
                # weights' bytes): printed by its fields (those that differ from the
                # preset's), each as the model has it
                fields = {k: v for k, v in doc["model_fields"].items() if k != "preset"}
                assert fields and ran.model is not None
                assert all(_printed_as(getattr(ran.model, k), v)
                           for k, v in fields.items()), doc["model_fields"]
                tables += 1
                continue
            if any(isinstance(v, str) for v in {**doc.get("fixed", {}),
                                                **doc.get("keywords", {})}.values()):
                continue  # a size fixed at an expression: printed as text, not a number
            # the layout and the formats as the JSON prints them, where they are not the
            # defaults that every workload takes (make refuses a field a workload ignores)
            layout = {k: v for k, v in doc["layout"].items()
                      if v != {"expert_reads": "expected"}.get(k, 1)}
            numerics = doc["numerics"]
            formats = ({} if doc["model"] is None else
                       {k: numerics[k] for k in ("weights", "kv_cache", "activations")}
                       if numerics["per_kind"] else {"precision": numerics["b"]})
            again = request.make(doc["workload"], options=doc["options"], model=doc["model"],
                                 fixed=doc.get("fixed"), keywords=doc.get("keywords"),
                                 **layout, **formats)
            mine, theirs = request.analysis(again), request.analysis(ran)
            assert sp.cancel(mine.flops - theirs.flops) == 0, r.claim.id
            assert sp.cancel(mine.bytes - theirs.bytes) == 0, r.claim.id
            asked += 1
    assert asked >= 130 and tables >= 100, (asked, tables)   # 139 and 107 when written
