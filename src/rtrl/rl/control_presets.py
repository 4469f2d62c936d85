"""The continuous-control presets: Gaussian actor-critics (``rtrl.rl.algorithms.gaussian``) on tasks whose
velocities are hidden (``-P``, ``rtrl.rl.envs.masked``), each table with its ``-memoryless`` row.

``TABLES`` holds each table's fields as ``rtrl.rl.presets.Table`` takes them; ``rtrl.rl.presets`` makes them tables
of its own (one line), so their rows are presets, named and run as every other table's (``pendulum-p``,
``pendulum-p-memoryless``, ...), and ``rtrl results rl`` runs them over seeds.

* ``pendulum-p``: gymnax's Pendulum-v1 with the angular velocity hidden (jitted, so ``--seeds`` runs seeds under one
  ``vmap``). Measured (docs/rl-results.md, "Continuous control"; docs/rl-history.md): with linear heads on a
  width-64 minGRU, or Adam at 1e-3, even the fully observed pendulum stayed near the random policy's -1200 over
  16 x 40k-150k steps; a tanh layer of 64 units before the heads (``head_hidden``) and Adam at 3e-4 took it to -170
  by 16 x 48k steps, and the same setting takes ``pendulum-p`` past -450 by 16 x 80k where the memoryless torso
  stays near -1100. gamma 0.95, lambda 0.9, no entropy bonus (the policy's spread is learnt from the policy gradient
  alone).
* ``hopper-p``, ``walker2d-p``, ``halfcheetah-p``, ``ant-p``: the protocol of Farr et al. 2026 (the field's anchor;
  their code's ``config/environment/mujoco/*.yaml`` and ``config/algorithm/intentional_ac.yaml``): Gymnasium's MuJoCo
  v4 tasks (the ``mujoco`` extra) with the velocities hidden, the observation and the time in the episode as the only
  inputs (``extra_inputs=("time",)``), observations and rewards normalised, gamma 0.99, 2M frames, under their
  intentional actor-critic with their MuJoCo constants (``--optimizer intentional --lr 0.05 --critic-lr 0.5``: the
  actor's and the critic's steps apart, ``rtrl.rl.transforms.split_intentional``) and lambda 0.99 (their 5M-frame
  Hopper-P: 262 at lambda 0.8, 1550 at 0.99). What differs from their agent (the protocol card of every table lists
  it): a width-128 minGRU under exact RTRL behind a tanh layer of 64 (theirs: two LayerNorm blocks and an RTU of
  192), 8 environments per seed (theirs: 1; 2M frames one step at a time on the host would take about three times
  as long here), no entropy bonus (theirs: 0.01 signed by the TD error). ``walker2d-p`` starts the policy's
  standard deviation at 0.5 (``init_std``: at 1 it did not leave its first plateau).
* ``hopper-p-anchor-agent``, ``walker2d-p-anchor-agent``, ``halfcheetah-p-anchor-agent``, ``ant-p-anchor-agent``
  (``ANCHOR_AGENT``): the protocol above with Farr et al.'s agent built from rtrl's pieces, so that a gap between
  our figure and theirs is the learner's, not the setup's. What their code does (noahfarr/recurrent-streaming-rl,
  ``src/recipes/stream_ac_mujoco.py``, ``config/algorithm/intentional_ac.yaml``, ``config/cell/rtu.yaml``,
  ``config/mode/rtrl.yaml``; the learner noahfarr/streamlet ``streamlet/algorithms/recurrent_ac_lambda.py``):
  two blocks of 128 (``Dense`` with ``sparse(0.9)``, ``LayerNorm`` without scale or bias, ``leaky_relu``) before an
  RTU of 192 complex units (linear recurrence, the output ``tanh`` of the real and imaginary parts side by side,
  384 wide; here ``--cell rtu --hidden 384 --cell-arg output_map=concat``, r drawn on [0, 0.999] where theirs is
  [0, 1]); the RTRL sensitivities cover the RTU's own parameters only (memorax's phantom gradient adds
  ``S (theta - stop_gradient(theta))`` to the carry for the cell's parameters), so the blocks learn from the
  current step's input alone (``--encoder-blocks 2 --encoder-width 128``, cut the same way); linear heads on the
  RTU's output, the Gaussian's spread a head (``state_dependent_std``: ``softplus`` of a linear map, here
  ``--state-std --std-map softplus``, started at their ``softplus(0) = log 2``); the actor's per-step gradient is
  ``grad log pi + 0.01 sign(delta) grad H`` and enters the actor's trace (``--entropy 0.01 --entropy-sign td``, below);
  ``ClipActionWrapper`` clips actions to the Box (``--env-arg actions=clip``; rtrl's default squashes them by
  ``tanh``: the map is the environment's, the log-probability the Gaussian's either way); observation and reward
  normalisation, the time input (limit 1000; ``t / 1000 - 1/2``, not normalised, as their
  ``TimeAwareObservationWrapper`` after their normaliser gives it: before 2026-11-30 rtrl normalised it with the
  observation), one environment per seed (``--envs 1``; ``--seeds S`` runs S seeds'
  agents under one ``vmap``, their environments one host vector); their actor and critic two networks, each its own
  blocks and RTU (``--critic-network``: ``rtrl.cells.Parallel`` of two RTUs, one stack of blocks each; before
  12e9dc3 one torso under both heads, on which seeds 0 and 1 collapsed before 800k frames); heads started sparse as
  theirs (``--head-init sparse``); the entropy term signed by the TD error in the actor's traces and its step
  statistics, as theirs (``--entropy-sign td+statistics``; the runs in docs/rl-control.md ran before the preset took
  it, their statistics reading the log-policy's gradient alone: ``td``); the TD error's two values at one set of
  parameters (``--td-refresh``: ``V(s_t)`` evaluated again after the step's update, as their critic is evaluated
  twice a step; the runs in docs/rl-control.md before 2026-11-30 read ``V(s_t)`` as acted on, one update behind
  ``V(s_{t+1})``). The step time (1.75 ms a frame on 2 quiet
  cores, about an hour a seed of 2M frames; seeds under one ``vmap`` near twice the throughput):
  docs/rl-control.md, "The anchor's agent", with the commands.
* ``hopper-p-v5-action-reward-gamma995``, ``walker2d-p-v5-action-reward``, ``halfcheetah-p-v5-action-reward``,
  ``ant-p-v5-action-reward``: the presets these names had before they took the anchor's protocol, each figure of
  docs/rl-results.md measured so: Gymnasium's v5 tasks, the previous action and reward fed beside the time (Hopper's
  reward is its forward velocity plus a bonus less a control cost computable from the previous action: the previous
  reward hands the agent the velocity the mask hides), and Hopper discounted at 0.995 (at 0.99 four of its ten seeds
  ended below 1300 with a hopper that falls after 300-400 frames).
"""

