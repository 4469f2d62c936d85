"""The update rule's transforms (rtrl.rl.transforms), each on a tiny hand-checked case against a NumPy oracle written
here from the formulas (nothing from rtrl).

Two environments, a parameter tree of two leaves (a (2, 3) matrix and a (2,) vector), float64, four steps whose
gradients, TD errors and cuts are scripted: environment 0's trace is cut before step 2 (its episode ended), and
environment 1's before step 3 (an episode end, or Watkins' cut after a non-greedy action: the transform does not
know which). Each test asserts every step's output and state.

Mutations of rtrl/rl/transforms.py tried, each killed: the traces' output ``z_t`` instead of ``z_{t-1}``; the decay
applied to ``z + g``; the TD ascent summed over E; ObGD's measure with ``|delta|`` for ``max(|delta|, 1)``;
``every`` due at ``count % k == 0``; the intentional update's sigma without its bias correction; adaptive ObGD's
second moment of ``z`` instead of ``delta z``. (Also, of the loop and the Q agent, by tests/test_rl_algorithms.py:
no Watkins cut; the target ``Q(s', a')`` for ``max_a Q(s', a)``; a truncation owed ``Q(s_T, 0)``.)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from rtrl.rl import transforms as T

E, STEPS = 2, 4
SHAPES = {"W": (2, 3), "b": (2,)}
GAMMA_LAMBDA = 0.9 * 0.5
RNG = np.random.default_rng(7)
GRADS = [{k: RNG.normal(size=(E, *s)) for k, s in SHAPES.items()} for _ in range(STEPS)]  # g_t per environment
DELTAS = [np.array([0.0, 0.0]), np.array([0.7, -2.5]), np.array([-0.3, 1.2]), np.array([3.0, 0.4])]
CUTS = [np.array([False, False]), np.array([False, False]), np.array([True, False]), np.array([False, True])]
BONUS = {k: 0.1 * RNG.normal(size=s) for k, s in SHAPES.items()}
PARAMS = {k: jnp.zeros(s) for k, s in SHAPES.items()}


def leaves(tree):
    return [np.asarray(tree[k]) for k in sorted(SHAPES)]


def assert_close(ours, theirs, what):
    for a, b in zip(leaves(ours), leaves(theirs), strict=True):
        assert a.shape == b.shape, what
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14, err_msg=what)


def run(rule, bonus=None, deltas=DELTAS):
    """The rule's outputs, step by step, and its state after each."""
    state = rule.init(PARAMS)
    outs, states = [], []
    for t in range(STEPS):
        g = jax.tree.map(jnp.asarray, GRADS[t])
        out, state = rule.update(g, state, PARAMS, delta=jnp.asarray(deltas[t]), cut=jnp.asarray(CUTS[t]),
                                 bonus=None if bonus is None else jax.tree.map(jnp.asarray, bonus), grads=g)
        outs.append(out)
        states.append(state)
    return outs, states


def oracle_traces(decay=GAMMA_LAMBDA, grads=GRADS):
    """``(z_{t-1}, z_t)`` of every step: ``z_t = decay * (1 - cut_t) * z_{t-1} + g_t`` per environment, from zero
    (``decay``: gamma * lambda; ``grads``: the g_t)."""
    z = {k: np.zeros((E, *s)) for k, s in SHAPES.items()}
    rows = []
    for t in range(STEPS):
        before = {k: v.copy() for k, v in z.items()}
        for e in range(E):
            keep = 0.0 if CUTS[t][e] else decay
            for k in z:
                z[k][e] = keep * z[k][e] + grads[t][k][e]
        rows.append((before, {k: v.copy() for k, v in z.items()}))
    return rows


def oracle_ascent(t, bonus=None):
    """``mean_e delta_e z_{t-1,e} (+ bonus)`` and ObGD's ``mean_e max(|delta_e|, 1) ||z_{t-1,e}||_1``."""
    z = oracle_traces()[t][0]
    u = {k: sum(DELTAS[t][e] * z[k][e] for e in range(E)) / E + (0 if bonus is None else bonus[k]) for k in z}
    m = np.mean([max(abs(DELTAS[t][e]), 1.0) * sum(np.abs(z[k][e]).sum() for k in z) for e in range(E)])
    return u, m


def test_eligibility_traces_give_the_previous_trace_and_accumulate_cut_per_environment():
    """The output is ``z_{t-1}`` (zero at the first step), the state ``z_t``; a cut zeroes the decayed trace of its
    environment only, before ``g_t`` enters. [guards: the output ``z_t``; the cut applied after adding ``g_t``; the
    cut of one environment applied to both; ``decay`` squared]"""
    outs, states = run(T.eligibility_traces(GAMMA_LAMBDA, E))
    for t, (before, after) in enumerate(oracle_traces()):
        assert_close(outs[t], before, f"output at step {t}")
        assert_close(states[t].traces, after, f"trace at step {t}")
    # the cut case by hand: environment 0 before step 2 holds g_2 alone
    np.testing.assert_array_equal(np.asarray(states[2].traces["b"][0]), GRADS[2]["b"][0])


