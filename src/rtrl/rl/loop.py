"""Online actor-critic training: E environments stepped in parallel, a parameter update at every step.

Every step, for each environment ``e`` (the algorithm's ``stepped``, all E at once), the torso advances on the
observation (normalised) and gives ``v_t``, an action ``a_t`` and the per-step gradients ``g_v``, ``g_logp``,
``g_H``. The TD error of the previous step is known once ``v_t`` is::

    delta_{t-1} = r_{t-1} + gamma * next_{t-1} - v_{t-1},   next = v_t          where the episode goes on
                                                                   0            where it terminated
                                                                   V(s_T)       where it was truncated

where ``V(s_T)`` is the value of the truncated episode's last observation (the torso's step on it from the
episode's carry, with the parameters ``v_t`` uses; computed only at steps where some environment truncates). The
algorithm owns both (``rtrl.rl.algorithm``): the loop hands it the previous step as a ``Pending`` holding its
``Transition`` (reward, terminated, truncated, and the algorithm's ``bootstrap`` of the final observation, ``V(s_T)``),
and the algorithm's ``learn`` makes the TD error and the traces' cut of it.

and the update (ascent) is AC(lambda) with eligibility traces in parameter space, one per environment (with
``update_every = k``, the ascents of k steps are summed and applied at the k-th)::

    u = mean_e [ delta_{t-1,e} * z_{t-1,e} ] + entropy * mean_e g_H,t,e
    z_t = gamma * lambda * (1 - done_{t-1}) * z_{t-1} + value_coef * g_v,t + g_logp,t

applied by optax (``obgd``: Elsayed et al.'s step-size bound, or ``adam`` / ``sgd`` with global-norm clipping).
The torso's traces (or rolling window) run on across updates and are zeroed where an episode ends; ``lam = 0``
is one-step actor-critic. Rewards are scaled by the running deviation of the discounted return and observations
normalised by running statistics (both options): wrappers of the vector of environments
(``rtrl.rl.envs.normalize``), applied to the batch's ``Outcome`` in ``_observe``, so both loops share them.

``fidelity_every = M``: every M steps, the cosine (torso parameters only: the heads' gradients are exact anyway)
between each environment's online ``g_v`` and ``g_logp`` (a Q agent's: ``grad Q(s_t, a_t)``, as ``cos_value``) and
the BPTT gradients of the same objectives over the episode so far, with the current parameters; a history of
``env.max_steps`` inputs is kept for that.

A step is two parts that every loop shares: the agent's (``_act``: act, TD error, update, traces) and, after the
environments' step, its bookkeeping (``_observe``: the vector wrappers (observation normalisation, reward scaling),
the value owed at a truncation, resets, tallies).
With a jitted environment the whole run is a pure function of ``RLState`` (a pytree: checkpoint it to resume bit
for bit); ``train`` drives chunks of ``record_every`` steps, one jitted ``lax.scan`` each, and returns metrics
records. A host environment (``gymnasium:ID``) is stepped in Python between the jitted calls: per step, one jitted
call (the previous step's ``_observe`` and this step's ``_act``), the actions to the host, the environments' step,
the outcome to the device. Its environments are not in ``RLState`` but the run's (``HostEnvironments``, one per run:
two runs of one configuration in a process never step each other's): a state that is not the one this run last
returned (a checkpoint loaded, another run's) re-seeds them from the state's key (a function of the run's seed and
the step), and every environment begins a new episode there (no TD error across the cut, the traces and the
torso's state zeroed). With ``seeds = S > 1`` on a host environment the S seeds' agent steps run under one
``vmap`` and their environments are one host vector of S x E, each seed's E reset with its one-seed run's seeds.
What is compiled (``Program``: pure functions of ``RLState``, no live environment) is shared
by the runs of one configuration (``runner``): another length, record_every, seed or resume point compiles nothing.
The two kinds of environment meet the loop at one seam, a run's ``environments`` (``CompiledEnvironments`` or
``HostEnvironments``: ``init``, ``advance``, ``timing_record``), chosen once by the program (``Program.side``).

``devices = N`` splits the E environments over N devices (``rtrl.devices``): environment states, torso memory and
the traces ``z`` along E, the parameters and statistics replicated; XLA reduces the means over E across the devices.
With ``seeds = S > 1`` it splits the seeds instead: every leaf of ``Seeds.runs`` along S, S/N seeds and all their
environments on each device, nothing exchanged between devices. The mesh spans every process's devices after
``jax.distributed.initialize`` (each process then holds its devices' seeds or environments; docs/devices.md).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import lax

from rtrl.devices import batch_axes, gathered, mesh, shardings, tracing
from rtrl.driver import Diverged, drive, finite_or_diverged
from rtrl.rl.algorithm import Pending, Transition
from rtrl.rl.assemble import RLAssembly, assemble, compiled_part, rule_of
from rtrl.rl.config import RLConfig
from rtrl.rl.envs.extra_inputs import clock_columns
from rtrl.rl.envs.gymnasium_env import Outcome
from rtrl.rl.envs.normalize import chain, normalize_observations, scale_rewards
from rtrl.rl.progress import Progress
from rtrl.rl.transforms import eligibility
from rtrl.validate import what

CHUNK = 500  # steps per jitted call at most (a progress-bar tick; the parameters are checked after each)


# The learner's health, a mean over the sampled steps since the last record (every ``health_every``-th step, from
# step 0; each step's figure a mean over the environments): what to watch for a run that learns and then collapses
# (docs/rl-history.md, the health table and the late collapse). Sampled, not taken every step: the norms are
# passes over the parameter-space traces (E x the parameters), as long as the update itself where the torso has a
# dense readout.
HEALTH = ("value_scale",  # |v_t|
          "td_rms",  # sqrt of the mean squared TD error (of the scaled rewards)
          "entropy",  # of the policy
          "update_norm",  # global L2 norm of the step's update: what the rule (any optimizer) adds to the parameters
          "eligibility_norm",  # L2 norm of the parameter-space traces z of an environment (every set the rule keeps:
          # under --critic-lr the critic's and the actor's together, sqrt(|z_v|^2 + |z_pi|^2))
          "torso_norm",  # L2 norm of the torso's online state of an environment (its carry and traces)
          "param_norm")  # global L2 norm of the parameters

# Where a host run's time goes, seconds since the last record, in its records (``timing_record``): its jitted
# agent calls (the outcome's host arrays taken in by the call itself), the actions' transfer to the host, and the
# environments' steps.
TIMINGS = ("agent_s", "transfer_s", "env_s")


class Tally(NamedTuple):
    """Sums since the last record."""

    episodes: jax.Array
    returns: jax.Array
    cosines: jax.Array  # (checked,): value, policy (a Q agent: Q(s_t, a_t), as the value)
    checks: jax.Array
    health: jax.Array  # (len(HEALTH),) summed over the sampled steps
    steps: jax.Array  # the steps sampled for the health


def per_env_norm(tree, envs: int) -> jax.Array:
    """(E,): the L2 norm of each environment's slice of ``tree`` (leaves with leading axis E)."""
    return jnp.sqrt(sum((jnp.abs(a) ** 2).reshape(envs, -1).sum(axis=1) for a in jax.tree.leaves(tree)))


