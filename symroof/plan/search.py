"""The plan's numbers over its search space, in blocks, on the compiled path.

A :class:`Block` is one layout's formulas over a range of batches x a set of contexts,
with the numbers it is judged by; :func:`evaluate_block` evaluates the decode step time
with the layout's compiled function (:func:`symroof.compiled.lambdified.function`, once per
formula and process), derives every serving figure from it with numpy, and reduces the
block to what the plan needs: how many points meet the objectives, the best of them, the
Pareto front of tokens/s per user against tokens/s per chip, and the point closest to
meeting them where none does. Blocks are independent, so :func:`run_blocks` maps them on
this process, on threads or processes of this machine, or on the workers of a Dask
distributed cluster (``scheduler``: its address), and only the reductions travel back.

The figures at a point (B sequences per replica of ``n`` chips, decode step ``t(B)``,
prefill ``p`` per request, ``O`` output tokens per request on average):

- colocated (prefills run on the replica between decode steps): a user gets a token
  every ``u = t + B p / O``; tokens/s per user ``1/u``, per chip ``B / (u n)``;
- disaggregated (prefills on replicas of their own, ``n'`` chips each, ``p`` the
  prefill there): ``u = t``; tokens/s per chip ``(B/t) / (n + (B/t) p n' / O)``, the
  prefill replicas' share counted.

Chips for the load: ``ceil(users / B)`` decode replicas (each then holds
``ceil(users / replicas)`` sequences, the batch its figures are taken at) (requests/s: the replicas whose
output rate covers ``rate x O``), plus ``ceil(rate x p)`` prefill replicas of ``n'``
chips when disaggregated (users' requests arrive at ``users / (O u)`` per second).

With ``m > 1`` micro-batches the step is taken at ``m ceil(B/m)`` sequences (the largest
micro-batch sets each stage's time); with chunked prefill the TTFT is a formula of its
own in B (the decode steps that carry the prompt's chunks), compiled with the step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import sympy as sp

from symroof.errors import SymroofError
from symroof.compiled.lambdified import function
from symroof.symbols import B, S

__all__ = ["Block", "BlockResult", "evaluate_block", "run_blocks", "EXECUTORS", "OBJECTIVES",
           "pareto", "figures", "exprs"]

#: How blocks run: here, on threads or processes of this machine, or on Dask.
EXECUTORS = ("serial", "threads", "processes", "dask")

#: The objectives a point is judged by, in the order a shortfall is reported.
OBJECTIVES = ("ttft", "itl", "tokens_per_user", "memory", "chips")

#: Relative slack for float rounding: a ceiling of an exact multiple is not pushed up
#: one, and a point exactly at an objective meets it.
_TOL = 1e-12

#: A row of a block's points: the columns of :attr:`BlockResult.front` and friends.
COLUMNS = ("batch", "context", "step_s", "tokens_per_user", "tokens_per_chip", "chips",
           "prefill_chips")


@dataclass(frozen=True)
class Block:
    """One layout's formulas over ``batch_lo..batch_hi`` x ``contexts`` (see the module
    docstring); every number here is a float."""

    layout: int                 # the layout's index in the plan
    step: sp.Expr               # decode time per token, in B and S
    batch_lo: int
    batch_hi: int
    contexts: tuple[int, ...]
    devices: int                # chips of one replica
    prefill_s: float            # prefill time per request
    mean_output: float          # output tokens per request
    colocated: bool
    tokens_limit: float         # the memory limit on B x S
    ttft_s: float
    objectives: tuple[float | None, float | None, float | None]   # ttft, itl, tokens/user
    users: float | None
    requests_per_s: float | None
    available: int              # chips on offer
    price_per_hour: float | None
    microbatches: int = 1       # a step's micro-batches (the step at m ceil(B/m))
    first: sp.Expr | None = None   # chunked: the TTFT in B and S (else ttft_s)
    prefill_devices: int = 0    # disaggregated: chips of a prefill replica (0: devices)

    @property
    def points(self) -> int:
        return (self.batch_hi - self.batch_lo + 1) * len(self.contexts)


@dataclass(frozen=True)
class BlockResult:
    """A block reduced: its points, those meeting the objectives, the best (a row of
    :data:`COLUMNS`), the Pareto front (rows), and the closest point with its largest
    shortfall ratio and which objective that is (where none meets them)."""

    layout: int
    points: int
    meeting: int
    best: tuple[float, ...] | None
    front: tuple[tuple[float, ...], ...]
    closest: tuple[float, ...]
    closest_ratio: float
    closest_binding: str


def figures(blk: Block, batch: np.ndarray, context: np.ndarray,
            step: np.ndarray, first: np.ndarray | None = None) -> dict[str, Any]:
    """Every serving figure and shortfall ratio from the step time (the module
    docstring's formulas); shared by the compiled path and the hand-written check.
    A ratio over 1 misses its objective; the TTFT's is one number for the block unless
    ``first`` gives it per point (chunked prefill)."""
    n, p, o = float(blk.devices), blk.prefill_s, blk.mean_output
    npre = float(blk.prefill_devices or blk.devices)
    user = step + batch * (p / o) if blk.colocated else step
    per_user = 1.0 / user
    if blk.colocated:
        per_chip = batch / (user * n)
    else:
        rate = batch / step
        per_chip = rate / (n + rate * (p * npre / o))
    if blk.users is not None:
        exact = blk.users / batch * n
        chips = np.ceil(blk.users / batch) * n
        arrivals: Any = blk.users * per_user / o
    else:
        assert blk.requests_per_s is not None  # a load is one or the other
        arrivals = blk.requests_per_s
        replica = (batch / user) if blk.colocated else (batch / step)
        exact = blk.requests_per_s * o / replica * n
        chips = np.ceil((blk.requests_per_s * o * (1 - _TOL)) / replica) * n
    prefill_chips: Any = 0.0
    if not blk.colocated:
        exact = exact + arrivals * p * npre
        prefill_chips = np.ceil(arrivals * p * (1 - _TOL)) * npre
        chips = chips + prefill_chips
    ttft, itl, tpu = blk.objectives
    ratios: dict[str, Any] = {
        "ttft": 0.0 if ttft is None else (blk.ttft_s if first is None else first) * (1 / ttft),
        "itl": 0.0 if itl is None else step * (1 / itl),
        "tokens_per_user": 0.0 if tpu is None else user * tpu,
        "memory": batch * context * (1 / blk.tokens_limit) if blk.tokens_limit > 0
        else np.inf,
        # whole replicas decide whether it fits; where they do not, the shortfall is the
        # fraction of the load's chips on offer (2.4 of 4 needed beyond them: 1.6x)
        "chips": np.where(chips <= blk.available, chips * (1 / blk.available),
                          np.maximum(exact * (1 / blk.available), 1 + 1e-9)),
    }
    return {"step_s": step, "tokens_per_user": per_user, "tokens_per_chip": per_chip,
            "chips": chips, "prefill_chips": prefill_chips, **{f"ratio_{k}": v for k, v in ratios.items()}}


def pareto(rows: np.ndarray) -> np.ndarray:
    """The rows (of :data:`COLUMNS`) no other row beats in both tokens/s per user and
    tokens/s per chip (ties kept once), by tokens/s per user, highest first."""
    if len(rows) == 0:
        return rows
    u, c = rows[:, 3], rows[:, 4]
    order = np.lexsort((-c, -u))  # per user descending, then per chip descending
    seen = np.maximum.accumulate(c[order])  # the most per chip at as much per user or more
    kept = np.concatenate([[True], c[order][1:] > seen[:-1]])
    return rows[order[kept]]


#: Rows of a block's front kept at most (evenly spaced; the ends always).
FRONT_ROWS = 512


def _thin(rows: np.ndarray) -> np.ndarray:
    if len(rows) <= FRONT_ROWS:
        return rows
    pick = np.unique(np.linspace(0, len(rows) - 1, FRONT_ROWS).round().astype(int))
    return rows[pick]


def reduce_block(blk: Block, batch: np.ndarray, context: np.ndarray,
                 step: np.ndarray, first: np.ndarray | None = None) -> BlockResult:
    """The reductions of a block (see :class:`BlockResult`) from its step times (and its
    TTFTs where they vary by point)."""
    f = figures(blk, batch, context, step, first)
    shape = step.shape
    worst = np.zeros(shape)
    for k in OBJECTIVES:  # the largest ratio per point, without stacking them
        worst = np.maximum(worst, f[f"ratio_{k}"])
    ok = (worst <= 1 + _TOL).ravel()

    def cols(sel: Any) -> np.ndarray:
        return np.stack([np.broadcast_to(x, shape).ravel()[sel] for x in
                         (batch, context, step, f["tokens_per_user"], f["tokens_per_chip"],
                          f["chips"], f["prefill_chips"])], axis=-1)

    good = cols(np.flatnonzero(ok))
    best = None
    if len(good):
        key = np.lexsort((good[:, 3], -good[:, 5], good[:, 4]))  # per chip, fewer chips, per user
        best = tuple(float(x) for x in good[key[-1]])
    i = int(np.argmin(worst))
    at = [float(np.broadcast_to(f[f"ratio_{k}"], shape).ravel()[i]) for k in OBJECTIVES]
    return BlockResult(blk.layout, blk.points, len(good), best,
                       tuple(tuple(float(x) for x in r) for r in _thin(pareto(good))),
                       tuple(float(x) for x in cols(i)), float(worst.ravel()[i]),
                       OBJECTIVES[int(np.argmax(at))])


def evaluate_block(blk: Block, fn: Any = None) -> BlockResult:
    """One block on the compiled path (see the module docstring); ``fn`` is the step
    formula's compiled function where the caller has it."""
    batch = np.arange(blk.batch_lo, blk.batch_hi + 1, dtype=np.float64)[:, None]
    if blk.users is not None:  # users spread evenly: ceil(users / B) replicas hold fewer
        batch = np.ceil(blk.users / np.ceil(blk.users / batch))
    context = np.asarray(blk.contexts, dtype=np.float64)[None, :]
    if fn is None:
        fn = function(exprs(blk), (B, S))
    whole = batch if blk.microbatches == 1 else \
        np.ceil(batch / blk.microbatches) * blk.microbatches
    with np.errstate(all="ignore"):
        out = fn(whole, context)
    shape = (batch.shape[0], context.shape[1])
    step, *rest = (np.broadcast_to(np.asarray(x, dtype=np.float64), shape) for x in out)
    return reduce_block(blk, batch, context, step, rest[0] if rest else None)


def exprs(blk: Block) -> tuple[sp.Expr, ...]:
    """The formulas a block evaluates: its step time, and its TTFT where it has one."""
    return (blk.step,) if blk.first is None else (blk.step, blk.first)


def split(blk: Block, points: int) -> list[Block]:
    """``blk`` as blocks of at most about ``points`` points (whole contexts each)."""
    per = max(1, points // max(1, len(blk.contexts)))
    out = []
    lo = blk.batch_lo
    while lo <= blk.batch_hi:
        hi = min(blk.batch_hi, lo + per - 1)
        out.append(replace(blk, batch_lo=lo, batch_hi=hi))
        lo = hi + 1
    return out


def _client(scheduler: str, timeout: float) -> Any:
    try:  # dask.distributed is an optional extra, needed only here: imported on first use
        from distributed import Client
    except ImportError:
        raise SymroofError("scheduler: needs dask.distributed (pip install "
                           "'symroof[dask]')") from None
    try:
        return Client(scheduler, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError, TypeError) as err:
        raise SymroofError(f"scheduler {scheduler}: cannot reach the Dask scheduler "
                           f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else 'no answer'})"
                           ) from None