@pytest.mark.parametrize("measure", [False, True])
def test_td_ascent_is_the_td_weighted_mean_plus_the_bonus(measure):
    """``u = mean_e delta_e z_e + bonus`` (a mean over E, not a sum), ObGD's measure where asked (0 else).
    [guards: summed over E; the bonus dropped or divided by E; max(|delta|, 1) as |delta|]"""
    rule = optax.chain(T.eligibility_traces(GAMMA_LAMBDA, E), T.td_ascent(measure))
    outs, _ = run(rule, BONUS)
    for t in range(STEPS):
        u, m = oracle_ascent(t, BONUS)
        assert_close(outs[t].direction, u, f"ascent at step {t}")
        assert float(outs[t].overshoot) == pytest.approx(m if measure else 0.0, rel=1e-12, abs=0)


def test_obgd_bounds_the_step_by_the_overshoot():
    """``lr / max(lr * kappa * m, 1) * u``: at step 1 the bound binds (m > 1), at step 0 (z = 0) it does not and
    the update is ``lr * bonus``. [guards: the bound without lr; min instead of max; the step on -u]"""
    lr, kappa = 0.8, 2.0
    outs, _ = run(optax.chain(T.eligibility_traces(GAMMA_LAMBDA, E), T.td_ascent(True), T.obgd(lr, kappa)), BONUS)
    bound_bound = []
    for t in range(STEPS):
        u, m = oracle_ascent(t, BONUS)
        step = lr / max(lr * kappa * m, 1.0)
        bound_bound.append(lr * kappa * m > 1)
        assert_close(outs[t], {k: step * v for k, v in u.items()}, f"update at step {t}")
    assert bound_bound == [False, True, True, True]


def test_descend_hands_adam_the_negated_ascent():
    """``descend(optax.sgd(lr))`` ascends ``lr * u``; with Adam, the first update is ``lr * u / (|u| + 1e-8)``
    (Adam's first step, ``u`` the bonus alone), so the direction is the ascent's. [guards: descending u]"""
    lr = 0.01
    outs, _ = run(optax.chain(T.eligibility_traces(GAMMA_LAMBDA, E), T.td_ascent(), T.descend(optax.sgd(lr))), BONUS)
    for t in range(STEPS):
        assert_close(outs[t], {k: lr * v for k, v in oracle_ascent(t, BONUS)[0].items()}, f"sgd step {t}")
    outs, _ = run(optax.chain(T.eligibility_traces(GAMMA_LAMBDA, E), T.td_ascent(), T.descend(optax.adam(lr))), BONUS)
    assert_close(outs[0], {k: lr * v / (np.abs(v) + 1e-8) for k, v in BONUS.items()}, "adam's first step")


def test_every_k_sums_the_ascents_and_the_measure_and_applies_at_every_kth_step():
    """With k = 2, ObGD applied to ``u_0 + u_1`` bounded by ``m_0 + m_1`` at step 1, and to ``u_2 + u_3`` at step 3;
    zero at steps 0 and 2. [guards: due at count % k == 0; the sum not reset after an update; the measure not summed]"""
    lr, kappa = 0.8, 2.0
    rule = optax.chain(T.eligibility_traces(GAMMA_LAMBDA, E), T.td_ascent(True), T.every(2, T.obgd(lr, kappa)))
    outs, _ = run(rule, BONUS)
    for t in range(STEPS):
        if t % 2 == 0:
            assert_close(outs[t], {k: np.zeros(s) for k, s in SHAPES.items()}, f"no update at step {t}")
            continue
        (u0, m0), (u1, m1) = oracle_ascent(t - 1, BONUS), oracle_ascent(t, BONUS)
        step = lr / max(lr * kappa * (m0 + m1), 1.0)
        assert_close(outs[t], {k: step * (u0[k] + u1[k]) for k in u0}, f"update at step {t}")


def test_adaptive_obgd_preconditions_by_the_running_second_moment_of_the_td_ascent():
    """Stream-x's AdaptiveObGD over E environments: ``v`` the running mean of ``mean_e (delta_e z_e)^2`` (bias-
    corrected by the calls so far), the trace divided by ``sqrt(v_hat + eps)`` both in the bound and in the step;
    the bonus scaled by the step, not preconditioned. [guards: v of z^2 instead of (delta z)^2; no bias correction;
    the bound on the raw trace]"""
    lr, kappa, beta2, eps = 1.0, 2.0, 0.99, 1e-8
    outs, states = run(optax.chain(T.eligibility_traces(GAMMA_LAMBDA, E), T.adaptive_obgd(lr, kappa, beta2, eps)),
                       BONUS)
    for t, (want, v, _) in enumerate(oracle_adaptive(lr, kappa, beta2, eps, BONUS)):
        assert_close(outs[t], want, f"update at step {t}")
        assert_close(states[t][1].moment, v, f"second moment at step {t}")


