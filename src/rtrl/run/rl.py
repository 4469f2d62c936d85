"""The online reinforcement-learning run's kind of run folder (``rtrl rl``): ``rtrl.rl``'s actor-critic, a record
every ``record_every`` steps (none at step 0: no episode has ended there)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rtrl.devices import check_memory, floats_of
from rtrl.rl.assemble import assemble
from rtrl.rl.config import RLConfig
from rtrl.rl.envs.extra_inputs import clock_columns
from rtrl.rl.loop import TIMINGS, Seeds, runner, train
from rtrl.rl.progress import status
from rtrl.run.folder import (
    Run,
    check_output_folder,
    chosen,
    computed_on,
    evaluation_options,
    fmt,
    read_metrics,
    register,
)
from rtrl.run.plot import Curve
from rtrl.run.rollout import Policy, check_video, host_returns, jitted_returns, summary

EVAL_EPISODES = 10  # episodes of an evaluation (``rtrl eval``) unless asked for another number


@register
class RLRun(Run):
    """A run folder of ``rtrl rl``; its compiled pieces are an ``rtrl.rl.OnlineActorCritic``."""

    name = "rl"
    config_class = RLConfig
    assemble = staticmethod(assemble)

    def build(self):
        if self.config.dtype == "float64":  # a run folder is its process's whole work: JAX's 64-bit mode, first
            jax.config.update("jax_enable_x64", True)
        return runner(self.assembly)

    def fresh(self):
        return self.trainer.init(self.config.seed)

    def fit(self, state, wall_s: float, on_record, on_chunk):
        return train(self.assembly, state, on_record, on_chunk, wall_s, run=self.trainer, quiet=True)[0]

    def trained(self, params):
        return self.assembly.agent.torso.cell, params["torso"]

    def one_seed(self, state, seed: int | None):
        """Of a run of several seeds (``Seeds``), the ``RLState`` of ``seed`` (default: the first, the run's
        ``seed``); ``ValueError`` naming the seeds it has."""
        config = self.config
        if config.seeds == 1:
            return super().one_seed(state, seed)
        first, last = config.seed, config.seed + config.seeds - 1
        chosen_seed = first if seed is None else seed
        if not isinstance(chosen_seed, int) or isinstance(chosen_seed, bool) or not first <= chosen_seed <= last:
            raise ValueError(f"seed must be one of the run's seeds {first}..{last} (rtrl rl --seed {first} --seeds "
                             f"{config.seeds}), got {seed!r}")
        if state is None:
            return None, chosen_seed
        if not isinstance(state, Seeds):
            raise ValueError(f"{self.path}: its checkpoint holds one run, where its config.json says {config.seeds} "
                             "seeds")
        return jax.tree.map(lambda a: a[chosen_seed - first], state.runs), chosen_seed

    def policy(self, state) -> Policy:
        """What acting with ``state``'s policy needs (``rtrl.run.rollout``): the agent, the parameters, the
        observation statistics as they stand (the first of the vector wrappers where ``normalize_obs``)."""
        config = self.config
        stats = state.wrappers[0] if config.normalize_obs else None
        return Policy(self.assembly.agent, state.params, stats, jnp.dtype(config.dtype),
                      clock_columns(config.extra_inputs))

    def evaluate(self, state, episodes: int | None, seed: int | None, greedy: bool = False, video=None,
                 overwrite: bool = False) -> dict:
        """The mean undiscounted return of ``episodes`` episodes (default 10) of ``state``'s policy, drawn from
        ``seed`` (default the run's), ``greedy`` or sampled (``rtrl.run.rollout``); ``video``: a folder to record
        each episode into (a Gymnasium environment that renders: ``ValueError`` naming it otherwise), where a video
        already there is replaced only with ``overwrite`` and a link is never written through."""
        if not isinstance(greedy, bool):
            raise ValueError(f"greedy must be True or False, got {greedy!r}")
        episodes, seed = evaluation_options(episodes, seed, EVAL_EPISODES, self.config.seed)
        env, policy = self.assembly.env, self.policy(state)
        if video is not None:
            video = check_output_folder(video, "video")
            check_video(env, video)
        elif overwrite:
            raise ValueError("overwrite applies to the videos of an evaluation with video")
        if getattr(env, "host", False):
            returns, cut = host_returns(env, policy, episodes, seed, greedy, video, overwrite)
        else:
            per_episode = floats_of(policy.memory) + 4 * env.obs_size
            check_memory(per_episode * episodes * jnp.dtype(self.config.dtype).itemsize, 1, "--episodes")
            returns, cut = jitted_returns(env, policy, episodes, jax.random.fold_in(jax.random.PRNGKey(seed), 3),
                                          greedy)
        return {"metric": "return", **summary(returns, cut), "episodes": episodes, "seed": seed, "greedy": greedy}

    @staticmethod
    def curve_of(config: RLConfig, records: list[dict], label: str | None = None) -> Curve:
        return Curve(label or config.label(), records, "mean return", None, key="return")

    def title(self) -> str:
        env = self.config.env + "".join(f" {k}={v}" for k, v in self.config.env_args)
        return (f"{env}: {self.config.label(self.method_name())}, hidden {self.config.hidden}, {self.config.envs} "
                "environments")

    def method_name(self) -> str:
        return self.assembly.agent.torso.learner.method.name

    def describe(self) -> str:
        config = self.config
        method = chosen(config.method, self.assembly.agent.torso.learner.method)
        return (f"{self.assembly.env.name} | {config.label()}{method} hidden {config.hidden}, update every "
                f"{config.update_every} | {config.envs} environments, {config.steps} steps each | {computed_on()}")

    def resume_note(self) -> str:
        """A host environment's states are not in the checkpoint (``rtrl.rl.loop``): say that a resumed run
        re-seeds its environments, so its steps from the checkpoint on differ from the uninterrupted run's."""
        note = super().resume_note()  # "resuming at step N ..." where it resumes, else ""
        if not note or not getattr(self.assembly.env, "host", False):
            return note
        step = self.last_checkpoint_step()
        return (f"resuming at step {step} (its checkpoint) on a host environment ({self.config.env}), whose states a "
                f"checkpoint cannot hold: the {self.config.envs} environments are re-seeded from the run's seed and "
                f"the step and each begins a new episode there (no TD error across the cut, the torso's state "
                f"zeroed), so from here the run differs from an uninterrupted one")

    def status(self, record: dict) -> str:
        return status(record)

    def summary(self) -> str:
        records = read_metrics(self.path)
        first, last = records[0], records[-1]
        extra = ", ".join(f"{k} {fmt(v)}" for k, v in last.items()
                          if k not in ("step", "return", "wall_s", *TIMINGS) and not k.endswith("_per_seed"))
        per_seed = last.get("return_per_seed", [])
        more = f" and {len(per_seed) - SHOWN_SEEDS:,} more" if len(per_seed) > SHOWN_SEEDS else ""
        seeds = (f"; per seed {' '.join(fmt(v) for v in per_seed[:SHOWN_SEEDS])}{more}" if "return_per_seed" in last
                 else "")
        return (f"mean return {fmt(first['return'])} at step {first['step']} -> {fmt(last['return'])} at step "
                f"{last['step']} ({extra}){seeds} in {last['wall_s']:.1f} s on {computed_on()}"
                f"{time_split(records, self.config.envs)}")


SHOWN_SEEDS = 20  # a summary's per-seed returns: the first this many (10,000 seeds would be a line of 10,000)


def time_split(records: list[dict], envs: int) -> str:
    """``"; N environment steps a second: agent a%, transfers t%, environments e%"`` over the records that time
    a host run's steps (``rtrl.rl.loop.TIMINGS``); ``""`` where none does (a jitted environment)."""
    steps, spent, before = 0, dict.fromkeys(TIMINGS, 0.0), 0
    for r in records:
        if all(k in r for k in TIMINGS):
            steps += r["step"] - before
            spent = {k: spent[k] + r[k] for k in TIMINGS}
        before = r["step"]
    total = sum(spent.values())
    if total <= 0:
        return ""
    parts = ", ".join(f"{name} {100 * spent[k] / total:.0f}%"
                      for k, name in zip(TIMINGS, ("agent", "transfers", "environments"), strict=True))
    return f"; {steps * envs / total:,.0f} environment steps a second: {parts}"