class RLState(NamedTuple):
    params: Any
    opt_state: Any  # the update rule's state (``rtrl.rl.transforms.update_rule``), its traces among it
    memory: Any  # the torso's online state, leading axis E
    env_state: Any
    obs: jax.Array  # (E, obs_size): the observation the next step acts on (as the vector wrappers give it)
    wrappers: Any  # the vector wrappers' state (``rtrl.rl.envs.normalize.chain``): the running statistics
    pending: Pending
    history: jax.Array  # (H, E, obs_size) the torso's last inputs (H = 0 without the fidelity check)
    age: jax.Array  # (E,) steps of the current episode, this one included
    key: jax.Array
    step: jax.Array  # environment steps per environment so far
    tally: Tally

    @property
    def traces(self):
        """The eligibility traces ``z``, like the parameters with a leading axis E, found in the rule's state by their
        type (``rtrl.rl.transforms.eligibility``); under ``split_intentional`` (``--critic-lr``) the tuple of its two
        sets, the critic's and the actor's."""
        sets = eligibility(self.opt_state)
        return sets[0] if len(sets) == 1 else sets


class Seeds(NamedTuple):
    """``seeds = S`` runs of one configuration, with the seeds ``seed, seed + 1, ..., seed + S - 1``: their states
    stacked along a leading axis and advanced under one ``jax.vmap`` (a host environment's: the agent's steps, the
    seeds' environments one host vector). A checkpoint of it resumes every seed."""

    runs: RLState  # every leaf with leading axis S
    step: jax.Array  # environment steps per environment so far (the same in every seed)


class Acted(NamedTuple):
    """A step's agent part done (``_act``), the environments' step to come."""

    state: RLState  # the parameters updated, the torso advanced (not yet reset), the key advanced
    action: jax.Array  # (E,)
    value: jax.Array  # (E,) v_t
    exploratory: jax.Array  # (E,) bool
    env_key: jax.Array  # the environments' key of this step (jitted environments)


def torso_cosine(a, b) -> jax.Array:
    a, b = (jnp.concatenate([x.ravel() for x in jax.tree.leaves(t["torso"])]) for t in (a, b))
    return a @ b / jnp.maximum(jnp.linalg.norm(a) * jnp.linalg.norm(b), jnp.finfo(a.dtype).tiny)