def oracle_adaptive(lr, kappa, beta2, eps, bonus):
    """AdaptiveObGD step by step (see the test above): ``(update, second moment, whether the bound binds)``."""
    v = {k: np.zeros(s) for k, s in SHAPES.items()}
    rows = []
    for t in range(STEPS):
        z = oracle_traces()[t][0]
        d = DELTAS[t]
        v = {k: beta2 * v[k] + (1 - beta2) * np.mean([(d[e] * z[k][e]) ** 2 for e in range(E)], axis=0) for k in v}
        scale = {k: np.sqrt(v[k] / (1 - beta2 ** (t + 1)) + eps) for k in v}
        m = np.mean([max(abs(d[e]), 1) * sum(np.abs(z[k][e] / scale[k]).sum() for k in z) for e in range(E)])
        step = lr / max(lr * kappa * m, 1.0)
        want = {k: step * (sum(d[e] * z[k][e] for e in range(E)) / E / scale[k] + (0 if bonus is None else bonus[k]))
                for k in z}
        rows.append((want, v, lr * kappa * m > 1))
    return rows


def oracle_intentional(deltas, mult, eta, decay, beta2, beta_clip, eps, bonus=BONUS, grads=GRADS, beta_norm=None):
    """Farr et al.'s intentional step, step by step: ``(update, clip ceiling)`` of every step (see the test below);
    ``beta_norm``: the clipped TD errors divided by their running mean absolute value at that rate (none if None)."""
    v = {k: np.zeros(s) for k, s in SHAPES.items()}
    sigma, sq, n, absolute = 0.0, 1.0, 0, 0.0
    rows = []
    for t in range(STEPS):
        z = oracle_traces(decay, grads)[t][0]
        M = {k: np.sqrt(v[k] / (1 - beta2 ** n if n else 1.0)) + eps for k in v}
        sig = sigma / (1 - decay ** n) if n else sigma
        sq = beta_clip * sq + (1 - beta_clip) * np.mean(deltas[t] ** 2)
        ceiling = mult * np.sqrt(sq / (1 - beta_clip ** (t + 1)))
        update = {k: np.array(0.0 if bonus is None else bonus[k]) for k in z}
        clipped = [np.sign(deltas[t][e]) * min(abs(deltas[t][e]), ceiling) for e in range(E)]
        if beta_norm is not None:
            absolute = beta_norm * absolute + (1 - beta_norm) * np.mean(np.abs(clipped))
            clipped = [c / max(absolute / (1 - beta_norm ** (t + 1)), 1e-12) for c in clipped]
        for e in range(E):
            norm = sum((z[k][e] ** 2 / M[k]).sum() for k in z)
            step = eta / max(np.sqrt(sig * norm), eps)
            for k in z:
                update[k] = update[k] + clipped[e] * step * z[k][e] / M[k] / E
        n += 1
        v = {k: beta2 * v[k] + (1 - beta2) * np.mean(grads[t][k] ** 2, axis=0) for k in v}
        M = {k: np.sqrt(v[k] / (1 - beta2 ** n)) + eps for k in v}
        g_norm = np.mean([sum((grads[t][k][e] ** 2 / M[k]).sum() for k in v) for e in range(E)])
        sigma = sigma + (1 - decay) * (g_norm - sigma)
        rows.append((update, ceiling))
    return rows


def test_intentional_moves_each_output_by_the_intended_fraction_with_its_estimated_preconditioner():
    """Farr et al.'s intentional step over E environments, written out: the preconditioner and sigma of the
    gradients up to ``g_{t-1}`` (bias-corrected; none at step 0), ``step_e = eta / sqrt(sigma * ||z_e||^2_M)``, the
    TD error clipped at 20 running RMSs (from 1), the statistics updated with ``g_t`` after the step. A case where
    the clip binds follows. [guards: the statistics of g_t used for g_{t-1}'s error; sigma without its bias
    correction; ||z||_M without M; the clip's RMS before this error enters]"""
    eta, beta2, beta_clip, eps = 0.5, 0.9, 0.8, 1e-8

    def rule(mult):
        return optax.chain(T.eligibility_traces(GAMMA_LAMBDA, E),
                           T.intentional(eta, GAMMA_LAMBDA, beta2, beta_clip, mult, eps))

    def oracle(deltas, mult):
        return oracle_intentional(deltas, mult, eta, GAMMA_LAMBDA, beta2, beta_clip, eps)

    outs, states = run(rule(20.0), BONUS)
    rows = oracle(DELTAS, 20.0)
    for t, (want, _) in enumerate(rows):
        assert_close(outs[t], want, f"update at step {t}")
    assert all(ceiling > 3.0 for _, ceiling in rows)  # nothing clipped at 20 RMSs
    # the clip binds where a TD error is beyond the multiple of the running RMS (one RMS here: at four steps a
    # TD error is at most sqrt(E * 4) of an RMS that includes it)
    big = [*DELTAS[:3], np.array([1e4, 0.4])]
    rows = oracle(big, 1.0)
    assert rows[3][1] < 1e4
    outs, _ = run(rule(1.0), BONUS, big)
    assert_close(outs[3], rows[3][0], "update at step 3, clipped")


