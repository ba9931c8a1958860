"""``symroof train``: memory per GPU by part and whether it fits, FLOPs per step, the
pipeline bubble, and the days a token budget takes at a stated MFU."""

from __future__ import annotations

import argparse

import sympy as sp

from symroof import request
from symroof.cli.common import CLI_NAMES, Command, Output, choices, numerics_of
from symroof.errors import SymroofError
from symroof.options import Causal, Recompute, Statistics
from symroof.parse import parse_expr
from symroof.present.commands import dumps, request_doc
from symroof.present.training import train_json, train_lines
from symroof.request import Request
from symroof.training.layout import TrainingLayout
from symroof.training.plan import plan_training

__all__ = ["COMMANDS"]


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="a preset name or a config.json path")
    p.add_argument("--hardware", required=True, help="a chip name (symroof hardware list)")
    p.add_argument("--seq", required=True, help="tokens per sequence")
    p.add_argument("--micro-batch", default="1", help="sequences per micro-batch (default 1)")
    p.add_argument("--global-batch", default=None,
                   help="sequences per optimizer step (default: micro-batch x dp x pp)")
    for flag, what in (("--tp", "tensor"), ("--pp", "pipeline"), ("--dp", "data")):
        p.add_argument(flag, default="1", help=f"{what}-parallel degree (default 1)")
    p.add_argument("--zero", default="0", choices=["0", "1", "2", "3"],
                   help="ZeRO stage over the data-parallel replicas (default 0)")
    p.add_argument("--sequence-parallel", action="store_true",
                   help="split the norms' and dropouts' activations too (needs --tp)")
    p.add_argument("--recompute", default=Recompute.FLASH.value, choices=choices(Recompute),
                   help="what the backward pass recomputes (default flash)")
    p.add_argument("--unfused", action="store_true",
                   help="attention without FlashAttention (the S x S matrices in memory)")
    p.add_argument("--causal", default=Causal.HALF.value, choices=choices(Causal),
                   help="how the causal mask reduces attention's FLOPs (default half)")
    p.add_argument("--statistics", default=Statistics.SAVED.value, choices=choices(Statistics),
                   help="count per-row fp32 statistics (default saved)")
    p.add_argument("--dropout", default=None,
                   help="attention and hidden dropout probability (default: the model's)")
    p.add_argument("--precision", default=None,
                   help="weights, activations and peak (default bf16)")
    p.add_argument("--tokens", default=None, help="a token budget, e.g. 300e9 (with --mfu)")
    p.add_argument("--mfu", default=None, help="model FLOPs utilization, e.g. 0.5")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _number(text: str | None, flag: str) -> sp.Expr | None:
    """A number typed on the command line (no symbols)."""
    if text is None:
        return None
    value = parse_expr(text, {}, what=flag)
    if not value.is_number:
        raise SymroofError(f"{flag} {text!r}: expected a number")
    return value


def _count(text: str, flag: str) -> int:
    value = _number(text, flag)
    if value is None or not (value.is_integer and value.is_positive):
        raise SymroofError(f"{flag} {text!r}: expected a positive whole number")
    return int(value)


def request_of(args: argparse.Namespace) -> Request:
    """The run as a :class:`~symroof.request.Request` of the registry's ``training``
    workload, checked once as every front door's is: the model (a preset in any case, a
    config.json or a folder holding one, with ``--dropout``), the options the training
    builder takes (``--recompute``, ``--causal``, ``--unfused``), the formats and the chip
    (its peak in them). The parallel layout is the training plan's own (tp, pp, dp, ZeRO)."""
    model = request.load_model(args.model)
    dropout = _number(args.dropout, "--dropout")
    if dropout is not None:
        model = model.replace(attention_dropout=dropout, hidden_dropout=dropout)
    options = {"recompute": args.recompute, "causal": args.causal, "fused": not args.unfused}
    return request.make("training", options=options, model=model, numerics=numerics_of(args),
                        chip=args.hardware, names=CLI_NAMES)


def _run(args: argparse.Namespace, out: Output) -> int:
    r = request_of(args)
    options = dict(r.options)
    recompute, causal, fused = options["recompute"], options["causal"], options["fused"]
    # the registry entry made them members of the training builder's option kinds
    assert isinstance(recompute, Recompute) and isinstance(causal, Causal)
    assert isinstance(fused, bool)
    model = request.model(r)
    assert model is not None  # the training workload takes a model
    tp = _count(args.tp, "--tp")
    if args.sequence_parallel and tp == 1:
        raise SymroofError("--sequence-parallel: splits activations over the tensor-parallel "
                           "group; give --tp above 1")
    layout = TrainingLayout(tp=tp, pp=_count(args.pp, "--pp"), dp=_count(args.dp, "--dp"),
                            zero=int(args.zero), sequence_parallel=args.sequence_parallel)
    glob = None if args.global_batch is None else _count(args.global_batch, "--global-batch")
    plan = plan_training(model, request.spec(r), seq=_count(args.seq, "--seq"),
                         micro_batch=_count(args.micro_batch, "--micro-batch"),
                         global_batch=glob, layout=layout, recompute=recompute, fused=fused,
                         causal=causal,
                         statistics=args.statistics, precision=r.numerics.values,
                         tokens=_number(args.tokens, "--tokens"), mfu=_number(args.mfu, "--mfu"))
    if args.json:  # with the request it ran, as eval's JSON carries its own
        out(dumps({**train_json(plan), "request": request_doc(r)}))
        return 0
    for line in train_lines(plan):
        out(line)
    return 0


COMMANDS = (Command("train", "training memory per GPU, whether it fits, FLOPs, days",
                    _configure, _run),)