#: Formulas of the blocks a worker process runs, by key (set once per process: unpickling
#: a SymPy formula costs tens of milliseconds, so it travels once, not per block).
_FORMULAS: dict[int, tuple[sp.Expr, ...]] = {}


def _install(table: dict[int, tuple[sp.Expr, ...]]) -> None:
    _FORMULAS.update(table)


def _evaluate_keyed(item: tuple[int, Block]) -> BlockResult:
    key, blk = item
    step, *first = _FORMULAS[key]
    return evaluate_block(replace(blk, step=step, first=first[0] if first else None))


def _evaluate_with(blk: Block, fn: Any) -> BlockResult:
    """A block with its step formula's compiled function (shipped by value)."""
    return evaluate_block(blk, fn)


def _evaluate_group(blocks: Sequence[tuple[int, Block]], *fns: Any) -> list[BlockResult]:
    """A Dask task: several keyed blocks and the compiled functions by key (each
    scattered once to the cluster; a worker fetches it once)."""
    return [evaluate_block(blk, fns[k]) for k, blk in blocks]


def _groups(items: Sequence[tuple[int, Block]], task_points: int,
            workers: int) -> list[list[tuple[int, Block]]]:
    """Consecutive blocks grouped into tasks of about ``task_points`` points (a task
    costs the scheduler about a millisecond however small it is), but never fewer tasks
    than ``workers`` where there are that many blocks."""
    total = sum(b.points for _, b in items)
    size = max(1, min(task_points, math.ceil(total / max(1, workers))))
    out: list[list[tuple[int, Block]]] = [[]]
    held = 0
    for item in items:
        if held >= size:
            out.append([])
            held = 0
        out[-1].append(item)
        held += item[1].points
    return out