def test_intentional_normalize_delta_divides_the_clipped_error_by_its_running_mean_absolute_value():
    """Farr et al.'s actor optimiser (``normalize_delta``): the clipped TD errors over its running mean absolute
    value (bias-corrected, this step's errors in it, their mean over E). By hand at step 1 (the first with an
    error; step 0's errors are 0 and enter the mean as 0): the mean absolute error is (0.7 + 2.5) / 2 = 1.6, so
    ``a = (1 - b) 1.6 + b (1 - b) 0`` over ``1 - b^2``: 1.6 / (1 + b), and the errors become 0.7 (1 + b) / 1.6 and
    -2.5 (1 + b) / 1.6. [guards: the mean absolute error without its bias correction; of the errors before the
    clip; before this step's errors enter it; normalised where not asked]"""
    eta, beta2, beta_clip, eps, beta_norm = 0.5, 0.9, 0.8, 1e-8, 0.6
    rule = optax.chain(T.eligibility_traces(GAMMA_LAMBDA, E),
                       T.intentional(eta, GAMMA_LAMBDA, beta2, beta_clip, 20.0, eps, normalize_delta=True,
                                     beta_norm=beta_norm))
    outs, states = run(rule, BONUS)
    rows = oracle_intentional(DELTAS, 20.0, eta, GAMMA_LAMBDA, beta2, beta_clip, eps, beta_norm=beta_norm)
    plain = oracle_intentional(DELTAS, 20.0, eta, GAMMA_LAMBDA, beta2, beta_clip, eps)
    for t, (want, _) in enumerate(rows):
        assert_close(outs[t], want, f"update at step {t}")
    np.testing.assert_allclose(float(states[1][1].absolute_delta), (1 - beta_norm) * 1.6, rtol=1e-12)
    # step 1 by hand: each environment's share of the update is scaled by (1 + b) / 1.6 against the plain step's
    # (the bonus, the same in both, taken out)
    for k in SHAPES:
        np.testing.assert_allclose(np.asarray(outs[1][k]) - BONUS[k], (plain[1][0][k] - BONUS[k]) * (1 + beta_norm)
                                   / 1.6, rtol=1e-10, err_msg=k)
    # a clip that binds enters the mean clipped: one RMS, as in the test above
    big = [*DELTAS[:3], np.array([1e4, 0.4])]
    rule = optax.chain(T.eligibility_traces(GAMMA_LAMBDA, E),
                       T.intentional(eta, GAMMA_LAMBDA, beta2, beta_clip, 1.0, eps, normalize_delta=True,
                                     beta_norm=beta_norm))
    outs, _ = run(rule, BONUS, big)
    want = oracle_intentional(big, 1.0, eta, GAMMA_LAMBDA, beta2, beta_clip, eps, beta_norm=beta_norm)[3][0]
    assert_close(outs[3], want, "update at step 3, clipped then normalised")


GRADS_PI = [{k: RNG.normal(size=(E, *s)) for k, s in SHAPES.items()} for _ in range(STEPS)]  # the policy's g_t


def split_oracles(actor_eta, critic_eta, decay):
    """The oracle's rows of the critic's intentional step (the value's gradients, ``GRADS``) and of the actor's
    (the policy's, ``GRADS_PI``, its TD error normalised), each at its own constant."""
    critic = oracle_intentional(DELTAS, 20.0, critic_eta, decay, 0.999, 0.9998, 1e-8, bonus=None)
    actor = oracle_intentional(DELTAS, 20.0, actor_eta, decay, 0.999, 0.9998, 1e-8, bonus=None, grads=GRADS_PI,
                               beta_norm=0.9998)
    return critic, actor

def test_split_intentional_steps_the_critic_and_the_actor_apart():
    """Farr et al.'s intentional actor-critic: the value's gradients and the policy's in traces of their own, the
    critic's step at its constant, the actor's at its own with the TD error normalised, the bonus added once; the
    combined drive given as the input is not read. [guards: one constant for both; the actor's error not
    normalised; the critic's normalised; the bonus twice; a shared trace or shared statistics]"""
    decay, actor_eta, critic_eta = GAMMA_LAMBDA, 0.05, 0.5
    rule = T.split_intentional(actor_eta, critic_eta, decay, E)
    state = rule.init(PARAMS)
    critic, actor = split_oracles(actor_eta, critic_eta, decay)
    for t in range(STEPS):
        g_v, g_pi = (jax.tree.map(jnp.asarray, g[t]) for g in (GRADS, GRADS_PI))
        junk = jax.tree.map(lambda a: 1e3 * jnp.ones_like(a), g_v)  # the combined drive: not read
        out, state = rule.update(junk, state, PARAMS, delta=jnp.asarray(DELTAS[t]), cut=jnp.asarray(CUTS[t]),
                                 bonus=jax.tree.map(jnp.asarray, BONUS), grads=junk, value_grads=g_v,
                                 policy_grads=g_pi)
        want = {k: critic[t][0][k] + actor[t][0][k] + BONUS[k] for k in SHAPES}
        assert_close(out, want, f"update at step {t}")
    with pytest.raises(ValueError, match="critic_lr is read by optimizer 'intentional' only, got optimizer 'adam'"):
        T.update_rule("adam", lr=0.5, decay=decay, envs=E, critic_lr=0.5)


