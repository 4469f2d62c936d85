"""QRC(lambda) (``rtrl rl --algorithm qrc``: rtrl.rl.algorithms.QRCAgent, rtrl.rl.transforms.qrc) through the whole
loop, step by step, against a NumPy oracle written here from the update equations, on the scripted case of
tests/test_rl_algorithms.py (two environments, five steps, an Elman torso of 2 units, 3 actions, epsilon 0.5 after
the first step; seed 2 draws greedy and non-greedy actions, so the case holds an episode end, a truncation (the
``Truncating`` environment) and a Watkins cut).

The oracle keeps, per environment, what the equations name: the previous step's ``g = grad Q(s, a)``, its
``h(s, a)`` and ``grad h``, the decayed sum ``e`` of h's estimates and the traces ``z``, ``z^h``; it computes
``grad max_a Q(s_t, a)`` from its own sensitivities and, from its own action values, which actions were greedy.
Nothing is shared with the implementation (which keeps ``(e - h) g`` as one tree, and ``h grad h`` likewise). The
secondary weights start non-zero (drawn), so the correction acts from the second step.

Mutations of the implementation tried, each killed: the correction dropped (``u`` as it is); the sign of its
target term flipped (``c + gamma * a``); ``(e_{t-1} - h_{t-1}) g`` kept as ``e_{t-1} g`` (the ``keep * e`` of the
carried term made ``keep * e + value``); the target term not cut after an episode's end (``done`` ignored); the
h update's ``- h grad h`` dropped; the regulariser's sign flipped (``+ beta h``); h's estimate read before its
update instead of after; the h traces not cut (``keep`` without ``cut``); h's clip dropped; the second pullback
of the greedy action replaced by the taken action's (``grad Q(s_t, a_t)``).
"""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rtrl.cli import main
from rtrl.rl.algorithms import QRCAgent
from rtrl.rl.config import RLConfig
from rtrl.rl.transforms import QRCState
from test_rl_algorithms import Q_BASE, QOracle, Truncating, scripted_episodes
from test_rl_rules import STEPS, E, Scripted, assert_close, scripted_run, standardized

N, A = 2, 3


def qrc_slot(opt_state) -> int:
    return next(i for i, s in enumerate(opt_state) if isinstance(s, QRCState))