from __future__ import annotations

import math

FIDELITY_EVERY = 1000
# The agent of every table: a Gaussian policy and a value on a minGRU torso under exact RTRL, behind a tanh layer.
AGENT = {"cell": "mingru", "head_hidden": 64, "optimizer": "adam", "lr": 3e-4, "entropy": 0.0}
PENDULUM = {**AGENT, "env": "pendulum-p", "hidden": 64, "envs": 16, "steps": 120_000, "record_every": 12_000,
            "gamma": 0.95, "lam": 0.9, "fidelity_every": FIDELITY_EVERY}
# Farr et al.'s intentional actor-critic, their MuJoCo constants (actor 0.05, critic 0.5), with the previous action,
# reward and time as inputs: on hopper-p seed 0 1,413 at 1.4M frames against 779 at 2M without them, and 156 with
# Adam at 3e-4 (docs/rl-results.md)
MUJOCO = {**AGENT, "optimizer": "intentional", "lr": 0.05, "critic_lr": 0.5, "hidden": 128, "envs": 8,
          "steps": 250_000, "record_every": 25_000, "gamma": 0.99, "lam": 0.99, "fidelity_every": 25_000,
          "extra_inputs": ("time",)}
# task -> (the Gymnasium family, the return that counts as solved: the anchor's best 2M-frame figure where they
# report one (Hopper-P 1296, Walker2d-P 1011), else 1000, the task's own options). walker2d-p starts its policy's
# spread at 0.5: at 1 it stayed at 279 for 2M frames in seed 0, at 0.5 it reached 1095 (docs/rl-results.md)
MUJOCO_TASKS = {"hopper": ("Hopper", 1300.0, {}), "walker2d": ("Walker2d", 1011.0, {"init_std": 0.5}),
                "halfcheetah": ("HalfCheetah", 1000.0, {}), "ant": ("Ant", 1000.0, {})}