def frozen_split_chain(actor_eta, critic_eta, decay, envs):
    """The rule under ``critic_lr`` before it lost its unread traces, frozen here: the traces of the sum (``drive``),
    then the critic's and the actor's traces and intentional steps, neither reading them."""
    critic = optax.chain(T.eligibility_traces(decay, envs), T.intentional(critic_eta, decay))
    actor = optax.chain(T.eligibility_traces(decay, envs), T.intentional(actor_eta, decay, normalize_delta=True))

    def update(z, state, params=None, *, value_grads, policy_grads, grads=None, bonus=None, **extra):
        v, critic_state = critic.update(value_grads, state[0], params, grads=value_grads, **extra)
        pi, actor_state = actor.update(policy_grads, state[1], params, grads=policy_grads, bonus=bonus, **extra)
        return jax.tree.map(jnp.add, v, pi), (critic_state, actor_state)

    split = optax.GradientTransformationExtraArgs(lambda p: (critic.init(p), actor.init(p)), update)
    return optax.chain(T.eligibility_traces(decay, envs), split)


def test_the_split_rule_keeps_two_trace_sets_and_steps_as_the_three_set_chain_did():
    """``update_rule("intentional", critic_lr=...)``: the critic's and the actor's traces (``eligibility`` finds
    two, each the oracle's of its own gradients), no third of the sum, and the same updates as the chain before it
    (a trace of the sum nothing read), every step, to the last bit. [guards: the sum's traces kept; the sets
    swapped]"""
    decay = GAMMA_LAMBDA
    rule = T.update_rule("intentional", lr=0.05, decay=decay, envs=E, critic_lr=0.5)
    before = frozen_split_chain(0.05, 0.5, decay, E)
    state, old = rule.init(PARAMS), before.init(PARAMS)
    assert len(T.eligibility(old)) == 3
    for t in range(STEPS):
        g_v, g_pi = (jax.tree.map(jnp.asarray, g[t]) for g in (GRADS, GRADS_PI))
        drive = jax.tree.map(lambda a, b: 0.7 * a + b, g_v, g_pi)
        extra = dict(delta=jnp.asarray(DELTAS[t]), cut=jnp.asarray(CUTS[t]), bonus=jax.tree.map(jnp.asarray, BONUS),
                     grads=drive, value_grads=g_v, policy_grads=g_pi)
        out, state = rule.update(drive, state, PARAMS, **extra)
        want, old = before.update(drive, old, PARAMS, **extra)
        for a, b in zip(leaves(out), leaves(want), strict=True):
            np.testing.assert_array_equal(a, b, err_msg=f"update at step {t}")
        critic, actor = T.eligibility(state)
        assert_close(critic, oracle_traces(decay, GRADS)[t][1], f"the critic's traces after step {t}")
        assert_close(actor, oracle_traces(decay, GRADS_PI)[t][1], f"the actor's traces after step {t}")


def test_eligibility_finds_the_one_trace_set_of_every_other_rule():
    """Every rule but the split one keeps one set, found by type whatever the chain's order around it (QRC's
    correction and ``every`` included), equal to the oracle's traces."""
    correction = T.qrc(0.9, GAMMA_LAMBDA, E, features=2, actions=2)
    for name, extra in [*((n, {}) for n in T.STEP_RULES), ("adam", {"every_k": 2})]:
        rule = T.update_rule(name, lr=0.1, decay=GAMMA_LAMBDA, envs=E, **extra)
        _, states = run(rule)
        (traces,) = T.eligibility(states[-1])
        assert_close(traces, oracle_traces()[-1][1], f"{name} {extra}")
    state = T.update_rule("sgd", lr=0.1, decay=GAMMA_LAMBDA, envs=E, correction=correction).init(PARAMS)
    assert len(T.eligibility(state)) == 1  # QRC's own traces (of h) are not the eligibility traces


@pytest.mark.parametrize("lr, critic_lr", [(0.05, 0.5), (0.5, 0.05)])
def test_update_rule_gives_lr_to_the_actor_and_critic_lr_to_the_critic(lr, critic_lr):
    """``update_rule("intentional", lr=..., critic_lr=...)``: the traces, then the critic's intentional step at
    ``critic_lr`` on the value's gradients and the actor's at ``lr`` (its TD error normalised) on the policy's,
    every step against the oracles; both orders of two different constants, so neither the rule nor its wiring
    can swap them. [guards: ``split_intentional(critic_lr, lr, ...)`` in ``update_rule``]"""
    decay = GAMMA_LAMBDA
    rule = T.update_rule("intentional", lr=lr, decay=decay, envs=E, critic_lr=critic_lr)
    state = rule.init(PARAMS)
    critic, actor = split_oracles(lr, critic_lr, decay)
    for t in range(STEPS):
        g_v, g_pi = (jax.tree.map(jnp.asarray, g[t]) for g in (GRADS, GRADS_PI))
        out, state = rule.update(jax.tree.map(jnp.add, g_v, g_pi), state, PARAMS, delta=jnp.asarray(DELTAS[t]),
                                 cut=jnp.asarray(CUTS[t]), bonus=None, grads=g_v, value_grads=g_v,
                                 policy_grads=g_pi)
        assert_close(out, {k: critic[t][0][k] + actor[t][0][k] for k in SHAPES}, f"update at step {t}")