class QRCOracle(QOracle):
    """QRC(lambda) for an Elman torso and a linear Q head, from the formulas (the torso's sensitivities, the
    environments and the bookkeeping are ``QOracle``'s)."""

    def __init__(self, config, params, truncating: bool, h, correct: bool = True):
        super().__init__(config, params, truncating)
        self.hw = {k: np.array(v) for k, v in h.items()}  # the secondary weights W_h (N, A), b_h (A,)
        self.zh = [{k: np.zeros_like(v) for k, v in self.hw.items()} for _ in range(E)]
        self.e = np.zeros(E)  # sum of h's estimates, decayed and cut as the traces
        self.prev = [None] * E  # (g, h, grad h) of the previous step
        self.correct = correct
        self.corrections = []  # the correction of each step's ascent (a tree), for the tests

    def gradient_of(self, e, h, k):
        """grad Q(s, k) w.r.t. every parameter: through the head and, by the sensitivities, the torso."""
        onehot = np.eye(A)[k]
        return {"torso": {n: np.tensordot(self.p["q"]["W"][:, k], self.S[e][n], 1) for n in self.S[e]},
                "q": {"W": np.outer(h, onehot), "b": onehot}}

    def act(self, obs, actions):
        c = self.c
        self.seen_obs.append(obs)
        seen = np.concatenate(self.seen_obs)
        x = standardized(seen, obs)
        values, targets, explored, phis, g, G = np.zeros(E), np.zeros(E), np.zeros(E, bool), [], [], []
        for e in range(E):
            h = self.torso(e, x[e])
            q = self.q_values(h)
            a = actions[e]
            values[e], targets[e], explored[e] = q[a], q.max(), a != np.argmax(q)
            phis.append(h)
            g.append(self.gradient_of(e, h, a))
            G.append(self.gradient_of(e, h, np.argmax(q)))
        delta, cut, done_before = self.td_error(targets)

        def mean(trees):
            return jax.tree.map(lambda *a: sum(a) / E, *trees)

        # the ascent of Q: delta z + (e - h) g - gamma (1 - done) e grad max_a Q(s', a), for the previous step
        ascent = mean([jax.tree.map(lambda z, d=delta[e]: d * z, self.z[e]) for e in range(E)])
        terms = []
        for e in range(E):
            if self.prev[e] is None:
                terms.append(jax.tree.map(np.zeros_like, self.p))
                continue
            g_prev, h_prev, _ = self.prev[e]
            bootstrap = 0.0 if done_before[e] else c.gamma
            terms.append(jax.tree.map(lambda gp, Gt, e=e, h_prev=h_prev, b=bootstrap:
                                      (self.e[e] - h_prev) * gp - b * self.e[e] * Gt, g_prev, G[e]))
        correction = mean(terms)
        self.corrections.append(correction)
        if self.correct:
            ascent = jax.tree.map(np.add, ascent, correction)
        lr = c.lr
        if c.optimizer == "obgd":  # the bound measures the TD part alone
            l1 = [sum(np.abs(a).sum() for a in jax.tree.leaves(z)) for z in self.z]
            lr = c.lr / max(c.lr * c.kappa * np.mean([max(abs(delta[e]), 1.0) * l1[e] for e in range(E)]), 1.0)
        else:
            assert c.optimizer == "sgd" and c.clip is None
        self.p = jax.tree.map(lambda a, u: a + lr * u, self.p, ascent)

        # the secondary weights: h += h_lr clip(mean_e [delta z^h - h grad h] - beta h)
        h_terms = []
        for e in range(E):
            _, h_prev, gh_prev = self.prev[e] if self.prev[e] is not None else (None, 0.0, None)
            h_terms.append({k: delta[e] * self.zh[e][k] - (0 if gh_prev is None else h_prev * gh_prev[k])
                            for k in self.hw})
        h_ascent = {k: sum(t[k] for t in h_terms) / E - c.h_beta * self.hw[k] for k in self.hw}
        if c.clip is not None:
            norm = np.sqrt(sum((v ** 2).sum() for v in h_ascent.values()))
            h_ascent = {k: v * min(1.0, c.clip / norm) for k, v in h_ascent.items()}
        self.hw = {k: self.hw[k] + c.h_lr * h_ascent[k] for k in self.hw}

        # this step's h, read with the weights just updated; the traces
        for e in range(E):
            a = actions[e]
            onehot = np.eye(A)[a]
            h_now = phis[e] @ self.hw["W"][:, a] + self.hw["b"][a]
            grad_h = {"W": np.outer(phis[e], onehot), "b": onehot}
            decay = 0.0 if cut[e] else c.gamma * c.lam
            self.z[e] = jax.tree.map(lambda z, ge, decay=decay: decay * z + ge, self.z[e], g[e])
            self.zh[e] = {k: decay * self.zh[e][k] + grad_h[k] for k in self.hw}
            self.e[e] = decay * self.e[e] + h_now
            self.prev[e] = (g[e], h_now, grad_h)
        self.values, self.done_before = values, done_before
        self.explored = explored
        self.explored_seen.append(explored)


QRC_BASE = {**Q_BASE, "algorithm": "qrc", "h_lr": 0.4, "h_beta": 0.3}


def qrc_run(config, env, seed=2):
    """The scripted run with QRC's agent, the secondary weights drawn (non-zero from the start)."""
    run, state = scripted_run(config, env, seed=seed, agent=QRCAgent)
    slot = qrc_slot(state.opt_state)
    rng = np.random.default_rng(11)
    h = {"W": jnp.asarray(rng.normal(size=(N, A))), "b": jnp.asarray(rng.normal(size=(A,)))}
    opt_state = list(state.opt_state)
    opt_state[slot] = opt_state[slot]._replace(h=h)
    return run, state._replace(opt_state=tuple(opt_state)), h


