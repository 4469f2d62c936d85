"""The contract of an online-RL algorithm (``Algorithm``) and the records it reads and gives each step.

An algorithm is a value (``rtrl.rl.algorithms``: one module each, built as ``cls(cell, num_actions, method,
truncation, **options)``, its options constructor arguments); the loop (``rtrl.rl.loop``, the same for every
algorithm) gives it each step the previous step as a ``Pending`` (its estimate and its ``Transition``: the reward,
whether the episode terminated or was truncated, and the algorithm's own value of a truncated episode's final
observation, ``bootstrap``) and takes from it a ``Stepped`` (the action, the drive of the traces, ...) and the update
rule's extra arguments (``learn``: the TD error and where the traces are cut, each algorithm's own). The shape is
rlax's: the TD error and the end-of-episode rule belong to the algorithm, not to the loop; ``td_error`` is the rule
every algorithm here applies, a plain function.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol, runtime_checkable

import jax
import jax.numpy as jnp

from rtrl.rl.agent import Torso


class Transition(NamedTuple):
    """One step's outcome for all E environments (leading axis E), as the algorithm's TD error reads it."""

    reward: jax.Array  # (E,) as the vector wrappers give it (scaled)
    terminated: jax.Array  # (E,) bool: the episode ended in a terminal state (nothing is owed after it)
    truncated: jax.Array  # (E,) bool: the episode was cut (a time limit); its final observation's value is owed
    final_value: jax.Array  # (E,) where truncated, the algorithm's value of the final observation (``bootstrap``)

    @property
    def done(self) -> jax.Array:
        """(E,) bool: the episode ended, terminated or truncated (the torso is reset, the traces cut)."""
        return self.terminated | self.truncated


class Pending(NamedTuple):
    """The previous step, whose TD error the next step's estimate completes."""

    value: jax.Array  # (E,) its estimate (``Stepped.value``)
    transition: Transition
    valid: jax.Array  # scalar bool: false before the run's first step (nothing pending)
    exploratory: jax.Array  # (E,) bool: its action was not the greedy one (``Stepped.exploratory``)


class Stepped(NamedTuple):
    """What an algorithm's step gives the update, for all E environments (leading axis E)."""

    action: jax.Array  # (E,)
    value: jax.Array  # (E,) the estimate whose TD error the next step finds: v_t, or Q(s_t, a_t)
    target: jax.Array  # (E,) what the previous step's TD target bootstraps from: v_t, max_a Q(s_t, a), Q(s_t, a_t)
    drive: Any  # per environment, the gradient that enters the eligibility traces
    bonus: Any  # an ascent added to every update (one tree without E), or None
    exploratory: jax.Array  # (E,) bool: the action is not the greedy one (Watkins' cut after it)
    memory: Any  # the torso's online state after the step
    entropy: jax.Array  # (E,) of the policy the action was drawn from
    extra: Any = None  # the further extra arguments the algorithm's correction of the update reads (a dict), or None


def td_error(pending: Pending, target: jax.Array, gamma: float) -> jax.Array:
    """(E,): the previous step's TD error once this step's ``target`` is known, 0 where nothing is pending (the
    run's first step)::

        delta_{t-1} = r_{t-1} + gamma * next - value_{t-1},   next = target_t        where the episode goes on
                                                                     0               where it terminated
                                                                     final_value     where it was truncated

    (written ``where(done, owed, target)``, ``owed`` the final value or 0: the form whose compiled arithmetic gives a
    run's parameters to the last bit as before the transition was the algorithm's).
    """
    p, t = pending, pending.transition
    owed = jnp.where(t.truncated, t.final_value, 0.0)  # what an ended episode bootstraps from
    return jnp.where(p.valid, t.reward + gamma * jnp.where(t.done, owed, target) - p.value, 0.0)


def update_arguments(stepped: Stepped, delta: jax.Array, cut: jax.Array, done: jax.Array) -> dict:
    """The update rule's extra arguments (``rtrl.rl.transforms``) of a step: the previous step's TD error ``delta``,
    ``cut`` (where the traces are cut before this step's drive enters them), ``done`` (where the previous step ended
    an episode), ``bonus`` and ``grads`` (the drive again), and ``stepped.extra``."""
    return {"delta": delta, "cut": cut, "done": done, "bonus": stepped.bonus, "grads": stepped.drive,
            **(stepped.extra or {})}


