"""The pieces every algorithm composes (``rtrl.rl.algorithms``): the torso (``Torso``: a cell under an online learner,
``learner_of``), the encoder blocks before it (``encoder_sizes``, ``encoder_params``, ``encoded``), the heads on it
(``through_head``, ``head_params``, ``heads``: ``policy_head`` and ``value_head`` together) and the per-step
objectives of a categorical policy (``objectives``, ``split_drive``). Plain functions and one class that no
algorithm subclasses: an algorithm holds a ``Torso`` (``algorithm.torso``) and calls the functions it needs.

The heads' parameters: ``{"policy": {"W": (N, A), "b": (A,)}, "value": {"W": (N, 1), "b": (1,)}}`` on the torso's
``N`` outputs, with ``head_hidden = M > 0`` also ``"head": {"W": (N, M), "b": (M,)}``, a tanh layer the heads read
(``u = tanh(h @ W + b)``, the heads (M, A) and (M, 1)): a non-linear readout of the torso that needs no traces (it
does not recur), its gradient immediate. With ``split`` (``split_torso``) the policy reads the first half of the
torso's units and the value the second half, each through a tanh layer of its own (``"head"``, ``"value_head"``).

Encoder blocks (``encoder_blocks K``, ``encoder_width M``; Farr et al.'s MuJoCo torso): ``"encoder"``, a list of K
``{"W": (D or M, M), "b": (M,)}``, each block ``e = leaky_relu(layer_norm(x @ W + b))`` (``rtrl.cells.encoder.block``:
non-affine LayerNorm, slope 0.01; ``W`` sparse at 0.9, ``b`` zeros), the torso stepping on the last block's ``e``
(with ``critic_network``, ``{"part0": [...], "part1": [...]}``, a stack per network).
The blocks sit outside the cell, so their gradient is the immediate one of the step (the online step's derivative
w.r.t. its input): what reaches the torso's state through earlier steps is cut, as in Farr et al.'s code, whose
RTRL sensitivities cover the RTU's own parameters only. For exact traces of such a block use the cell
``rtrl.cells.encoder.Encoded`` instead.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from rtrl.cells.base import Cell, glorot
from rtrl.cells.encoder import block, sparse_init
from rtrl.checks import check_positive_int
from rtrl.methods import TBPTT, Method, resolve
from rtrl.online import Learner, online, zero_where
from rtrl.rl.rolling import RollingTBPTT

SPARSITY = 0.9  # zero weights per unit of a sparse layer, encoder blocks and sparse heads (Farr et al.'s sparse(0.9))


def learner_of(cell: Cell, method: str | Method | RollingTBPTT, truncation: int) -> Learner:
    """The learner of ``cell`` under ``method``: a trace method bound by ``rtrl.online``; for ``tbptt`` the rolling
    window (``RollingTBPTT``) of ``truncation`` steps, or of its own when ``method`` is a ``TBPTT`` or
    ``RollingTBPTT`` object; ``ValueError`` for a method an online agent cannot use."""
    if isinstance(method, RollingTBPTT):
        return method.bind(cell)
    if method == "tbptt" or isinstance(method, TBPTT):
        return RollingTBPTT(method.truncation if isinstance(method, TBPTT) else truncation).bind(cell)
    method = resolve(method, cell)
    if not method.online:
        raise ValueError(f"method {method.name!r} needs whole episodes and cannot drive an online agent; use a "
                         "trace method (e.g. 'rtrl') or 'tbptt' (rolling truncated BPTT, window 'truncation')")
    return online(cell, method)


def encoder_sizes(observations: int | None, blocks: int, width: int, cell: Cell, parts: int = 1
                  ) -> tuple[int, ...]:
    """``(D, M, ..., M)`` (K + 1 sizes) of ``blocks = K`` encoder blocks of ``width = M`` on ``observations = D``
    inputs, ``()`` for none; ``ValueError`` naming the option that is not a non-negative (a positive) integer, or a
    cell that does not read ``parts * width`` inputs (``parts`` stacks of blocks side by side, one per network)."""
    if not isinstance(blocks, int) or isinstance(blocks, bool) or blocks < 0:
        raise ValueError(f"encoder_blocks must be a non-negative integer, got {blocks!r}")
    if not blocks:
        return ()
    check_positive_int("encoder_width", width)
    check_positive_int("observations", observations)
    if cell.input_size != parts * width:
        needs = f"encoder_width {width}" if parts == 1 else f"{parts} x encoder_width {width} (a stack of blocks each)"
        raise ValueError(f"cell input_size must be {needs} (the torso reads the last encoder block), got "
                         f"{cell.input_size}")
    return (observations, *(width,) * blocks)


def encoder_params(key: jax.Array, sizes: tuple[int, ...], dtype, parts: int = 1) -> dict:
    """``{"encoder": [{"W", "b"}, ...]}`` for the blocks of ``sizes`` (``encoder_sizes``; ``{}`` for none), block
    ``i`` drawn from its own key (``fold_in(key, 16 + i)``), so the parameters without them are those of before;
    ``parts > 1``: ``{"encoder": {"part0": [...], "part1": [...], ...}}``, one stack of blocks per network, named as
    ``rtrl.cells.Parallel`` names its members (part ``p``'s block ``i`` drawn from ``fold_in`` of block ``i``'s key
    and ``p``). Each part's leaves its own, so an update rule can keep a network's traces apart
    (``rtrl.rl.algorithms.ac.reaches``)."""
    if not sizes:
        return {}
    pairs = list(zip(sizes[:-1], sizes[1:], strict=True))

    def stack(part: int | None) -> list:
        def fold(k):
            return k if part is None else jax.random.fold_in(k, part)
        return [{"W": sparse_init(fold(jax.random.fold_in(key, 16 + i)), (d, m), SPARSITY, dtype),
                 "b": jnp.zeros((m,), dtype)} for i, (d, m) in enumerate(pairs)]

    if parts == 1:
        return {"encoder": stack(None)}
    return {"encoder": {f"part{p}": stack(p) for p in range(parts)}}


def encoded(params, x: jax.Array) -> jax.Array:
    """``x`` (..., D) through the encoder blocks ``params["encoder"]`` where ``params`` has them, else ``x``: what
    the torso reads. Several stacks (``encoder_params``' ``parts``) run side by side on ``x``, their outputs
    concatenated (..., parts * M) in the parts' order."""
    layers = params.get("encoder", ())
    if isinstance(layers, dict):
        return jnp.concatenate([encoded({"encoder": layers[f"part{p}"]}, x) for p in range(len(layers))], axis=-1)
    for layer in layers:
        x = block(x @ layer["W"] + layer["b"])
    return x


def through_head(params, h: jax.Array, name: str = "head") -> jax.Array:
    """The torso's output ``h`` through the tanh layer ``tanh(h @ W + b)`` ``params[name]`` where ``params`` has one
    (``head_hidden``), else ``h``: what the heads read."""
    return jnp.tanh(h @ params[name]["W"] + params[name]["b"]) if name in params else h


def head_params(key: jax.Array, torso_size: int, head_hidden: int, dtype, split: bool = False) -> dict:
    """``{"head": {"W": (N, M), "b": (M,)}}`` for a tanh layer of ``M = head_hidden`` units (``{}`` for none), drawn
    from its own key (``fold_in(key, 1)``), so the parameters without it are those of before it existed; with
    ``split`` (``split_torso``) two of ``N / 2`` inputs, the value's ``"value_head"`` (``fold_in(key, 2)``)."""
    if not head_hidden:
        return {}
    reads = torso_size // 2 if split else torso_size
    layers = {"head": 1, "value_head": 2} if split else {"head": 1}
    return {name: {"W": glorot(jax.random.fold_in(key, i), (reads, head_hidden), dtype),
                   "b": jnp.zeros((head_hidden,), dtype)} for name, i in layers.items()}


def policy_head(params, h: jax.Array) -> jax.Array:
    """The policy's output on what it reads of the torso, ``h``: through the tanh layer ``"head"`` where there is
    one, then ``"policy"``."""
    return through_head(params, h) @ params["policy"]["W"] + params["policy"]["b"]


def value_head(params, h: jax.Array, split: bool = False) -> jax.Array:
    """The value on what it reads of the torso, ``h``: through the value's tanh layer (``"value_head"`` with
    ``split``, else the shared ``"head"``) where there is one, then ``"value"``."""
    return (through_head(params, h, "value_head" if split else "head") @ params["value"]["W"]
            + params["value"]["b"])[0]


def heads(params, h: jax.Array, split: bool = False) -> tuple[jax.Array, jax.Array]:
    """``(logits, value)`` of one hidden state ``h`` (N,), through the tanh layer where ``params`` has one; with
    ``split`` (``split_torso``) the policy reads ``h[:N/2]`` and the value ``h[N/2:]``, each through its own."""
    half = h.shape[-1] // 2 if split else None
    return policy_head(params, h[:half]), value_head(params, h[half:] if split else h, split)


def split_drive(pullback, d_policy, dtype) -> dict:
    """``{"value": grad v_t, "policy": grad log pi(a_t)}`` from one environment's ``pullback`` of ``(policy
    output, value)``, ``d_policy`` the cotangent of ``log pi(a_t)`` w.r.t. the policy's output: two pullbacks, for
    a step rule that moves the critic and the actor apart (``rtrl.rl.transforms.split_intentional``)."""
    zero = jax.tree.map(jnp.zeros_like, d_policy)
    return {"value": pullback((zero, jnp.ones((), dtype)))[0], "policy": pullback((d_policy, jnp.zeros((), dtype)))[0]}


def objectives(logits: jax.Array, action: jax.Array) -> jax.Array:
    """``[log pi(action), entropy]`` of the policy ``softmax(logits)``."""
    logp = jax.nn.log_softmax(logits)
    return jnp.stack([logp[action], -(jnp.exp(logp) * logp).sum()])


def check_heads(num_actions: int, head_hidden: int) -> tuple[int, int]:
    """``(num_actions, head_hidden)``, checked: ``ValueError`` naming the one that is not a positive (a
    non-negative) integer."""
    check_positive_int("num_actions", num_actions)
    if not isinstance(head_hidden, int) or head_hidden < 0:
        raise ValueError(f"head_hidden must be a non-negative integer, got {head_hidden}")
    return num_actions, head_hidden


class Torso:
    """The recurrent torso every algorithm holds (``algorithm.torso``): ``cell`` under its online ``learner``
    (``learner_of``: a trace method, or tbptt's rolling window of ``truncation`` steps), its per-environment state,
    its reset and, for the fidelity check, its BPTT unroll. Its parameters are ``params["torso"]``."""

    def __init__(self, cell: Cell, method: str | Method | RollingTBPTT = "rtrl", truncation: int = 8):
        if not isinstance(cell, Cell):
            raise ValueError(f"cell must be an rtrl cell (rtrl.cells.*), got {cell!r}")
        self.cell, self.learner = cell, learner_of(cell, method, truncation)

    def memory(self, params, envs: int):
        """The torso's online state for ``envs`` environments (leading axis), each mapped separately."""
        one = self.learner.init(params["torso"])
        return jax.tree.map(lambda a: jnp.broadcast_to(a, (envs, *a.shape)), one)

    def reset(self, memory, done: jax.Array):
        """Zero the torso's state where an episode ended (``done``: (E,) bool)."""
        return jax.vmap(self.learner.reset)(memory, done)

    def unrolled(self, torso, xs: jax.Array, start: jax.Array) -> jax.Array:
        """The torso's output after the inputs ``xs`` (H, D), the episode begun at ``xs[start]`` (the carry zeroed
        there; earlier inputs do not count): one ``lax.scan``, what an algorithm's ``bptt_grads`` differentiates."""

        def body(carry, jx):
            j, x = jx
            carry, h = self.cell.step(torso, zero_where(j == start, carry), x)
            return carry, h

        zero = self.cell.initial_carry((), xs.dtype)
        return lax.scan(body, zero, (jnp.arange(xs.shape[0]), xs))[1][-1]