class Program:
    """A configuration's compiled pieces: pure functions of ``RLState`` (the agent's part of a step, the
    bookkeeping, a chunk of steps), each jitted once, with the environment's description and the agent. No live
    environment: a host environment's (``gymnasium:ID``) are a run's own (``OnlineActorCritic``), so every run of
    the configuration in a process shares one program (``runner``) and nothing that a run changes."""

    def __init__(self, assembly: RLAssembly | RLConfig):
        assembly = assemble(assembly) if isinstance(assembly, RLConfig) else assembly
        config = self.config = assembly.config
        self.env, self.agent = assembly.env, assembly.agent
        self.optimizer = self.rule(config.envs)
        clock = clock_columns(config.extra_inputs)
        self.wrappers = chain(*(wrapper for on, wrapper in ((config.normalize_obs, normalize_observations(clock)),
                                                            (config.scale_rewards, scale_rewards(config.gamma)))
                                if on))
        # jitted like the steps that apply them (XLA's compiled arithmetic can differ from op-by-op in the last bit)
        self._init_wrappers = jax.jit(self.wrappers.init)
        if config.dtype == "float64" and not jax.config.jax_enable_x64:  # JAX would silently run in float32
            raise ValueError("dtype float64 needs JAX's 64-bit mode: jax.config.update('jax_enable_x64', True) "
                             "before anything else (rtrl rl does it)")
        self.dtype = jnp.dtype(config.dtype)
        self.history = self.env.max_steps if config.fidelity_every else 0
        self.mesh = (mesh(config.devices, config.seeds, "seeds", "seeds") if config.seeds > 1
                     else mesh(config.devices, config.envs, "envs", "environments"))
        # the environments' side of each run, chosen once: stepped inside the compiled loop, or on the host
        self.side = HostEnvironments if getattr(self.env, "host", False) else CompiledEnvironments

    # The jitted calls, each made on first use (a run uses those of its environments' side) and shared by every run
    # of the program. With several seeds, each seed's step under one vmap.
    @functools.cached_property
    def compiled(self):
        """``n`` steps of a jitted environment's run (``_advance`` / ``_advance_seeds``), one call."""
        return jax.jit(self._advance_seeds if self.config.seeds > 1 else self._advance)

    @functools.cached_property
    def compiled_start(self):
        """The ``Seeds`` at step 0 of ``seeds`` (``stacked``), each device making its own seeds' states."""
        return jax.jit(self.stacked, **({} if self.mesh is None else {"out_shardings": self.sharding}))

    @functools.cached_property
    def host_calls(self) -> HostCalls:
        """A host environment's jitted calls between the environments' steps (``HostCalls``)."""
        act, observe = (self._act_seeds, self._observe_seeds) if self.config.seeds > 1 else (self._act, self._observe)
        return HostCalls(jax.jit(act), jax.jit(observe), jax.jit(lambda acted, outcome: act(observe(acted, outcome))),
                         jax.jit(jax.vmap(self.restart) if self.config.seeds > 1 else self.restart))

    def rule(self, envs: int):
        """The update rule for ``envs`` environments (``rtrl.rl.assemble.rule_of``, of this program's agent)."""
        return rule_of(self.config, self.agent, envs)

    @functools.cached_property
    def sharding(self):
        """The state's shardings: ``RLState``'s split along E where a leaf has that axis, else replicated; with
        several seeds, ``Seeds.runs``'s split along S (the step replicated)."""
        if self.config.seeds > 1:
            return shardings(self.mesh, batch_axes(lambda S: self.stacked(np.arange(S, dtype=np.uint32)),
                                                   self.config.seeds))
        return shardings(self.mesh, batch_axes(lambda envs: self.fresh(0, envs, self.reset(envs)), self.config.envs))

    def stacked(self, seeds) -> Seeds:
        """The ``Seeds`` at step 0 of ``seeds`` (S of them, uint32): each the ``RLState`` its one-seed run starts
        from."""
        return Seeds(jax.vmap(lambda s: self.fresh(s, self.config.envs, self.reset(self.config.envs)))(seeds),
                     jnp.zeros((), jnp.int32))

    def place(self, state: RLState | Seeds) -> RLState | Seeds:
        """``state`` on this run's devices (one from a checkpoint of any device count); unchanged on one."""
        return state if self.mesh is None else jax.device_put(state, self.sharding)

    def reset(self, envs: int) -> Callable[[jax.Array], tuple[jax.Array, Any]]:
        """The first observations and states of ``envs`` jitted environments from the environments' key."""
        return lambda key: jax.vmap(self.env.reset)(jax.random.split(key, envs))

    def fresh(self, seed: int, envs: int, reset: Callable[[jax.Array], tuple[jax.Array, Any]]) -> RLState:
        """The state at step 0 of the run with ``seed``, its ``envs`` environments' first observations and states
        ``reset(key)`` of the environments' key that ``seed`` gives (``reset``: a jitted environment's; a host
        environment's run gives the observations it reset with the seed's ``env_seeds``, and no state)."""
        E, dtype = envs, self.dtype
        k_params, k_env, key = seed_keys(seed)
        params = self.agent.init(k_params, dtype)
        obs, env_state = reset(k_env)
        zeros = jnp.zeros((E,), dtype)
        obs, wrappers = self._init_wrappers(obs.astype(dtype))
        return RLState(
            params=params, opt_state=self.rule(E).init(params), memory=self.agent.torso.memory(params, E),
            env_state=env_state, obs=obs, wrappers=wrappers,
            pending=Pending(zeros, Transition(zeros, jnp.zeros((E,), bool), jnp.zeros((E,), bool), zeros),
                            jnp.array(False), jnp.zeros((E,), bool)),
            history=jnp.zeros((self.history, E, self.env.obs_size), dtype), age=jnp.zeros((E,), jnp.int32),
            key=key, step=jnp.zeros((), jnp.int32),
            tally=Tally(jnp.zeros((), jnp.int32), jnp.zeros((), dtype), jnp.zeros((self.agent.checked,), dtype),
                        jnp.zeros((), jnp.int32), jnp.zeros((len(HEALTH),), dtype), jnp.zeros((), jnp.int32)))

    def env_seeds(self, seed: int) -> list[int]:
        """The host environments' seeds at the start of the run with ``seed`` (``seeds`` of its environments' key,
        the key ``fresh`` splits off for them)."""
        return self.seeds(seed_keys(seed)[1])

    def seeds(self, key: jax.Array) -> list[int]:
        """The host environments' seeds at a (re)start, one per environment, drawn from ``key`` (at the start the
        environments' key of the seed; at a restart the state's key, a function of the seed and the step)."""
        words = np.asarray(jax.random.key_data(key)).ravel().tolist()
        return [int(s) for s in np.random.SeedSequence(words).generate_state(self.config.envs)]

    def _act(self, state: RLState) -> Acted:
        """The agent's part of a step: act on ``state.obs``, the previous step's TD error, the update, the traces."""
        c, agent, E = self.config, self.agent, self.config.envs
        key, k_act, k_env = jax.random.split(state.key, 3)
        x, params = state.obs, state.params  # the observation as the vector wrappers give it
        stepped = agent.stepped(params, state.memory, x, k_act, state.step)
        action, value = stepped.action, stepped.value
        age = jnp.where(state.pending.transition.done | ~state.pending.valid, 1, state.age + 1)

        tally = state.tally
        if c.fidelity_every:
            H = self.history
            history = jnp.roll(state.history, -1, axis=0).at[-1].set(x)

            def check(_):  # the agent's first ``checked`` gradients, online and by BPTT
                grads = jax.vmap(agent.objective_grads, in_axes=(None, 0, 0, 0))(params, state.memory, x, action)[1]
                bptt = jax.vmap(agent.bptt_grads, in_axes=(None, 1, 0, 0))(params, history, H - age, action)
                return jnp.stack([jax.vmap(torso_cosine)(*(jax.tree.map(lambda a, i=i: a[:, i], g)
                                                           for g in (grads, bptt))).mean()
                                  for i in range(agent.checked)])

            due = state.step % c.fidelity_every == 0
            cosines = lax.cond(due, check, lambda _: jnp.zeros((agent.checked,), self.dtype), None)
            tally = tally._replace(cosines=tally.cosines + cosines, checks=tally.checks + due)
        else:
            history = state.history

        # The previous step's TD error (the algorithm's, of its transition), and the update the rule makes of it with
        # the traces up to that step.
        p = state.pending
        learned = agent.learn(p, stepped, c.gamma, c.lam)  # the update rule's extra arguments: the TD error, the cut
        delta = learned["delta"]

        updates, opt_state = self.optimizer.update(stepped.drive, state.opt_state, params, **learned)

        def health(_):  # passes over the traces, the torso's state and the parameters: sampled (health_every)
            traces = eligibility(state.opt_state)  # every set the rule keeps, found by type
            return jnp.stack([jnp.abs(value).mean(), jnp.where(p.valid, (delta ** 2).mean(), 0.0),
                              stepped.entropy.mean(), optax.tree.norm(updates), per_env_norm(traces, E).mean(),
                              per_env_norm(state.memory, E).mean(), optax.tree.norm(params)]).astype(self.dtype)

        sampled = state.step % c.health_every == 0
        figures = lax.cond(sampled, health, lambda _: jnp.zeros((len(HEALTH),), self.dtype), None)
        tally = tally._replace(health=tally.health + figures, steps=tally.steps + sampled)
        params = optax.apply_updates(params, updates)
        memory = stepped.memory
        if getattr(agent, "td_refresh", False):  # the estimate pending, evaluated again as this update leaves it
            value = jax.vmap(agent.value, in_axes=(None, 0, 0))(params, state.memory, x)

        state = state._replace(params=params, opt_state=opt_state, memory=memory, history=history, age=age, key=key,
                               tally=tally)
        return Acted(state, action, value, stepped.exploratory, k_env)

    def _observe(self, acted: Acted, outcome: Outcome, owed: jax.Array | None = None) -> RLState:
        """The step's bookkeeping once the environments have stepped: the vector wrappers (the observations
        normalised, the reward scaled), the value a truncated episode is owed, the torso reset where an episode
        ended, the pending step, the tallies. ``owed``: whether any episode was truncated (default: any of
        ``outcome``'s), the bootstrap's condition; several seeds pass it unmapped, over all of them, so that it
        stays a conditional under their ``vmap`` rather than a select that computes the bootstrap every step."""
        state = acted.state
        done, truncated = jnp.asarray(outcome.done), jnp.asarray(outcome.truncated)
        cast = {name: jnp.asarray(getattr(outcome, name)).astype(self.dtype) for name in ("obs", "reward", "final_obs")}
        wrapped, wrappers = self.wrappers.step(state.wrappers, outcome._replace(done=done, **cast))

        def values(_):  # the algorithm's bootstrap (V(s_T)): the torso's step on s_T from the episode's own carry
            return jax.vmap(self.agent.bootstrap, in_axes=(None, 0, 0, None))(
                state.params, state.memory, wrapped.final_obs, state.step)

        owed = truncated.any() if owed is None else owed
        final_value = lax.cond(owed, values, lambda _: jnp.zeros(done.shape, self.dtype), None)
        transition = Transition(wrapped.reward, done & ~truncated, truncated, jnp.where(truncated, final_value, 0.0))
        ended = jnp.asarray(outcome.episode_return, state.tally.returns.dtype)  # the host's float64 as the tally's
        tally = state.tally._replace(episodes=state.tally.episodes + done.sum(dtype=jnp.int32),
                                     returns=state.tally.returns + jnp.where(done, ended, 0.0).sum())
        return state._replace(memory=self.agent.torso.reset(state.memory, done), obs=wrapped.obs, wrappers=wrappers,
                              pending=Pending(acted.value, transition, jnp.array(True), acted.exploratory),
                              step=state.step + 1, tally=tally)

    def _act_seeds(self, seeds: Seeds) -> Acted:
        """``_act`` of every seed under one ``vmap``, the step shared (as ``_advance_seeds`` shares it)."""
        return jax.vmap(lambda run: self._act(run._replace(step=seeds.step)))(seeds.runs)

    def _observe_seeds(self, acted: Acted, outcome: Outcome) -> Seeds:
        """``_observe`` of every seed (``outcome``'s leaves ``(S, E, ...)``) under one ``vmap``, the bootstrap's
        condition taken over every seed's environments (unmapped: a conditional, not a select)."""
        owed = jnp.asarray(outcome.truncated).any()
        runs = jax.vmap(self._observe, in_axes=(0, 0, None))(acted, outcome, owed)
        return Seeds(runs, runs.step[0])

    def restart(self, state: RLState, obs: jax.Array) -> RLState:
        """``state`` with every environment at the start of an episode whose first observations are ``obs`` (host
        values): the pending TD step dropped, the torso's state zeroed, the vector wrappers told (the discounted
        returns restarted) and, at the next step, the traces cut."""
        obs, wrappers = self.wrappers.reset(state.wrappers, obs.astype(self.dtype))
        ended = jnp.ones(obs.shape[:1], bool)
        cut = state.pending.transition._replace(terminated=ended, truncated=jnp.zeros_like(ended))
        return state._replace(obs=obs, wrappers=wrappers, memory=self.agent.torso.reset(state.memory, ended),
                              pending=state.pending._replace(transition=cut, valid=jnp.array(False)))

    def _one(self, _, state: RLState) -> RLState:
        """A step with a jitted environment (a ``fori_loop`` body; the index unused): the agent's part, the
        environments' step, the bookkeeping."""
        acted = self._act(state)
        E = self.config.envs
        step = jax.vmap(self.env.step)(jax.random.split(acted.env_key, E), state.env_state, acted.action)
        outcome = Outcome(step.obs, step.reward, step.done, step.truncated, step.final_obs, step.state.last_return)
        return self._observe(acted, outcome)._replace(env_state=step.state)

    def _advance_seeds(self, state: Seeds, n: int) -> Seeds:
        """The steps of every seed under one ``jax.vmap`` (split over the mesh's devices by seed), the step count
        shared (not mapped): what is due at a step (the fidelity check, the health sample) stays a ``lax.cond`` taken
        once for all seeds, where a mapped count would turn it into a ``select`` that computes the check at every
        step."""
        runs = jax.vmap(lambda run, step: self._steps(run._replace(step=step), n), in_axes=(0, None))
        return self._constrained(Seeds(runs(state.runs, state.step), state.step + n))

    def _advance(self, state: RLState, n: int) -> RLState:
        return self._constrained(self._steps(state, n))

    def _steps(self, state: RLState, n: int) -> RLState:
        # a traced count (a while loop), not a static scan length: another chunk length (record_every, a resume off
        # a record boundary) runs the same compiled program
        return lax.fori_loop(0, n, self._one, state)

    def _constrained(self, state: RLState | Seeds) -> RLState | Seeds:
        return state if self.mesh is None else lax.with_sharding_constraint(state, self.sharding)