# Farr et al.'s MuJoCo agent from rtrl's pieces (the module docstring says what their code does): two blocks of 128
# before an RTU of 192 complex units (384 outputs) under exact RTRL, linear heads started sparse, the spread softplus
# of a head started at softplus(0) = log 2, entropy 0.01 signed by the TD error in the actor's trace, actions clipped
# (the table's ``actions``), one environment, 2M frames
ANCHOR_AGENT = {"cell": "rtu", "hidden": 384, "cell_args": {"output_map": "concat", "r_min": 0.0, "r_max": 0.999},
                "head_hidden": 0, "head_init": "sparse", "encoder_blocks": 2, "encoder_width": 128, "state_std": True,
                "std_map": "softplus", "init_std": math.log(2.0), "entropy": 0.01, "entropy_sign": "td+statistics",
                "envs": 1, "critic_network": True, "td_refresh": True,
                "steps": 2_000_000, "record_every": 100_000, "fidelity_every": 100_000}
ANCHOR_VERSION = "v4"  # Farr et al.'s MuJoCo tasks (Gymnasium's v4: the mujoco bindings, deprecated but served)
# The presets these names had before (every figure measured up to 3132a4e): v5, the previous action and reward beside
# the time, Hopper at gamma 0.995; suffix -> options over the anchor's protocol
EARLIER = {"hopper": ("v5-action-reward-gamma995", {"gamma": 0.995}), "walker2d": ("v5-action-reward", {}),
           "halfcheetah": ("v5-action-reward", {}), "ant": ("v5-action-reward", {})}
ROWS = ("rtrl", "memoryless")


def mujoco(task: str, version: str = ANCHOR_VERSION, agent: str = "", actions: str = "squash", **changes) -> dict:
    """The table of ``task`` on Gymnasium's ``version``, ``changes`` over the protocol's options; ``agent`` names
    an agent other than ours (``ANCHOR_AGENT``) in the table's title; ``actions`` the Box's action map (the
    environment's option ``actions``)."""
    family, target, options = MUJOCO_TASKS[task]
    env_id = f"{family}-{version}"
    env_args = {"mask": "P"} if actions == "squash" else {"mask": "P", "actions": actions}
    options = {**MUJOCO, "env": f"gymnasium:{env_id}", "env_args": env_args, **options, **changes}
    inputs = " and ".join(("the observation", *options["extra_inputs"]))
    frames = options["steps"] * options["envs"] / 1e6
    return {"what": f"Gymnasium MuJoCo {env_id} with its velocities hidden (mask P), {inputs} as inputs, gamma "
                    f"{options['gamma']}, {frames:g}M frames" + (f", {agent}" if agent else ""),
            "options": options, "target": target, "methods": ROWS, "exact": "auto"}


TABLES = {
    "pendulum-p": {"what": "Pendulum-v1 with the angular velocity hidden (a POMDP, continuous actions)",
                   "options": PENDULUM, "target": -400.0, "methods": ROWS, "exact": "auto"},
    **{f"{task}-p": mujoco(task) for task in MUJOCO_TASKS},
    **{f"{task}-p-anchor-agent": mujoco(task, agent="Farr et al.'s agent", actions="clip", **ANCHOR_AGENT)
       for task in MUJOCO_TASKS},
    **{f"{task}-p-{suffix}": mujoco(task, "v5", extra_inputs=("action", "reward", "time"), **changes)
       for task, (suffix, changes) in EARLIER.items()},
}
