"""Rolling out a trained RL run's policy on fresh episodes (``rtrl eval``, ``Trained.evaluate`` and ``Trained.act``),
learning nothing.

The agent acts as it did in training, on observations normalised by the run's statistics as they stood at its
checkpoint (held fixed: an evaluation counts nothing into them), with its torso's state zeroed at the start of each
episode. ``greedy``: the most probable action (the actor-critic's), the action of highest value (Q(lambda)'s);
else sampled (the actor-critic's policy; Q's epsilon-greedy with the run's final ``epsilon``).

* A jitted environment (``tmaze``, ``popgym:NAME``, the gymnax ones): ``episodes`` environments side by side under
  ``jax.vmap``, one ``lax.while_loop`` until each has ended its first episode (at most ``max_steps`` steps).
* A Gymnasium environment (``gymnasium:ID``): one copy stepped on the host by the training loop's vector of
  environments (its encoding, mask, extra inputs and action map), one episode after another, its seeds drawn from
  ``seed``; ``video``: each episode recorded by Gymnasium's ``RecordVideo`` into that folder as
  ``seedS-episode-I.mp4`` (the environment must render ``rgb_array``; ``moviepy`` writes the files: the ``video``
  extra).

An episode is scored by its undiscounted return (the environment's own rewards, not the scaled ones the run learned
from).
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from rtrl.files import check_output_file
from rtrl.rl.envs.normalize import standardized

HOST_STEPS = 100_000  # a host episode is cut here where the environment states no limit of its own
HOST_EVAL_STEPS = 1_000_000  # episodes x their step limit at most this on the host (where the environment states no
# limit: 10 episodes of HOST_STEPS, the default count): an evaluation ends in minutes, never hangs


class Policy(NamedTuple):
    """What acting needs of a trained RL run: its agent (configured by ``rtrl.rl.assemble``: a Q agent explores at
    the run's final ``epsilon``), the parameters, the observation statistics (``None``: the run did not normalise)
    and the dtype it ran in, and ``clock``: the columns at the end that normalisation leaves as they are (the time,
    ``rtrl.rl.envs.extra_inputs.clock_columns``)."""

    agent: Any
    params: Any
    stats: Any
    dtype: Any
    clock: int = 0

    def observe(self, obs) -> jax.Array:
        """An observation (or a batch of them) as the agent saw them in training."""
        x = jnp.asarray(obs).astype(self.dtype)
        return x if self.stats is None else standardized(self.stats, x, self.clock)

    def memory(self):
        """One environment's torso state at the start of an episode."""
        return self.agent.torso.learner.init(self.params["torso"])

    def act(self, memory, x: jax.Array, key: jax.Array, greedy: bool):
        """One environment's ``(action, memory')`` on the normalised observation ``x``: the agent's own ``act`` (no
        gradient, nothing learned)."""
        return self.agent.act(self.params, memory, x, key, greedy=greedy)


def jitted_returns(env, policy: Policy, episodes: int, key: jax.Array, greedy: bool) -> tuple[np.ndarray, int]:
    """The returns of ``episodes`` first episodes of the jitted ``env`` side by side, and how many were cut short
    at its ``max_steps`` (none where the environment keeps its bound)."""
    limit = (env.max_steps or HOST_STEPS) + 1

    @jax.jit
    def run(key):
        k_reset, key = jax.random.split(key)
        obs, state = jax.vmap(env.reset)(jax.random.split(k_reset, episodes))
        memory = jax.tree.map(lambda a: jnp.broadcast_to(a, (episodes, *a.shape)), policy.memory())
        zeros = jnp.zeros((episodes,), jnp.float32)
        one = jax.vmap(lambda m, x, k: policy.act(m, x, k, greedy))

        def more(carry):
            t, *_, ended, _ = carry
            return (t < limit) & ~ended.all()

        def step(carry):
            t, obs, state, memory, returns, ended, key = carry
            key, k_act, k_env = jax.random.split(key, 3)
            action, memory = one(memory, policy.observe(obs), jax.random.split(k_act, episodes))
            out = jax.vmap(env.step)(jax.random.split(k_env, episodes), state, action)
            returns = returns + jnp.where(ended, 0.0, out.reward.astype(jnp.float32))
            return t + 1, out.obs, out.state, memory, returns, ended | out.done, key

        carry = (jnp.zeros((), jnp.int32), obs, state, memory, zeros, jnp.zeros((episodes,), bool), key)
        _, _, _, _, returns, ended, _ = lax.while_loop(more, step, carry)
        return returns, ended

    returns, ended = jax.device_get(run(key))
    return np.asarray(returns, np.float64), int((~ended).sum())


def host_returns(env, policy: Policy, episodes: int, seed: int, greedy: bool,
                 video: Path | None = None, overwrite: bool = False) -> tuple[np.ndarray, int]:
    """The returns of ``episodes`` episodes of the Gymnasium environment ``env`` (an ``rtrl.rl.envs.GymnasiumEnv``),
    one after another, and how many were cut at ``HOST_STEPS`` (an environment without a limit of its own);
    ``video``: each recorded into that folder (``check_video`` first; ``video_files``: where a video is there
    already, replaced only with ``overwrite``; a link never written through). Stepped by the training loop's own
    vector of environments (``rtrl.rl.envs.gymnasium_env.Vector``, one copy, each episode reset with its own seed),
    so observations are encoded, masked and extended (``extra_inputs``) and actions mapped onto the action space as
    in training. Played one step at a time on the host, so bounded: ``episodes`` times the step limit
    (``HOST_STEPS`` where the environment has none) at most ``HOST_EVAL_STEPS``, else a ``ValueError`` naming
    ``episodes`` and the most this environment allows, before anything is made."""
    env.check()
    limit = env.max_steps or HOST_STEPS
    if episodes * limit > HOST_EVAL_STEPS:
        raise ValueError(f"episodes must be at most {HOST_EVAL_STEPS // limit:,} on {env.name}, whose episodes are "
                         f"played one after another on the host, each up to {limit:,} steps ({HOST_EVAL_STEPS:,} "
                         f"steps in all), got {episodes:,}")
    videos = video_files(video, seed, episodes, overwrite) if video is not None else []
    from rtrl.rl.envs.gymnasium_env import Vector

    # recorded into a private folder of its own, then each video moved onto its name (os.replace: a file that
    # appeared there meanwhile is replaced, never written through), so no half-written video is ever under its name
    if video is not None:
        video.mkdir(parents=True, exist_ok=True)
    filming = Path(tempfile.mkdtemp(prefix=".rtrl-video-", dir=video)) if video is not None else None
    vector = None
    try:
        with warnings.catch_warnings():  # "overwriting existing videos": its folder is new, and empty
            warnings.simplefilter("ignore")
            vector = Vector(env, 1, autoreset=False, **filmed(filming, seed))
        step = jax.jit(lambda memory, obs, key: policy.act(memory, policy.observe(obs), key, greedy))
        seeds = np.random.SeedSequence(seed).generate_state(episodes)
        key = jax.random.PRNGKey(seed)
        returns, cut = [], 0
        for i in range(episodes):
            obs, memory, done, t = vector.reset([int(seeds[i])])[0], policy.memory(), False, 0
            while not done and t < limit:
                key, k = jax.random.split(key)
                action, memory = step(memory, obs, k)
                outcome = vector.step(np.asarray(action)[None])
                obs, done, t = outcome.obs[0], bool(outcome.done[0]), t + 1
            cut += not done
            returns.append(float(outcome.episode_return[0]) if done else float(vector.returns[0]))
        vector.close()
        for file in videos:
            os.replace(filming / file.name, file)
        return np.asarray(returns), cut
    finally:
        if vector is not None:
            vector.close()
        if filming is not None:
            shutil.rmtree(filming, ignore_errors=True)


def filmed(folder: Path | None, seed: int) -> dict:
    """``Vector``'s arguments that record every episode into ``folder`` as ``seedS-episode-I.mp4`` (Gymnasium's
    ``RecordVideo``; ``None``: none)."""
    if folder is None:
        return {}
    import gymnasium

    def record(env):
        return gymnasium.wrappers.RecordVideo(env, str(folder), episode_trigger=lambda _: True,
                                              name_prefix=f"seed{seed}", disable_logger=True)

    return {"wrappers": (record,), "render_mode": "rgb_array"}


def video_files(folder: Path, seed: int, episodes: int, overwrite: bool) -> list[Path]:
    """The videos ``RecordVideo`` makes of ``episodes`` episodes drawn from ``seed`` (``seedS-episode-I.mp4``), each
    checked as every file rtrl writes is (``rtrl.files.check_output_file``: ``ValueError`` naming ``video`` where
    one is a link, a folder, or a video already there without ``overwrite``)."""
    return [check_output_file(folder / f"seed{seed}-episode-{i}.mp4", "video", overwrite) for i in range(episodes)]


def check_video(env, folder: Path) -> None:
    """``ValueError`` naming the environment when ``env`` cannot be filmed: not a Gymnasium environment (a jitted
    one has no renderer), one that does not render ``rgb_array``, or ``moviepy`` missing."""
    if not getattr(env, "host", False):
        raise ValueError(f"--video needs a Gymnasium environment that renders (gymnasium:ID); {env.name} is a jitted "
                         "environment with no renderer")
    import warnings

    import gymnasium

    from rtrl.rl.envs.gymnasium_env import made_options

    try:
        with warnings.catch_warnings():  # a mode it does not list: Gymnasium warns; said below in one line
            warnings.simplefilter("ignore")
            made = gymnasium.make(env.env_id, **made_options(env.options), render_mode="rgb_array")
    except Exception as e:  # noqa: BLE001 - an environment's constructor is code from outside
        raise ValueError(f"--video: {env.name} cannot be made with render_mode='rgb_array' ({type(e).__name__}: "
                         f"{str(e).strip().splitlines()[0] if str(e).strip() else ''})") from None
    try:
        modes = made.metadata.get("render_modes") or []
        if "rgb_array" not in modes or made.render_mode != "rgb_array":
            raise ValueError(f"--video: {env.name} does not render rgb_array frames (its render modes: "
                             f"{list(modes) or 'none'})")
        made.reset(seed=0)
        try:
            frame = made.render()
        except Exception as e:  # noqa: BLE001 - its renderer is code from outside (pygame missing, no display)
            raise ValueError(f"--video: {env.name} fails to render ({type(e).__name__}: {e})") from None
        if not isinstance(frame, np.ndarray) or frame.ndim != 3:
            raise ValueError(f"--video: {env.name} renders no rgb_array frame (got {type(frame).__name__})")
    finally:
        made.close()
    try:
        import moviepy  # noqa: F401 - what RecordVideo writes the files with
    except ImportError:
        raise ValueError("--video needs the moviepy package: .venv/bin/pip install -e '.[video]'") from None


def summary(returns: np.ndarray, cut: int) -> dict:
    """The figures of a rollout's returns: their mean, standard deviation, least and greatest, and how many episodes
    were cut short."""
    return {"value": float(np.mean(returns)), "std": float(np.std(returns)), "min": float(np.min(returns)),
            "max": float(np.max(returns)), "cut": cut} if len(returns) else {"value": math.nan, "cut": cut}


__all__ = ["HOST_EVAL_STEPS", "HOST_STEPS", "Policy", "check_video", "host_returns", "jitted_returns", "summary",
           "video_files"]