class OnlineActorCritic:
    """A run's pieces: ``init(seed)``, ``advance(state, n)``; its configuration's compiled ``Program`` (shared by the
    runs of one configuration: ``runner``) and the run's own side of its environments (``environments``:
    ``CompiledEnvironments`` or ``HostEnvironments``, the program's ``side``), which no other run steps or re-seeds.
    The program's attributes (the environment, the agent, the optimizer, ...) read as the run's."""

    def __init__(self, assembly: RLAssembly | RLConfig, program: Program | None = None):
        self.program = Program(assembly) if program is None else program
        self.config = getattr(assembly, "config", assembly)  # this run's: its steps and seed, not the program's
        self.environments = self.program.side(self.program, self.config)

    def __getattr__(self, name: str):
        if name == "program":  # not set yet (a failed __init__)
            raise AttributeError(name)
        return getattr(self.program, name)

    def init(self, seed: int) -> RLState | Seeds:
        """The state at step 0 of the run with ``seed``: an ``RLState``, or with ``seeds = S > 1`` the ``Seeds`` of
        ``seed .. seed + S - 1`` (each the ``RLState`` that a one-seed run with that seed starts from)."""
        return self.environments.init(seed)

    def advance(self, state: RLState | Seeds, n: int) -> RLState | Seeds:
        """``n`` steps of every environment (one compiled call, or stepped on the host)."""
        return self.environments.advance(state, n)

    def timing_record(self) -> dict:
        """Where the time went since the last call (``TIMINGS``, a host run's), as a record's fields."""
        return self.environments.timing_record()