@pytest.mark.parametrize("optimizer, clip", [("sgd", None), ("obgd", 0.05)])
@pytest.mark.parametrize("env", [Scripted(), Truncating()], ids=["terminating", "truncating"])
def test_every_step_is_the_written_out_qrc_lambda_update(optimizer, clip, env):
    """Every step's parameters, traces, secondary weights, their traces and the sum ``e`` are the oracle's (sgd
    without clipping; obgd, its bound measuring the TD part, with h's ascent clipped to a norm that binds)."""
    config = RLConfig(**{**QRC_BASE, "optimizer": optimizer, "clip": clip, "lr": 0.3 if optimizer == "sgd" else 1.0})
    run, state, h = qrc_run(config, env)
    truncating = isinstance(env, Truncating)
    oracle = QRCOracle(config, state.params, truncating, h)
    slot = qrc_slot(state.opt_state)
    ends, truncations, clipped = [], [], []
    for t in range(STEPS):
        before = jax.tree.map(np.array, oracle.hw)
        state = run.advance(state, 1)
        done, truncated = oracle.advance(np.asarray(state.env_state.env.taken))
        ends.append(done.tolist())
        truncations.append(truncated.tolist())
        ours = state.opt_state[slot]
        assert_close(state.params, oracle.p, f"parameters after step {t}")
        assert_close(state.traces, jax.tree.map(lambda *z: np.stack(z), *oracle.z), f"traces after step {t}")
        assert_close(ours.h, oracle.hw, f"secondary weights after step {t}")
        assert_close(ours.h_traces, {k: np.stack([z[k] for z in oracle.zh]) for k in oracle.hw},
                     f"h traces after step {t}")
        assert_close(ours.h_sum, oracle.e, f"sum of h after step {t}")
        step = np.sqrt(sum(((oracle.hw[k] - before[k]) ** 2).sum() for k in before))
        clipped.append(clip is not None and np.isclose(step, config.h_lr * clip, rtol=1e-9))
    assert (ends, truncations) == scripted_episodes(truncating)
    explored, fresh = np.array(oracle.explored_seen[:-1]), np.array(ends[:-1])
    assert (explored & ~fresh).any() and (~explored & ~fresh).any(), (explored, fresh)  # a Watkins cut, and none
    # the correction is there to see: large against the tolerance at every step from the second
    sizes = [max(np.abs(a).max() for a in jax.tree.leaves(c)) for c in oracle.corrections]
    assert sizes[0] == 0 and min(sizes[1:]) > 1e-3, sizes
    if clip is not None:
        assert any(clipped), "h's clip never bound"


def test_without_the_correction_the_oracle_parts_from_the_run():
    """The oracle with the correction dropped (Q(lambda)'s ascent) differs from the run by far more than the
    tolerance after the second step: the comparison above sees the correction term."""
    config = RLConfig(**{**QRC_BASE, "optimizer": "sgd", "clip": None, "lr": 0.3})
    run, state, h = qrc_run(config, Scripted())
    oracle = QRCOracle(config, state.params, False, h, correct=False)
    for _ in range(2):
        state = run.advance(state, 1)
        oracle.advance(np.asarray(state.env_state.env.taken))
    gap = max(np.abs(np.asarray(a) - b).max() for a, b in zip(jax.tree.leaves(state.params),
                                                              jax.tree.leaves(oracle.p), strict=True))
    assert gap > 1e-4, gap