def test_update_rule_names_and_refusals():
    """``update_rule`` builds every named rule; an unknown name and ``every_k > 1`` under a per-environment rule are
    refused with the option named."""
    for name in T.STEP_RULES:
        rule = T.update_rule(name, lr=0.5, decay=GAMMA_LAMBDA, envs=E)
        out, _ = rule.update(jax.tree.map(jnp.asarray, GRADS[0]), rule.init(PARAMS), PARAMS,
                             delta=jnp.zeros(E), cut=jnp.zeros(E, bool), bonus=None, grads=GRADS[0])
        assert jax.tree.structure(out) == jax.tree.structure(PARAMS), name
    with pytest.raises(ValueError, match="optimizer must be one of"):
        T.update_rule("rmsprop", lr=0.5, decay=0.5, envs=E)
    with pytest.raises(ValueError, match="optimizer must be one of adam, sgd or obgd"):
        T.update_rule("intentional", lr=0.5, decay=0.5, envs=E, correction=T.td_ascent())
    with pytest.raises(ValueError, match="update_every must be 1 under optimizer 'intentional'"):
        T.update_rule("intentional", lr=0.5, decay=0.5, envs=E, every_k=2)


@pytest.mark.parametrize("decay", [GAMMA_LAMBDA, 0.99 * 0.8])
def test_update_rule_builds_the_intentional_rule_with_the_runs_decay(decay):
    """``update_rule("intentional", lr=eta, decay=gamma * lambda)`` is the traces and the intentional step of
    ``eta`` with that decay in both (the traces' and sigma's running mean, rate ``1 - decay``) and the step's own
    constants (beta2 0.999, the clip at 20 RMSs of rate 1 - 0.9998, eps 1e-8), every step against the oracle, no
    bonus. The two decays: 0.45, and 0.792 (Farr et al.'s gamma 0.99, lambda 0.8), near intentional's default 0.8
    but not it. [guards: ``intentional(lr)`` built without the decay (its default 0.8 for sigma); the traces'
    decay not the run's; eta not ``lr``]"""
    eta = 0.3
    rule = T.update_rule("intentional", lr=eta, decay=decay, envs=E)
    outs, states = run(rule)
    rows = oracle_intentional(DELTAS, 20.0, eta, decay, 0.999, 0.9998, 1e-8, bonus=None)
    for t, (want, _) in enumerate(rows):
        assert_close(outs[t], want, f"update at step {t}")
        (traces,) = T.eligibility(states[t])
        assert_close(traces, oracle_traces(decay)[t][1], f"traces after step {t}")
    other = oracle_intentional(DELTAS, 20.0, eta, 0.8, 0.999, 0.9998, 1e-8, bonus=None)
    assert np.abs(leaves(other[2][0])[0] - leaves(rows[2][0])[0]).max() > 1e-6  # the case tells the decays apart


@pytest.mark.parametrize("kappa", [0.5, 8.0])
def test_update_rule_gives_obgd_and_adaptive_obgd_the_runs_kappa(kappa):
    """``update_rule("obgd" | "adaptive_obgd", lr, decay, kappa=...)``: each step against its oracle, with a kappa
    other than the default 2 where the bound binds at some steps (checked). [guards: ``kappa`` not passed on to
    either rule (its default 2 used)]"""
    lr = 0.6
    outs, _ = run(T.update_rule("obgd", lr=lr, decay=GAMMA_LAMBDA, envs=E, kappa=kappa))
    binds = []
    for t in range(STEPS):
        u, m = oracle_ascent(t)
        binds.append(lr * kappa * m > 1)
        assert_close(outs[t], {k: lr / max(lr * kappa * m, 1.0) * v for k, v in u.items()}, f"obgd step {t}")
    assert any(binds)
    outs, _ = run(T.update_rule("adaptive_obgd", lr=lr, decay=GAMMA_LAMBDA, envs=E, kappa=kappa))
    rows = oracle_adaptive(lr, kappa, 0.999, 1e-8, None)
    for t, (want, _, _) in enumerate(rows):
        assert_close(outs[t], want, f"adaptive_obgd step {t}")
    assert any(bound for _, _, bound in rows)


@pytest.mark.parametrize("name", sorted(T.STEP_RULES))
def test_every_rule_keeps_float32_parameters_float32_where_jax_has_x64_on(name):
    """A float32 run in a process with x64 on (the tests' own, or a user's): each rule's updates and state keep
    their dtypes over a few steps, as ``lax.scan``'s carry requires. [guards: a Python float raised to an int32
    count (a bias correction) is float64 under x64, and turned intentional's statistics float64: ``rtrl rl
    --optimizer intentional`` failed in such a process]"""
    assert jax.config.jax_enable_x64
    params = {k: jnp.zeros(s, jnp.float32) for k, s in SHAPES.items()}
    rule = T.update_rule(name, lr=0.1, decay=GAMMA_LAMBDA, envs=E)
    state = rule.init(params)
    dtypes = jax.tree.map(lambda a: a.dtype, state)
    update = jax.jit(lambda g, state, params, **k: rule.update(g, state, params, grads=g, **k))  # traced, as in a run
    for t in range(STEPS):
        g = {k: jnp.asarray(v, jnp.float32) for k, v in GRADS[t].items()}
        updates, state = update(g, state, params, delta=jnp.asarray(DELTAS[t], jnp.float32),
                                cut=jnp.asarray(CUTS[t]), done=jnp.asarray(CUTS[t]))
        assert jax.tree.map(lambda a: a.dtype, state) == dtypes, f"state at step {t}"
        assert all(u.dtype == jnp.float32 for u in jax.tree.leaves(updates)), f"updates at step {t}"
        params = optax.apply_updates(params, updates)