class HostCalls(NamedTuple):
    """A host environment's jitted calls (every seed's under one vmap where there are several)."""

    act: Callable  # state -> Acted
    observe: Callable  # (Acted, Outcome) -> state
    observe_act: Callable  # the last step's observe fused with this step's act: (Acted, Outcome) -> Acted
    restart: Callable  # (state's runs, obs) -> runs


class CompiledEnvironments:
    """A jitted environment's side of a run: its environments' states in the run's state, ``n`` steps one compiled
    call (``Program._advance``)."""

    def __init__(self, program: Program, config: RLConfig):
        self.program, self.config = program, config

    def init(self, seed: int) -> RLState | Seeds:
        program, config = self.program, self.config
        if config.seeds > 1:  # host values: under a mesh of several processes, the same on each
            return program.compiled_start(seed + np.arange(config.seeds, dtype=np.uint32))
        return program.place(program.fresh(seed, config.envs, program.reset(config.envs)))

    def advance(self, state: RLState | Seeds, n: int) -> RLState | Seeds:
        with tracing(self.program.mesh):
            return self.program.compiled(self.program.place(state), n)

    def timing_record(self) -> dict:
        return {}  # the environments' steps are inside the agent's compiled call, not timed apart


class HostEnvironments:
    """A host environment's side of a run (``gymnasium:ID``): the run's own vector of S x E environments (every
    seed's, in order), stepped in Python between the program's jitted calls (``HostCalls``). A state that is not the
    one this run last returned re-seeds them (``restarted``)."""

    def __init__(self, program: Program, config: RLConfig):
        self.program, self.config = program, config
        self.vector = program.env.vector(config.seeds * config.envs)
        self._live = None  # the obs array of the state this run last returned: its environments are live
        self.timings = dict.fromkeys(TIMINGS, 0.0)  # seconds, summed over host steps since the last record

    def init(self, seed: int) -> RLState | Seeds:
        # one vector of S x E environments, each seed's E reset with the seeds its one-seed run would give them
        program, config = self.program, self.config
        seeds = seed + np.arange(config.seeds, dtype=np.uint32)
        obs = self.split(self.vector.reset([s for one in seeds for s in program.env_seeds(int(one))]))
        runs = [program.fresh(int(one), config.envs, lambda _, o=o: (jnp.asarray(o), ()))
                for one, o in zip(seeds, obs, strict=True)]
        state = runs[0] if config.seeds == 1 else Seeds(jax.tree.map(lambda *a: jnp.stack(a), *runs),
                                                        jnp.zeros((), jnp.int32))
        self._live = live(state)  # the environments were just reset for this state
        return state

    def split(self, batch):
        """The host vector's ``(S x E, ...)`` arrays (a tree of them) as ``(S, E, ...)``, one row per seed."""
        S, E = self.config.seeds, self.config.envs
        return jax.tree.map(lambda a: np.asarray(a).reshape(S, E, *np.shape(a)[1:]), batch)

    def restarted(self, state: RLState | Seeds) -> RLState | Seeds:
        """``state`` with fresh environments, each seed's re-seeded from its own key (``Program.restart``)."""
        several, restart = isinstance(state, Seeds), self.program.host_calls.restart
        runs = state.runs if several else state
        keys = runs.key if several else [runs.key]
        obs = self.split(self.vector.reset([s for key in keys for s in self.program.seeds(key)], int(state.step)))
        return state._replace(runs=restart(runs, obs)) if several else restart(runs, obs[0])

    def advance(self, state: RLState | Seeds, n: int) -> RLState | Seeds:
        """``n`` steps: one jitted call per step (the last step's ``_observe`` fused with this step's ``_act``), the
        actions to the host, the environments' step, the outcome back (host arrays, the next call's arguments); with
        several seeds, all their environments in one host vector."""
        if live(state) is not self._live:
            state = self.restarted(state)
        calls, clock, t = self.program.host_calls, self.timings, time.perf_counter()
        start, seeds = int(state.step), self.config.seeds > 1
        acted = calls.act(state)
        for i in range(n):
            jax.block_until_ready(acted)
            t1 = time.perf_counter()
            actions = np.asarray(acted.action)
            t2 = time.perf_counter()
            outcome = self.vector.step(actions.reshape(-1, *actions.shape[2:]) if seeds else actions, start + i + 1)
            t3 = time.perf_counter()
            outcome = self.split(outcome) if seeds else outcome  # host arrays: the jitted call takes them itself
            t4 = time.perf_counter()
            clock["agent_s"] += t1 - t
            clock["transfer_s"] += (t2 - t1) + (t4 - t3)
            clock["env_s"] += t3 - t2
            t = t4
            if i < n - 1:
                acted = calls.observe_act(acted, outcome)
        state = jax.block_until_ready(calls.observe(acted, outcome))
        clock["agent_s"] += time.perf_counter() - t
        self._live = live(state)
        return state

    def timing_record(self) -> dict:
        """The seconds since the last call in the agent (its jitted calls, fidelity check included, the outcome
        taken in as the call's host arguments: cheaper than a ``jax.device_put`` of it first), the actions' transfer
        to the host and the environments' steps (``TIMINGS``)."""
        spent, self.timings = self.timings, dict.fromkeys(TIMINGS, 0.0)
        return {k: round(v, 3) for k, v in spent.items()}


