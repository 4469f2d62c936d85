"""Online actor-critic training: E environments stepped in parallel, a parameter update at every step.

Every step, for each environment ``e`` (``ActorCritic.act``, mapped over E), the torso advances on the normalised
observation and gives ``v_t``, an action ``a_t`` and the per-step gradients ``g_v``, ``g_logp``, ``g_H``. The TD
error of the previous step is known once ``v_t`` is::

    delta_{t-1} = r_{t-1} + gamma * (1 - done_{t-1}) * v_t - v_{t-1}

and the update (ascent) is AC(lambda) with eligibility traces in parameter space, one per environment (with
``update_every = k``, the ascents of k steps are summed and applied at the k-th)::

    u = mean_e [ delta_{t-1,e} * z_{t-1,e} ] + entropy * mean_e g_H,t,e
    z_t = gamma * lambda * (1 - done_{t-1}) * z_{t-1} + value_coef * g_v,t + g_logp,t

applied by optax (``obgd``: Elsayed et al.'s step-size bound, or ``adam`` / ``sgd`` with global-norm clipping).
The torso's traces (or rolling window) run on across updates and are zeroed where an episode ends; ``lam = 0``
is one-step actor-critic. Rewards are scaled by the running deviation of the discounted return and observations
normalised by running statistics (both options).

``fidelity_every = M``: every M steps, the cosine (torso parameters only: the heads' gradients are exact anyway)
between each environment's online ``g_v`` and ``g_logp`` and the BPTT gradients of the same objectives over the
episode so far, with the current parameters; a history of ``env.max_steps`` inputs is kept for that.

The whole run is a pure function of ``RLState`` (a pytree: checkpoint it to resume bit for bit); ``train`` drives
chunks of ``record_every`` steps, one jitted ``lax.scan`` each, and returns metrics records. ``devices = N``
splits the E environments over N devices (``rtrl.devices``): environment states, torso memory and the traces
``z`` along E, the parameters and statistics replicated; XLA reduces the means over E across the devices.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from jax import lax

from rtrl.devices import batch_axes, mesh, shardings, tracing
from rtrl.driver import drive, finite_or_diverged
from rtrl.optim import make_optimizer
from rtrl.rl.assemble import RLAssembly, assemble
from rtrl.rl.config import RLConfig
from rtrl.rl.normalize import Running, normalized, running_init, running_update, running_var
from rtrl.validate import what

CHUNK = 500  # steps per jitted call at most (a progress-bar tick; the parameters are checked after each)


class Pending(NamedTuple):
    """The previous step, whose TD error the next value completes."""

    value: jax.Array  # (E,)
    reward: jax.Array  # (E,) scaled
    done: jax.Array  # (E,) bool
    valid: jax.Array  # scalar bool: false before the first step


class Tally(NamedTuple):
    """Sums since the last record."""

    episodes: jax.Array
    returns: jax.Array
    cosines: jax.Array  # (2,) value, policy
    checks: jax.Array


class RLState(NamedTuple):
    params: Any
    opt_state: Any
    memory: Any  # the torso's online state, leading axis E
    env_state: Any
    obs: jax.Array  # (E, obs_size): the observation the next step acts on
    obs_stats: Running
    return_stats: Running  # of the discounted return, for reward scaling
    discounted: jax.Array  # (E,) running discounted return
    pending: Pending
    traces: Any  # z, like params with leading axis E
    accumulated: Any  # (ascent, overshoot) summed since the last update (update_every > 1)
    history: jax.Array  # (H, E, obs_size) the torso's last inputs (H = 0 without the fidelity check)
    age: jax.Array  # (E,) steps of the current episode, this one included
    key: jax.Array
    step: jax.Array  # environment steps per environment so far
    tally: Tally


def torso_cosine(a, b) -> jax.Array:
    a, b = (jnp.concatenate([x.ravel() for x in jax.tree.leaves(t["torso"])]) for t in (a, b))
    return a @ b / jnp.maximum(jnp.linalg.norm(a) * jnp.linalg.norm(b), jnp.finfo(a.dtype).tiny)


class OnlineActorCritic:
    """The compiled pieces of a run: ``init(seed)``, ``advance(state, n)``, the environment and the agent."""

    def __init__(self, assembly: RLAssembly | RLConfig):
        assembly = assemble(assembly) if isinstance(assembly, RLConfig) else assembly
        config = self.config = assembly.config
        self.env, self.agent = assembly.env, assembly.agent
        self.optimizer = make_optimizer(config.optimizer, config.lr, config.clip, config.kappa)
        if config.dtype == "float64" and not jax.config.jax_enable_x64:  # JAX would silently run in float32
            raise ValueError("dtype float64 needs JAX's 64-bit mode: jax.config.update('jax_enable_x64', True) "
                             "before anything else (rtrl rl does it)")
        self.dtype = jnp.dtype(config.dtype)
        self.history = self.env.max_steps if config.fidelity_every else 0
        self.mesh = mesh(config.devices, config.envs, "envs", "environments")
        self._compiled = jax.jit(self._advance, static_argnums=1)

    def advance(self, state: RLState, n: int):
        """``n`` steps of every environment, compiled (see ``_advance``)."""
        with tracing(self.mesh):
            return self._compiled(self.place(state), n)

    def init(self, seed: int) -> RLState:
        return self.place(self.fresh(seed, self.config.envs))

    @functools.cached_property
    def sharding(self):
        """``RLState``'s shardings: split along E where a leaf has that axis, else replicated."""
        return shardings(self.mesh, batch_axes(lambda envs: self.fresh(0, envs), self.config.envs))

    def place(self, state: RLState) -> RLState:
        """``state`` on this run's devices (one from a checkpoint of any device count); unchanged on one."""
        return state if self.mesh is None else jax.device_put(state, self.sharding)

    def fresh(self, seed: int, envs: int) -> RLState:
        E, dtype = envs, self.dtype
        k_params, k_env, key = jax.random.split(jax.random.PRNGKey(seed), 3)
        params = self.agent.init(k_params, dtype)
        obs, env_state = jax.vmap(self.env.reset)(jax.random.split(k_env, E))
        zeros = jnp.zeros((E,), dtype)
        return RLState(
            params=params, opt_state=self.optimizer.init(params), memory=self.agent.memory(params, E),
            env_state=env_state, obs=obs.astype(dtype), obs_stats=running_init((self.env.obs_size,), dtype),
            return_stats=running_init((), dtype), discounted=zeros,
            pending=Pending(zeros, zeros, jnp.zeros((E,), bool), jnp.array(False)),
            traces=jax.tree.map(lambda a: jnp.zeros((E, *a.shape), dtype), params),
            accumulated=(jax.tree.map(jnp.zeros_like, params), jnp.zeros((), dtype)),
            history=jnp.zeros((self.history, E, self.env.obs_size), dtype), age=jnp.zeros((E,), jnp.int32),
            key=key, step=jnp.zeros((), jnp.int32),
            tally=Tally(jnp.zeros((), jnp.int32), jnp.zeros((), dtype), jnp.zeros((2,), dtype),
                        jnp.zeros((), jnp.int32)))

    def _one(self, state: RLState, _) -> tuple[RLState, None]:
        c, agent, E = self.config, self.agent, self.config.envs
        key, k_act, k_env = jax.random.split(state.key, 3)
        obs_stats = running_update(state.obs_stats, state.obs) if c.normalize_obs else state.obs_stats
        x = normalized(obs_stats, state.obs) if c.normalize_obs else state.obs
        params = state.params
        action, value, grads, memory = jax.vmap(agent.act, in_axes=(None, 0, 0, 0))(
            params, state.memory, x, jax.random.split(k_act, E))
        g_v, g_logp, g_entropy = (jax.tree.map(lambda a, i=i: a[:, i], grads) for i in range(3))
        age = jnp.where(state.pending.done | ~state.pending.valid, 1, state.age + 1)

        tally = state.tally
        if c.fidelity_every:
            H = self.history
            history = jnp.roll(state.history, -1, axis=0).at[-1].set(x)

            def check(_):
                bptt = jax.vmap(agent.bptt_grads, in_axes=(None, 1, 0, 0))(params, history, H - age, action)
                ref_v, ref_logp = (jax.tree.map(lambda a, i=i: a[:, i], bptt) for i in range(2))
                return jnp.stack([jax.vmap(torso_cosine)(g_v, ref_v).mean(),
                                  jax.vmap(torso_cosine)(g_logp, ref_logp).mean()])

            due = state.step % c.fidelity_every == 0
            cosines = lax.cond(due, check, lambda _: jnp.zeros((2,), self.dtype), None)
            tally = tally._replace(cosines=tally.cosines + cosines, checks=tally.checks + due)
        else:
            history = state.history

        # The previous step's TD error, and the update it makes with the traces up to that step.
        p = state.pending
        delta = jnp.where(p.valid, p.reward + c.gamma * jnp.where(p.done, 0.0, value) - p.value, 0.0)
        ascent = jax.tree.map(lambda z, h: jnp.tensordot(delta, z, 1) / E + c.entropy * h.mean(axis=0),
                              state.traces, g_entropy)
        l1 = sum(jnp.abs(z).reshape(E, -1).sum(axis=1) for z in jax.tree.leaves(state.traces))
        overshoot = (jnp.maximum(jnp.abs(delta), 1.0) * l1).mean()
        ascent = jax.tree.map(jnp.add, state.accumulated[0], ascent)
        overshoot = state.accumulated[1] + overshoot

        def update(_):
            updates, opt_state = self.optimizer.update(jax.tree.map(jnp.negative, ascent), state.opt_state, params,
                                                       overshoot=overshoot)
            return optax.apply_updates(params, updates), opt_state, jax.tree.map(jnp.zeros_like, (ascent, overshoot))

        if c.update_every == 1:
            params, opt_state, accumulated = update(None)
        else:
            due = (state.step + 1) % c.update_every == 0
            params, opt_state, accumulated = lax.cond(due, update, lambda _: (params, state.opt_state,
                                                                              (ascent, overshoot)), None)
        decay = c.gamma * c.lam * jnp.where(p.done, 0.0, 1.0)
        traces = jax.tree.map(lambda z, gv, gp: decay.reshape((E,) + (1,) * (z.ndim - 1)) * z + c.value_coef * gv + gp,
                              state.traces, g_v, g_logp)

        obs, env_state, reward, done = jax.vmap(self.env.step)(jax.random.split(k_env, E), state.env_state, action)
        reward = reward.astype(self.dtype)
        discounted = c.gamma * jnp.where(p.done, 0.0, state.discounted) + reward
        return_stats = running_update(state.return_stats, discounted) if c.scale_rewards else state.return_stats
        scaled = reward / jnp.sqrt(running_var(return_stats) + 1e-8) if c.scale_rewards else reward
        memory = agent.reset(memory, done)
        tally = tally._replace(episodes=tally.episodes + done.sum(dtype=jnp.int32),
                               returns=tally.returns + jnp.where(done, env_state.last_return, 0.0).sum())
        return RLState(params, opt_state, memory, env_state, obs.astype(self.dtype), obs_stats, return_stats,
                       discounted, Pending(value, scaled, done, jnp.array(True)), traces, accumulated, history, age,
                       key, state.step + 1, tally), None

    def _advance(self, state: RLState, n: int) -> RLState:
        state = lax.scan(self._one, state, None, length=n)[0]
        return state if self.mesh is None else lax.with_sharding_constraint(state, self.sharding)