def test_signed_entropy_adds_the_entropy_trace_signed_by_each_steps_own_td_error_by_hand():
    """One environment, one parameter, ``z`` zero so the output is ``coef * y_{t-1}``: grad H_t = 1, 2, 4, 8,
    the TD errors delivered one call later (call t brings delta_{t-1}) 0, +0.5, -3, +2, the trace cut before step 2,
    decay 0.5, coef 0.1. By hand: y_0 = sign(+0.5) 1 = 1; y_1 = 0.5 y_0 + sign(-3) 2 = -1.5; y_2 = 0 (cut) +
    sign(+2) 4 = 4; outputs 0, 0.1, -0.15, 0.4. [guards: the sign of the call's own TD error given to its own
    grad H (the previous step's); the cut applied one step late; the coefficient applied twice or not at all]"""
    rule = T.signed_entropy(0.1, 0.5, 1)
    params = {"b": jnp.zeros((1,))}
    state = rule.init(params)
    outs = []
    for h, delta, cut in zip([1.0, 2.0, 4.0, 8.0], [0.0, 0.5, -3.0, 2.0], [False, False, True, False], strict=True):
        out, state = rule.update({"b": jnp.zeros((1, 1))}, state, params, delta=jnp.array([delta]),
                                 cut=jnp.array([cut]), entropy_grads={"b": jnp.full((1, 1), h)})
        outs.append(float(out["b"][0, 0]))
    np.testing.assert_allclose(outs, [0.0, 0.1, -0.15, 0.4], rtol=1e-12, atol=1e-15)


def test_signed_entropy_after_the_traces_is_the_trace_of_the_gradient_plus_the_signed_entropy():
    """``eligibility_traces`` then ``signed_entropy``: the output at call t is the trace ``z'_{t-1}`` of
    ``g_k + coef sign(delta_k) grad H_k`` (Farr et al.'s actor gradient), ``delta_k`` the TD error of step k, which
    call k + 1 brings; per environment, cut as the traces are. ``update_rule`` with ``signed`` builds that chain.
    [guards: the sign of another step's error; one environment's sign for both; the member missing from the rule]"""
    coef = 0.3
    H = [{k: RNG.normal(size=(E, *s)) for k, s in SHAPES.items()} for _ in range(STEPS)]
    signed = [{k: GRADS[t][k] + coef * np.sign(DELTAS[t + 1]).reshape((E,) + (1,) * len(s)) * H[t][k]
               for k, s in SHAPES.items()} if t + 1 < STEPS else GRADS[t] for t in range(STEPS)]
    want = oracle_traces(grads=signed)
    rule = optax.chain(T.eligibility_traces(GAMMA_LAMBDA, E), T.signed_entropy(coef, GAMMA_LAMBDA, E))
    sgd = T.update_rule("sgd", lr=1.0, decay=GAMMA_LAMBDA, envs=E, clip=None, signed=coef)
    state, sgd_state = rule.init(PARAMS), sgd.init(PARAMS)
    for t in range(STEPS):
        g, h = (jax.tree.map(jnp.asarray, a[t]) for a in (GRADS, H))
        args = {"delta": jnp.asarray(DELTAS[t]), "cut": jnp.asarray(CUTS[t]), "entropy_grads": h}
        out, state = rule.update(g, state, PARAMS, **args)
        assert_close(out, want[t][0], f"trace at step {t}")
        step, sgd_state = sgd.update(g, sgd_state, PARAMS, bonus=None, grads=g, **args)
        ascent = {k: sum(DELTAS[t][e] * want[t][0][k][e] for e in range(E)) / E for k in SHAPES}
        assert_close(step, ascent, f"sgd's step at step {t}")