def _stripped(blocks: Sequence[Block]
              ) -> tuple[dict[int, tuple[sp.Expr, ...]], list[tuple[int, Block]]]:
    """The blocks' formulas once each, and the blocks without them (keyed)."""
    keys: dict[tuple[sp.Expr, ...], int] = {}
    items = []
    for b in blocks:
        k = keys.setdefault(exprs(b), len(keys))
        items.append((k, replace(b, step=sp.Integer(0), first=None)))
    return {k: e for e, k in keys.items()}, items


def run_blocks(blocks: Sequence[Block], *, executor: str = "serial", workers: int | None = None,
               scheduler: str | None = None, timeout: float = 10.0,
               task_points: int = 1 << 21) -> list[BlockResult]:
    """Every block's reductions, in order, on ``executor`` (:data:`EXECUTORS`; a
    ``scheduler`` address means Dask). Worker processes get each step formula once (then
    the blocks without it); the Dask cluster gets each compiled function once (scattered)
    and the blocks in tasks of about ``task_points`` points (at least one per worker)."""
    if scheduler is not None:
        executor = "dask"
    if executor not in EXECUTORS:
        raise SymroofError(f"executor {executor!r}: expected one of {', '.join(EXECUTORS)}")
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise SymroofError(f"workers: expected a positive integer, got {workers!r}")
    if executor == "serial" or not blocks:
        return [evaluate_block(b) for b in blocks]
    if executor == "threads":
        with ThreadPoolExecutor(workers) as pool:
            return list(pool.map(evaluate_block, blocks))
    if executor == "processes":
        table, items = _stripped(blocks)
        with ProcessPoolExecutor(workers, initializer=_install, initargs=(table,)) as pool:
            return list(pool.map(_evaluate_keyed, items, chunksize=max(1, math.ceil(
                len(items) / (4 * (workers or 2))))))
    if scheduler is None:
        raise SymroofError("executor dask: give the scheduler's address (--scheduler)")
    client = _client(scheduler, timeout)
    try:  # each compiled function is scattered once (cloudpickle, a few kB; a SymPy formula
        # takes tens of ms to unpickle) and fetched once by a worker that needs it; blocks
        # travel without their formulas, grouped into tasks of about task_points points
        table, items = _stripped(blocks)
        fns = client.scatter([function(table[k], (B, S)) for k in range(len(table))],
                             hash=False)
        n = len(client.scheduler_info().get("workers", {})) or 1
        groups = _groups(items, task_points, n)
        futures = [client.submit(_evaluate_group, g, *fns, pure=False) for g in groups]
        try:
            return [r for part in client.gather(futures) for r in part]
        except Exception as err:  # a failure on the cluster: one line, not its traceback
            first = (str(err).strip().splitlines() or [type(err).__name__])[0]
            raise SymroofError(f"scheduler {scheduler}: the cluster could not run the plan's "
                               f"blocks ({type(err).__name__}: {first}); its workers need "
                               "this symroof, with the dask extra") from None
    finally:
        client.close()
