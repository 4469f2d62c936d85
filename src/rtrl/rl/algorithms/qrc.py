"""QRC(lambda) (``rtrl rl --algorithm qrc``), ``QRCAgent``: Q(lambda)'s agent and traces, its TD ascent corrected as in
Patterson et al. 2022's QRC ("A robust gradient-TD algorithm"), with eligibility traces as Elelimy et al. 2025 and Farr
et al. 2026 (RQRC; code: ``streamlet.algorithms.RecurrentQRCLambda``) write it (``rtrl.rl.transforms.qrc``). The
secondary weights ``h`` estimate the expected TD error, ``h(s, a) = phi . W_h[:, a] + b_h[a]`` on what the head of
action values reads, ``phi`` (the torso's output, or the tanh layer's with ``head_hidden``), zero at the start, their
gradient not taken into the torso (Patterson et al.'s deep QRC; Farr et al. give ``h`` a torso of its own). With ``h_t =
h(s_t, a_t)`` and ``d_t = done_t`` (an episode ended)::

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

from rtrl.rl.agent import Stepped
from rtrl.rl.algorithms.q import QAgent
from rtrl.rl.transforms import qrc


class QRCAgent(QAgent):
    """QRC(lambda)'s agent: Q(lambda)'s (a linear head of A action values on the torso, epsilon-greedy, Watkins'
    cuts), its TD ascent corrected with the secondary weights h, a linear head on the same torso held by the update
    rule."""

    options = (*QAgent.options, "h_lr", "h_beta", "clip")

    def stepped(self, params, memory, x: jax.Array, key: jax.Array, config, step: jax.Array) -> Stepped:
        """``QAgent.stepped`` with a second pullback per environment (``grad max_a Q(s_t, a)``) and the torso's
        outputs, for the correction (``QAgent.epsilon_greedy`` with ``targets``)."""
        return self.epsilon_greedy(params, memory, x, key, config, step, targets=True)

    def correction(self, config, envs: int):
        """``rtrl.rl.transforms.qrc``: the gradient correction and the secondary weights (``config``'s ``gamma``,
        ``lam``, ``h_lr``, ``h_beta`` and ``clip``)."""
        return qrc(config.gamma, config.gamma * config.lam, envs, self.features, self.num_actions,
                   h_lr=config.h_lr, beta=config.h_beta, clip=config.clip)