def test_intentional_signed_reads_the_signed_entropy_term_in_its_statistics_as_the_anchors_actor():
    """Farr et al.'s actor optimiser is handed ``g_k + coef sign(delta_k) grad H_k`` both as the trace's entry and
    as the gradient its statistics read. ``intentional(signed=coef)`` after the traces and ``signed_entropy``: every
    step's update is the oracle's intentional step whose traces and statistics both take that signed gradient
    (``delta_k`` the error call k + 1 brings), and the plain rule's differs; ``update_rule`` and
    ``split_intentional`` build it with ``signed_statistics``, and refuse it without ``signed`` or under another
    optimizer. [guards: the statistics of the unsigned g (the plain rule); the sign of the call's own error given to
    the pending gradient; the first call taking zeros into the statistics; another step's grad H]"""
    coef, eta, beta2, beta_clip, eps = 0.3, 0.5, 0.9, 0.8, 1e-8
    H = [{k: RNG.normal(size=(E, *s)) for k, s in SHAPES.items()} for _ in range(STEPS)]
    signed = [{k: GRADS[t][k] + coef * np.sign(DELTAS[t + 1]).reshape((E,) + (1,) * len(s)) * H[t][k]
               for k, s in SHAPES.items()} if t + 1 < STEPS else GRADS[t] for t in range(STEPS)]
    want = oracle_intentional(DELTAS, 20.0, eta, GAMMA_LAMBDA, beta2, beta_clip, eps, bonus=None, grads=signed)

    def rule(statistics):
        return optax.chain(T.eligibility_traces(GAMMA_LAMBDA, E), T.signed_entropy(coef, GAMMA_LAMBDA, E),
                           T.intentional(eta, GAMMA_LAMBDA, beta2, beta_clip, 20.0, eps,
                                         signed=coef if statistics else 0.0, envs=E))

    def updates(rule, **options):
        state, outs = rule.init(PARAMS), []
        for t in range(STEPS):
            g, h = (jax.tree.map(jnp.asarray, a[t]) for a in (GRADS, H))
            out, state = rule.update(g, state, PARAMS, delta=jnp.asarray(DELTAS[t]), cut=jnp.asarray(CUTS[t]),
                                     entropy_grads=h, grads=g, **options)
            outs.append(out)
        return outs

    ours, plain = updates(rule(True)), updates(rule(False))
    for t in range(STEPS):
        assert_close(ours[t], want[t][0], f"update at step {t}")
    assert not np.allclose(leaves(plain[3])[0], leaves(ours[3])[0], rtol=1e-6)  # the statistics matter
    built = T.update_rule("intentional", lr=eta, decay=GAMMA_LAMBDA, envs=E, signed=coef, signed_statistics=True)
    assert jax.tree.structure(built.init(PARAMS)) == jax.tree.structure(rule(True).init(PARAMS))
    split = T.split_intentional(eta, 0.5, GAMMA_LAMBDA, E, signed=coef, signed_statistics=True)
    assert isinstance(split.init(PARAMS).actor[-1], T.SignedStatisticsState)
    assert isinstance(T.split_intentional(eta, 0.5, GAMMA_LAMBDA, E, signed=coef).init(PARAMS).actor[-1],
                      T.IntentionalState)
    for name, args in (("intentional", {}), ("adam", {"signed": coef})):
        with pytest.raises(ValueError, match="signed_statistics needs optimizer 'intentional' and signed > 0"):
            T.update_rule(name, lr=0.5, decay=GAMMA_LAMBDA, envs=E, signed_statistics=True, **args)


def test_split_intentional_on_the_leaves_each_gradient_reaches_steps_as_on_every_leaf():
    """``reaches``: the value's gradient reaches ``b`` only, the policy's both leaves (its ``W`` and ``b``); with
    the value's ``W`` zero, the rule that keeps the critic's traces, statistics and step on ``b`` alone gives the
    updates of the rule that keeps them on every leaf, every step (1e-12, float64), the signed entropy and the
    bonus restricted with the actor; the critic's state holds no ``W``. [guards: the sides' leaves swapped (the
    policy's ``W`` then dropped); an extra argument shaped like the parameters left whole (a tree mismatch); the
    bonus given to the critic too; a leaf neither side keeps left out of the update]"""
    decay, zero_w = GAMMA_LAMBDA, lambda g: {**g, "W": np.zeros_like(g["W"])}

    def reaches(params):
        return {"W": False, "b": True}, {"W": True, "b": True}

    every = T.split_intentional(0.05, 0.5, decay, E, signed=0.2)
    apart = T.split_intentional(0.05, 0.5, decay, E, signed=0.2, reaches=reaches)
    full, own = every.init(PARAMS), apart.init(PARAMS)
    for t in range(STEPS):
        g_v, g_pi = jax.tree.map(jnp.asarray, zero_w(GRADS[t])), jax.tree.map(jnp.asarray, GRADS_PI[t])
        extra = dict(delta=jnp.asarray(DELTAS[t]), cut=jnp.asarray(CUTS[t]), bonus=jax.tree.map(jnp.asarray, BONUS),
                     value_grads=g_v, policy_grads=g_pi, entropy_grads=jax.tree.map(lambda a: 0.5 * a, g_pi))
        want, full = every.update(g_v, full, PARAMS, **extra)
        out, own = apart.update(g_v, own, PARAMS, **extra)
        assert_close(out, want, f"update at step {t}")
    critic, actor = T.eligibility(own)
    assert isinstance(critic["W"], optax.MaskedNode) and actor["W"].shape == (E, 2, 3)
    neither = T.split_intentional(0.05, 0.5, decay, E, reaches=lambda p: ({"W": False, "b": True},) * 2)
    state = neither.init(PARAMS)
    grads = {"W": jnp.zeros((E, 2, 3)), "b": jnp.asarray(GRADS[1]["b"])}
    step = dict(delta=jnp.asarray(DELTAS[1]), cut=jnp.asarray(CUTS[1]), value_grads=grads, policy_grads=grads)
    for _ in range(2):  # the first call's output is the zero trace before it
        out, state = neither.update(None, state, PARAMS, **step)
    assert out["W"].shape == (2, 3) and not np.asarray(out["W"]).any() and np.asarray(out["b"]).any()
    with pytest.raises(ValueError, match="split_intentional with reaches needs params"):
        neither.update(None, state, None, **step)