def record(state: RLState | Seeds) -> dict:
    """The metrics record of the steps since the last one (``return`` is None where no episode ended); ``Diverged``
    where a health figure is not finite. Of ``Seeds``: ``return`` the mean over the seeds where episodes ended of
    each seed's return, ``episodes`` their sum, every other figure the mean over the seeds, and beside them
    ``return_per_seed`` and ``episodes_per_seed`` (lists in the order of the seeds). Every process of a mesh that
    spans several calls it (the seeds' tallies are gathered from all of them)."""
    if isinstance(state, Seeds):
        step, tally = gathered((state.step, state.runs.tally))
        return seeds_record([record_of(step, jax.tree.map(lambda a, i=i: a[i], tally))
                             for i in range(len(tally.episodes))])
    return record_of(*gathered((state.step, state.tally)))


def seed_keys(seed: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The keys of the run with ``seed``: its parameters', its environments' and its state's."""
    return tuple(jax.random.split(jax.random.PRNGKey(seed), 3))


def live(state: RLState | Seeds) -> jax.Array:
    """The observations of ``state`` (every seed's), by which a host run knows the state it last returned."""
    return state.runs.obs if isinstance(state, Seeds) else state.obs


def record_of(step, t: Tally) -> dict:
    """``record`` of one run's step count and tally (host values)."""
    episodes = int(t.episodes)
    rec = {"step": int(step), "return": float(t.returns) / episodes if episodes else None,
           "episodes": episodes}
    if int(t.checks):
        rec.update((name, float(v) / int(t.checks)) for name, v in zip(("cos_value", "cos_policy"), t.cosines,
                                                                                  strict=False))
    if int(t.steps):
        means = dict(zip(HEALTH, (float(v) / int(t.steps) for v in t.health), strict=True))
        means["td_rms"] = math.sqrt(means["td_rms"])
        bad = next((name for name, v in means.items() if not math.isfinite(v)), None)
        if bad is not None:  # e.g. the value estimate overflowed while the parameters are still finite
            raise Diverged(int(step), means[bad], f"the health figure {bad}")
        rec.update(means)
    return rec


def seeds_record(records: list[dict]) -> dict:
    """One record of several seeds' records of the same step (see ``record``)."""
    returns = [r["return"] for r in records]
    known = [v for v in returns if v is not None]
    rec = {"step": records[0]["step"], "return": sum(known) / len(known) if known else None,
           "episodes": sum(r["episodes"] for r in records)}
    for name in dict.fromkeys(k for r in records for k in r if k not in rec):
        values = [r[name] for r in records if name in r]
        rec[name] = sum(values) / len(values)
    return {**rec, "return_per_seed": returns, "episodes_per_seed": [r["episodes"] for r in records]}


def cleared(state: RLState | Seeds) -> RLState | Seeds:
    if isinstance(state, Seeds):
        return state._replace(runs=cleared(state.runs))
    return state._replace(tally=jax.tree.map(jnp.zeros_like, state.tally))


# The compiled programs by the parts they compile: a configuration's compiled part, its environment (a value) and
# its agent (itself); pure functions and the environment's description, no live environment (those are each run's:
# ``OnlineActorCritic``). ``assemble`` gives one configuration's runs the same parts, so they share one program; a
# run of other parts under the same configuration (``RLAssembly(config, my_env, my_agent)``) gets its own.
_PROGRAMS: dict[tuple, Program] = {}


def program(assembly: RLAssembly | RLConfig) -> Program:
    """The compiled pieces of ``assembly`` (or of a configuration, then assembled), one per configuration and parts
    in a process: runs that differ only in their length, record_every or seed, or resume anywhere, compile nothing
    new."""
    assembly = assembly if isinstance(assembly, RLAssembly) else assemble(assembly)
    key = (compiled_part(assembly.config), by_value_or_identity(assembly.env), by_value_or_identity(assembly.agent))
    if key not in _PROGRAMS:
        _PROGRAMS[key] = Program(assembly)
    return _PROGRAMS[key]


def by_value_or_identity(part) -> object:
    """``part`` as a key: itself where it hashes (by value, or by identity where it defines no equality), else its
    ``id`` (an unhashable value; the cached program holds the part, so that id names no other object meanwhile)."""
    try:
        hash(part)
    except TypeError:
        return ("id", id(part))
    return part


def runner(assembly: RLAssembly | RLConfig) -> OnlineActorCritic:
    """A new run of ``assembly`` (or of a configuration, then assembled) on its configuration's shared ``program``:
    compiled once per configuration, while a host environment's environments are this run's alone (two runs of one
    configuration in a process step their own)."""
    return OnlineActorCritic(assembly, program(assembly))


def train(config: RLConfig | RLAssembly, state: RLState | None = None,
          on_record: Callable[[RLState, dict], None] | None = None,
          on_chunk: Callable[[RLState, int], None] | None = None, wall_s: float = 0.0,
          run: OnlineActorCritic | None = None, quiet: bool = False) -> tuple[RLState, list[dict]]:
    """Run ``config`` (or its assembly) up to ``config.steps`` steps per environment (from ``state``, or from the
    start), one record at every multiple of ``record_every`` and at the end (``rtrl.driver.drive``);
    ``on_record(state, record)`` after each (a checkpoint there resumes the run exactly; the trainer's order,
    ``rtrl.driver``'s), ``on_chunk(state, n)``
    after every ``n`` steps done (one jitted call). ``wall_s``: the time already spent (a resumed run). ``run``: the
    run to step (``runner``; default a new one): a host environment's run continues the environments of the state it
    last returned, where another run re-seeds them (``OnlineActorCritic.restarted``). Stops with
    ``rtrl.driver.Diverged`` if a parameter stops being finite (``on_record`` has seen nothing past the previous
    record). Unless ``quiet``, it shows its progress on standard error (``rtrl.rl.progress``: a bar on a terminal,
    else a line every few seconds); ``rtrl rl`` shows its own."""
    if not isinstance(config, (RLConfig, RLAssembly)):
        raise TypeError(f"config must be an RLConfig, e.g. rl.train(rl.RLConfig(env='tmaze')), got {what(config)}")
    run = runner(config) if run is None else run
    config = getattr(config, "config", config)
    state = run.init(config.seed) if state is None else state
    run.timing_record()  # the clock starts here (a run given may have stepped before)
    records = []
    shown = None if quiet else Progress(config.steps, int(state.step))

    def advance(state, step, n):
        state = run.advance(state, n)
        finite_or_diverged(step + n, gathered(state.runs.params if isinstance(state, Seeds) else state.params))
        return state

    def on(state, rec):
        records.append(rec)
        if shown is not None:
            shown.record(state, rec)
        if on_record is not None:
            on_record(state, rec)

    def chunk(state, n):
        if shown is not None:
            shown.chunk(state, n)
        if on_chunk is not None:
            on_chunk(state, n)

    try:
        state = drive(state, config.steps, config.record_every, CHUNK, advance,
                      lambda state, step: (record(state) | run.timing_record(), cleared(state)), None, on, chunk,
                      wall_s)
    finally:
        if shown is not None:
            shown.close()
    return state, records