def test_the_correction_and_the_h_update_on_a_hand_checked_step():
    """``rtrl.rl.transforms.qrc`` alone, one environment, N = 1, A = 2, the numbers worked by hand. Step 0 (no
    TD error yet): h = (W, b) = ([[1, 2]], [0.5, -1]), phi = 3, a = 1, so h_0 = 3*2 - 1 = 5 after the update
    ``h += lr (0 - 0 - beta h)`` with beta 0 (nothing moves); z^h_0 = grad h_0 = ([[0, 3]], [0, 1]), e_0 = 5.
    Step 1: delta = 2, not done, the traces not cut (decay 0.5), g_0 = (1,) -> the correction is
    ``(e_0 - h_0) g_0 - gamma e_0 G_1 = 0 - 0.9 * 5 * G_1``, G_1 = 4: -18; h's ascent is
    ``delta z^h_0 - h_0 grad h_0 - beta h = 2 ([[0, 3]], [0, 1]) - 5 ([[0, 3]], [0, 1]) = ([[0, -9]], [0, -3])``,
    times h_lr 0.1: h = ([[1, 1.1]], [0.5, -1.3]). With phi_1 = -1, a_1 = 0: h_1 = -1 + 0.5 = -0.5,
    e_1 = 0.5 * 5 - 0.5 = 2, z^h_1 = 0.5 ([[0, 3]], [0, 1]) + ([[-1, 0]], [1, 0]) = ([[-1, 1.5]], [1, 0.5]); and
    the next step's carried ``(e_1 - h_1) g_1 = 2.5 g_1``."""
    from rtrl.rl.transforms import Ascent, qrc

    rule = qrc(gamma=0.9, decay=0.5, envs=1, features=1, actions=2, h_lr=0.1, beta=0.0, clip=None)
    params = {"w": jnp.zeros((1,))}
    state = rule.init(params)
    state = state._replace(h={"W": jnp.array([[1.0, 2.0]]), "b": jnp.array([0.5, -1.0])})
    zero = Ascent({"w": jnp.zeros((1,))}, jnp.zeros(()))

    def call(state, delta, phi, action, g, G, done=False, cut=False):
        return rule.update(zero, state, params, delta=jnp.array([delta]), cut=jnp.array([cut]),
                           done=jnp.array([done]), grads={"w": jnp.array([[g]])}, action=jnp.array([action]),
                           features=jnp.array([[phi]]), target_grads={"w": jnp.array([[G]])})

    out, state = call(state, 0.0, 3.0, 1, 1.0, 7.0)
    np.testing.assert_allclose(out.direction["w"], [0.0])
    np.testing.assert_allclose(state.h_sum, [5.0])
    out, state = call(state, 2.0, -1.0, 0, 3.0, 4.0)
    np.testing.assert_allclose(out.direction["w"], [-18.0], rtol=1e-12)
    np.testing.assert_allclose(state.h["W"], [[1.0, 1.1]], rtol=1e-12)
    np.testing.assert_allclose(state.h["b"], [0.5, -1.3], rtol=1e-12)
    np.testing.assert_allclose(state.h_sum, [2.0], rtol=1e-12)
    np.testing.assert_allclose(state.h_traces["W"], [[[-1.0, 1.5]]], rtol=1e-12)
    np.testing.assert_allclose(state.h_traces["b"], [[1.0, 0.5]], rtol=1e-12)
    np.testing.assert_allclose(state.carried["w"], [2.5 * 3.0], rtol=1e-12)
    # after an episode's end the target term goes (done), and the cut zeroes what is carried into the next step
    out, _ = call(state, 0.0, 1.0, 0, 1.0, 100.0, done=True, cut=True)
    np.testing.assert_allclose(out.direction["w"], [7.5], rtol=1e-12)


def test_qrc_options_are_checked_and_per_environment_rules_refused():
    with pytest.raises(ValueError, match="optimizer must be adam, sgd or obgd under algorithm 'qrc'"):
        RLConfig(algorithm="qrc", optimizer="intentional")
    with pytest.raises(ValueError, match="h_lr"):
        RLConfig(algorithm="qrc", h_lr=0.0)
    with pytest.raises(ValueError, match="h_beta"):
        RLConfig(algorithm="qrc", h_beta=-1.0)


def test_rtrl_rl_algorithm_qrc_runs(tmp_path, capsys):
    """``rtrl rl --algorithm qrc`` end to end on memory-chain (a few hundred steps): it writes its records, with
    finite health figures, and ``rtrl list algorithms`` names it."""
    out = tmp_path / "run"
    argv = ["rl", "--env", "memory-chain", "--algorithm", "qrc", "--hidden", "4", "--envs", "2", "--steps", "200",
            "--record-every", "100", "--explore-steps", "100", "--out", str(out), "--quiet"]
    assert main(argv) == 0  # in this process: the command's own code, without a second start of Python and JAX
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [100, 200]
    assert all(np.isfinite(r["td_rms"]) and np.isfinite(r["param_norm"]) for r in records)
    assert json.loads((out / "config.json").read_text())["algorithm"] == "qrc"
    capsys.readouterr()
    assert main(["list", "algorithms"]) == 0
    assert "qrc" in capsys.readouterr().out.split()
