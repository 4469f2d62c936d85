"""``split_torso`` through the host loop's truncations (rtrl.rl.loop, rtrl.rl.algorithms.ac): the scripted vector
of tests/test_rl_host.py (a termination, two truncations, and both at once) drives an actor-critic whose policy reads
the first half of an Elman torso's units and whose value reads the second half, and every step is checked against
the NumPy oracle of tests/test_rl_rules.py with its heads written out again for the halves (``SplitOracle``): the
parameters, the traces, the carries, the pending value and the value owed to a truncated episode (``V(s_T)`` of the
value's half of the torso's step on the last observation). [Mutations tried by hand, each killed: ``heads`` giving
the value the policy's half; ``ac.bootstrap`` returning 0; the loop bootstrapping from the next episode's first
observation instead of the last one.]"""

from __future__ import annotations

import jax
import numpy as np

from rtrl.rl import RLConfig
from test_rl_host import STEPS, E, host_run, stepped_beside
from test_rl_rules import BASE, Oracle, assert_close


class SplitOracle(Oracle):
    """The oracle's loop with ``split_torso``'s linear heads: logits from ``h[:N/2]``, the value from ``h[N/2:]``."""

    def value_after(self, e, x):
        t = self.p["torso"]
        h = np.tanh(x @ t["W"] + t["B"] + self.h[e] @ t["R"])
        half = h.size // 2
        return h[half:] @ self.p["value"]["W"][:, 0] + self.p["value"]["b"][0]

    def grads(self, e, h, action):
        p, S = self.p, self.S[e]
        half = h.size // 2
        h_p, h_v = h[:half], h[half:]
        logits = h_p @ p["policy"]["W"] + p["policy"]["b"]
        value = h_v @ p["value"]["W"][:, 0] + p["value"]["b"][0]
        log_pi = logits - logits.max() - np.log(np.exp(logits - logits.max()).sum())
        pi = np.exp(log_pi)
        entropy = -(pi * log_pi).sum()
        d_logp = np.eye(pi.size)[action] - pi
        d_entropy = -pi * (log_pi + entropy)
        zero = np.zeros(half)

        def through(d_h, d_logits, d_value):
            return {"torso": {k: np.tensordot(d_h, S[k], 1) for k in S},
                    "policy": {"W": np.outer(h_p, d_logits), "b": d_logits},
                    "value": {"W": h_v[:, None] * d_value, "b": np.array([d_value])}}

        w_v, w_p = p["value"]["W"][:, 0], p["policy"]["W"]
        return value, (through(np.concatenate([zero, w_v]), 0 * logits, 1.0),
                       through(np.concatenate([w_p @ d_logp, zero]), d_logp, 0.0),
                       through(np.concatenate([w_p @ d_entropy, zero]), d_entropy, 0.0))


def test_a_split_torso_trains_and_bootstraps_a_truncated_episode_from_the_values_half():
    config = RLConfig(**{**BASE, "hidden": 4, "split_torso": True, "steps": STEPS, "record_every": STEPS})
    run = host_run(config)
    state = run.init(0)
    rng = np.random.default_rng(1)
    params = jax.tree.map(lambda a: np.asarray(rng.normal(size=a.shape)), state.params)
    assert params["policy"]["W"].shape == (2, 3) and params["value"]["W"].shape == (2, 1)
    state = state._replace(params=jax.tree.map(np.asarray, params), opt_state=run.optimizer.init(params))
    oracle = SplitOracle(config, params)
    owed_log = []
    for t, now in stepped_beside(run, state, oracle):
        owed_log.append(oracle.pending[3].copy())
        value, _, _, owed = oracle.pending
        assert_close((now.pending.value, now.pending.transition.final_value), (value, owed), f"pending {t}")
    truncated = [(k, e) for k in range(STEPS) for e in range(E) if run.environments.vector.log[k][1].truncated[e]]
    assert truncated == [(2, 1), (3, 0)]
    assert all(owed_log[k][e] != 0 for k, e in truncated)  # the case bootstraps where it says