def learn_on_policy(agent, pending: Pending, stepped: Stepped, gamma: float, lam: float) -> dict:
    """An algorithm's ``learn`` that bootstraps from ``stepped.target`` and cuts the traces where an episode ended,
    nowhere else (no action is off-policy: the actor-critics, SARSA(lambda))."""
    done = pending.transition.done
    return update_arguments(stepped, td_error(pending, stepped.target, gamma), done, done)


def no_correction(agent, gamma: float, decay: float, envs: int) -> None:
    """An algorithm's ``correction`` where it has none: the TD ascent as it is."""
    return None


@runtime_checkable
class Algorithm(Protocol):
    """What ``rtrl.rl.loop``, ``rtrl.rl.assemble``, a rollout and the fidelity check read of an algorithm. Besides
    these, one that hands the value's and the policy's gradients apart (``split_critic``, under ``--critic-lr``) may
    say which parameters each can reach, ``reaches(params) -> (value_keep, policy_keep)`` (trees of bools), so that
    the split rule keeps each side's traces on its own leaves (``rtrl.rl.transforms.split_intentional``); without
    it each side keeps every leaf. One whose ``td_refresh`` is true has its step's estimate evaluated again after the
    step's update, ``value(params, memory, x)`` (one environment's, from the carry the step began with), so that
    the next TD error reads both of its values at one set of parameters."""

    torso: Torso  # the cell under its online learner; ``params["torso"]`` its parameters
    num_actions: int  # a Discrete space's actions, or a Box's dimensions
    options: tuple[str, ...]  # the ``RLConfig`` options it takes, as keyword arguments of the same names
    checked: int  # how many of ``objective_grads``' gradients the fidelity check compares with ``bptt_grads``'

    def init(self, key: jax.Array, dtype=jnp.float32) -> Any:
        """The parameters (the torso's under ``"torso"``)."""

    def act(self, params, memory, x: jax.Array, key: jax.Array, greedy: bool = False) -> tuple[jax.Array, Any]:
        """One environment's ``(action, memory')`` on the observation ``x``, no gradient taken (an evaluation, a
        rollout): ``greedy`` (a Python bool) the policy's best action, else a draw from the behaviour policy."""

    def stepped(self, params, memory, x: jax.Array, key: jax.Array, step: jax.Array) -> Stepped:
        """All E environments' step (``x`` (E, D), ``memory`` leading axis E) at the loop's ``step``."""

    def learn(self, pending: Pending, stepped: Stepped, gamma: float, lam: float) -> dict:
        """The update rule's extra arguments of this step (``update_arguments``): the previous step's TD error and
        where the traces are cut, from the ``pending`` step and this one, under the discount ``gamma`` and the
        traces' ``lam`` (what a lambda-return's backward view may read, as rlax's ``lambda_``)."""

    def bootstrap(self, params, memory, x: jax.Array, step: jax.Array) -> jax.Array:
        """One environment's value of a truncated episode's final observation ``x`` (the torso's step on it from the
        episode's carry ``memory``, nothing kept), at the loop's ``step`` (the one that acted): what the pending
        ``Transition`` carries as ``final_value``."""

    def correction(self, gamma: float, decay: float, envs: int) -> Any:
        """The member of the update rule's chain that corrects the TD ascent (``rtrl.rl.transforms``), for the
        discount ``gamma``, the traces' ``decay`` (gamma * lambda) and ``envs`` environments; None: none."""

    def objective_grads(self, params, memory, x: jax.Array, action: jax.Array) -> tuple:
        """One environment's ``(estimate, grads, memory', entropy)``, ``grads`` the online gradients of its
        objectives for ``action`` (leading axis the objective)."""

    def bptt_grads(self, params, xs: jax.Array, start: jax.Array, action: jax.Array) -> Any:
        """The gradients of ``objective_grads`` by BPTT over the inputs ``xs`` (H, D), the episode begun at
        ``xs[start]``."""