def record(state: RLState) -> dict:
    """The metrics record of the steps since the last one (``return`` is None where no episode ended)."""
    t = jax.device_get(state.tally)
    episodes = int(t.episodes)
    rec = {"step": int(state.step), "return": float(t.returns) / episodes if episodes else None,
           "episodes": episodes}
    if int(t.checks):
        rec["cos_value"], rec["cos_policy"] = (float(v) / int(t.checks) for v in t.cosines)
    return rec


def cleared(state: RLState) -> RLState:
    return state._replace(tally=jax.tree.map(jnp.zeros_like, state.tally))


_RUNNERS: dict[RLConfig, OnlineActorCritic] = {}


def runner(assembly: RLAssembly | RLConfig) -> OnlineActorCritic:
    """The compiled pieces of a run (``assembly``, or a configuration, then assembled), shared by every run that
    differs only in its length or seed (so ``train`` called again, to resume, with more steps or another seed,
    compiles nothing new)."""
    key = dataclasses.replace(getattr(assembly, "config", assembly), steps=1, record_every=1, seed=0)
    if key not in _RUNNERS:
        _RUNNERS[key] = OnlineActorCritic(assembly if isinstance(assembly, RLAssembly) else assemble(assembly))
    return _RUNNERS[key]


def train(config: RLConfig | RLAssembly, state: RLState | None = None,
          on_record: Callable[[dict, RLState], None] | None = None,
          on_chunk: Callable[[RLState, int], None] | None = None, wall_s: float = 0.0) -> tuple[RLState, list[dict]]:
    """Run ``config`` (or its assembly) up to ``config.steps`` steps per environment (from ``state``, or from the
    start), one record at every multiple of ``record_every`` and at the end (``rtrl.driver.drive``);
    ``on_record(record, state)`` after each (a checkpoint there resumes the run exactly), ``on_chunk(state, n)``
    after every ``n`` steps done (one jitted call). ``wall_s``: the time already spent (a resumed run). Stops with
    ``rtrl.driver.Diverged`` if a parameter stops being finite (``on_record`` has seen nothing past the previous
    record)."""
    if not isinstance(config, (RLConfig, RLAssembly)):
        raise TypeError(f"config must be an RLConfig, e.g. rl.train(rl.RLConfig(env='tmaze')), got {what(config)}")
    run = runner(config)
    config = getattr(config, "config", config)
    state = run.init(config.seed) if state is None else state
    records = []

    def advance(state, step, n):
        state = run.advance(state, n)
        finite_or_diverged(step + n, state.params)
        return state

    def on(state, rec):
        records.append(rec)
        if on_record is not None:
            on_record(rec, state)

    state = drive(state, config.steps, config.record_every, CHUNK, advance,
                  lambda state, step: (record(state), cleared(state)), None, on, on_chunk, wall_s)
    return state, records


def mean_return(records: list[dict], last: int = 1) -> float:
    """Mean of the last ``last`` records' returns (those where episodes ended)."""
    values = [r["return"] for r in records[-last:] if r["return"] is not None]
    return sum(values) / len(values) if values else math.nan
