"""QRC(lambda) (``rtrl rl --algorithm qrc``), ``QRCAgent``: Q(lambda)'s agent and traces (``action_values``, and Q's
``learn`` and ``bootstrap``), its TD ascent corrected as in Patterson et al. 2022's QRC ("A robust gradient-TD
algorithm"), with eligibility traces as Elelimy et al. 2025 and Farr et al. 2026 (RQRC; code:
``streamlet.algorithms.RecurrentQRCLambda``) write it (``rtrl.rl.transforms.qrc``). The secondary weights ``h``
estimate the expected TD error, ``h(s, a) = phi . W_h[:, a] + b_h[a]`` on what the head of action values reads,
``phi`` (the torso's output, or the tanh layer's with ``head_hidden``), zero at the start, their gradient not taken
into the torso (Patterson et al.'s deep QRC; Farr et al. give ``h`` a torso of its own). With ``h_t = h(s_t, a_t)``
and ``d_t = done_t`` (an episode ended)::

    z^h_t = gamma * lambda * (1 - cut) * z^h_{t-1} + grad h_t,      e_t = gamma * lambda * (1 - cut) * e_{t-1} + h_t
    ascent of Q:  delta_t z_t - e_t grad delta_t - h_t g_t
                  = delta_t z_t + (e_t - h_t) g_t - gamma (1 - d_t) e_t grad max_a Q(s_{t+1}, a)
    h += h_lr * clip(delta_t z^h_t - h_t grad h_t - beta h)                          (``h_lr``, ``h_beta``)

where ``grad delta_t = gamma (1 - d_t) grad max_a Q(s_{t+1}, a) - g_t`` and ``clip`` is to the global norm
``clip`` (plain steps). The ascent of Q goes to the step-size rule as Q(lambda)'s does (``adam``, ``sgd``,
``obgd``; ObGD's bound measures its TD part). Each term is taken at step ``t + 1``, when ``delta_t`` is known;
after a truncation the TD error bootstraps from ``max_a Q(s_T, a)`` but the correction's gradient of it is
dropped (``d_t = 1``).
"""

from __future__ import annotations

import jax

from rtrl.cells.base import Cell
from rtrl.methods import Method
from rtrl.rl.algorithm import Stepped
from rtrl.rl.algorithms import action_values as av
from rtrl.rl.algorithms import q
from rtrl.rl.transforms import qrc


@av.composed
class QRCAgent:
    """QRC(lambda): Q(lambda)'s pieces (a head of A action values on the torso, epsilon-greedy, Watkins' cuts), its
    TD ascent corrected with the secondary weights h, a linear head on the same features held by the update rule."""

    options = (*av.OPTIONS, "h_lr", "h_beta", "clip")

    def __init__(self, cell: Cell, num_actions: int, method: str | Method = "rtrl", truncation: int = 8, *,
                 head_hidden: int = 0, epsilon: float = 0.01, explore_steps: int = 10_000, h_lr: float = 1e-5,
                 h_beta: float = 1.0, clip: float | None = 1.0):
        """Q(lambda)'s options (``action_values.construct``), and h's step size ``h_lr``, its regulariser ``h_beta``
        and the global norm ``clip`` its step is clipped to (None: not clipped)."""
        av.construct(self, cell, num_actions, method, truncation, head_hidden=head_hidden, epsilon=epsilon,
                     explore_steps=explore_steps)
        self.h_lr, self.h_beta, self.clip = h_lr, h_beta, clip

    learn, bootstrap = q.learn, q.bootstrap

    def stepped(self, params, memory, x: jax.Array, key: jax.Array, step: jax.Array) -> Stepped:
        """Q(lambda)'s step with a second pullback per environment (``grad max_a Q(s_t, a)``) and the features, for
        the correction (``action_values.epsilon_greedy`` with ``targets``)."""
        return av.epsilon_greedy(self, params, memory, x, key, step, targets=True)

    def correction(self, gamma: float, decay: float, envs: int):
        """``rtrl.rl.transforms.qrc``: the gradient correction and the secondary weights."""
        return qrc(gamma, decay, envs, self.features, self.num_actions, h_lr=self.h_lr, beta=self.h_beta,
                   clip=self.clip)
