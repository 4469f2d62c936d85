"""Online RL (rtrl.rl) without gymnax: the agent's per-step gradients against BPTT, the T-maze's rules, the
wrappers, bad input, determinism and resume."""

import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import rtrl
from oracle import EXACT_TOL
from rtrl.online import zero_where
from rtrl.rl import ActorCritic, EpisodeStats, Masked, RLConfig, TMaze, make, train
from rtrl.rl.agent import heads, objectives
from rtrl.rl.envs.tmaze import FORWARD, LEFT, RIGHT, TMazeState
from rtrl.rl.loop import runner

T, E = 14, 2


def stream(cell, seed):
    """Inputs (T, E, D) and episode ends (T, E): each environment's episodes end at different steps."""
    xs = jax.random.normal(jax.random.PRNGKey(seed), (T, E, cell.input_size), jnp.float64)
    done = np.zeros((T, E), bool)
    done[[3, 9], 0] = True
    done[[5, 6, 11], 1] = True
    return xs, jnp.asarray(done)


def perturbed_params(agent, seed):
    """Initial parameters with every array non-zero and the policy head at full scale (so every objective
    reaches the torso)."""
    params = agent.init(jax.random.PRNGKey(seed), jnp.float64)
    leaves, tree = jax.tree.flatten(params)
    keys = jax.random.split(jax.random.PRNGKey(seed + 1), len(leaves))
    return jax.tree.unflatten(tree, [a + 0.3 * jax.random.normal(k, a.shape, a.dtype)
                                     for k, a in zip(keys, leaves, strict=True)])


def online_grads(agent, params, xs, done):
    """The agent's per-step (action, grads) over the stream, parameters held fixed, resets where done."""

    def body(memory, inputs):
        x, d, key = inputs
        action, _, grads, memory, _ = jax.vmap(agent.act_grads, in_axes=(None, 0, 0, 0))(params, memory, x,
                                                                                jax.random.split(key, E))
        return agent.torso.reset(memory, d), (action, grads)

    keys = jax.random.split(jax.random.PRNGKey(7), T)
    return jax.jit(lambda m: lax.scan(body, m, (xs, done, keys))[1])(agent.torso.memory(params, E))


def stream_bptt(cell):
    """The oracle, compiled once per cell: jax.jacrev, through lax.scan over the whole stream, of every step's three
    objectives. Step t's objective sees the carry ``window`` steps back as a constant (rolling truncated BPTT; a
    window longer than the stream is BPTT)."""

    def objective(p, t, xs, done, actions, window):
        def body(carry, inputs):
            s, x, reset_before = inputs
            carry = jax.tree.map(lambda c: jnp.where(s == t - window + 1, lax.stop_gradient(c), c), carry)
            carry, h = cell.step(p["torso"], zero_where(reset_before, carry), x)
            return carry, h

        reset_before = jnp.concatenate([jnp.zeros((1, E), bool), done[:-1]])
        _, hs = lax.scan(body, cell.initial_carry((E,), jnp.float64), (jnp.arange(T), xs, reset_before))
        logits, value = jax.vmap(heads, in_axes=(None, 0))(p, hs[t])
        return jnp.concatenate([value[:, None], jax.vmap(objectives)(logits, actions[t])], axis=1)  # (E, 3)

    per_step = jax.jit(jax.vmap(jax.jacrev(objective), in_axes=(None, 0, None, None, None, None)))
    return lambda params, xs, done, actions, window=T + 1: per_step(params, jnp.arange(T), xs, done, actions,
                                                                    window)  # (T, E, 3, ...)


def worst(online, reference):
    """``rtrl.compare.relative_error`` of every step's, environment's and objective's gradient, the largest."""

    def leaf(g, r):
        g, r = (np.asarray(a).reshape(T * E * 3, -1) for a in (g, r))
        return (np.linalg.norm(g - r, axis=1) / np.maximum(np.linalg.norm(r, axis=1), 1e-300)).max()

    return max(jax.tree.leaves(jax.tree.map(leaf, online, reference)))


@pytest.mark.parametrize("cell, method", [
    (rtrl.cells.Elman(3, 5), "rtrl"),
    (rtrl.cells.GRU(3, 4), "rtrl"),
    (rtrl.cells.IIR2(3, 4), "closed_form"),
    (rtrl.cells.LRU(3, 4), "auto"),  # the torsos of the field (issue 24): `auto` must find exact traces for each
    (rtrl.cells.RTU(3, 4), "auto"),
    (rtrl.cells.network.lru_network(input_size=3, hidden_size=4), "auto"),
])
def test_exact_per_step_gradients_equal_bptt_across_resets(cell, method):
    agent = ActorCritic(cell, 3, method)
    params = perturbed_params(agent, 0)
    xs, done = stream(cell, 1)
    actions, grads = online_grads(agent, params, xs, done)
    assert worst(grads, stream_bptt(cell)(params, xs, done, actions)) <= EXACT_TOL


def test_rolling_tbptt_sees_exactly_its_window():
    cell = rtrl.cells.Elman(3, 5)
    xs, done = stream(cell, 2)
    bptt = stream_bptt(cell)
    for K, seed in ((3, 3), (T, 4)):
        agent = ActorCritic(cell, 3, "tbptt", truncation=K)
        params = perturbed_params(agent, seed)
        actions, grads = online_grads(agent, params, xs, done)
        assert worst(grads, bptt(params, xs, done, actions, K)) <= EXACT_TOL
        # ... which is BPTT only where the window holds the whole episode so far (all of it when K = T)
        assert (worst(grads, bptt(params, xs, done, actions)) <= EXACT_TOL) == (K == T)


def test_fidelity_check_is_one_for_exact_rtrl_and_below_for_approximations():
    """With a vanishing step size the parameters hold still, so exact RTRL's online gradients are BPTT's; an
    approximation's are not. The check runs at every step, over episodes of several lengths."""
    base = RLConfig(env="tmaze", env_args=(("length", 3),), hidden=4, envs=2, steps=24, record_every=24,
                    fidelity_every=1, lr=1e-12, dtype="float64", seed=3)
    (rec,) = train(base)[1]
    assert rec["cos_value"] > 1 - 1e-9 and rec["cos_policy"] > 1 - 1e-9
    (rec,) = train(RLConfig(**{**base.__dict__, "method": "eprop"}))[1]
    assert rec["cos_value"] < 0.999


# -- the T-maze, one rule at a time ------------------------------------------------------------------------------

MAZE = TMaze(length=3)


def at(position, cue=LEFT, time=0):
    return TMazeState(jnp.int32(position), jnp.int32(cue), jnp.int32(time))


def test_tmaze_reset_shows_one_of_both_cues_at_the_start():
    cues = set()
    for seed in range(16):
        obs, state = MAZE.reset(jax.random.PRNGKey(seed))
        assert int(state.position) == 0 and int(state.time) == 0
        expected = [1.0, 0.0, 0.0] if int(state.cue) == LEFT else [0.0, 1.0, 0.0]
        np.testing.assert_array_equal(obs, expected)
        cues.add(int(state.cue))
    assert cues == {LEFT, RIGHT}


def test_tmaze_forward_moves_along_the_corridor_which_shows_nothing():
    obs, state, reward, done, _ = MAZE.transition(None, at(0, RIGHT), FORWARD)
    assert int(state.position) == 1 and float(reward) == 0 and not done
    np.testing.assert_array_equal(obs, [0.0, 0.0, 0.0])


def test_tmaze_a_turn_in_the_corridor_stays_put():
    for action in (LEFT, RIGHT):
        obs, state, reward, done, _ = MAZE.transition(None, at(1), action)
        assert int(state.position) == 1 and int(state.time) == 1 and float(reward) == 0 and not done


def test_tmaze_junction_is_observed_and_forward_there_stays():
    obs, state, reward, done, _ = MAZE.transition(None, at(2), FORWARD)
    assert int(state.position) == 3
    np.testing.assert_array_equal(obs, [0.0, 0.0, 1.0])
    obs, state, reward, done, _ = MAZE.transition(None, state, FORWARD)
    assert int(state.position) == 3 and float(reward) == 0 and not done


@pytest.mark.parametrize("cue", [LEFT, RIGHT])
def test_tmaze_turn_at_the_junction_ends_with_the_cue_deciding_the_reward(cue):
    for action, expected in ((cue, 1.0), (1 - cue, -1.0)):
        _, _, reward, done, _ = MAZE.transition(None, at(3, cue), action)
        assert float(reward) == expected and bool(done)


def test_tmaze_time_limit_ends_the_episode_without_reward():
    assert MAZE.max_steps == 16 and TMaze(length=3, max_steps=5).max_steps == 5
    _, _, reward, done, _ = MAZE.transition(None, at(1, time=14), LEFT)
    assert not done
    _, _, reward, done, _ = MAZE.transition(None, at(1, time=15), LEFT)
    assert bool(done) and float(reward) == 0


def test_step_resets_where_the_episode_ends():
    obs, state, reward, done, *_ = MAZE.step(jax.random.PRNGKey(0), at(3, RIGHT, time=7), RIGHT)
    assert bool(done) and float(reward) == 1
    assert int(state.position) == 0 and int(state.time) == 0 and obs[:2].sum() == 1


def test_episode_stats_and_masking():
    env = EpisodeStats(Masked(TMaze(length=1), keep=(2, 0)))
    assert env.obs_size == 2 and env.num_actions == 3 and env.max_steps == 8
    obs, state = env.reset(jax.random.PRNGKey(1))
    cue = int(state.env.cue)
    np.testing.assert_array_equal(obs, [0.0, 1.0 - cue])
    obs, state, _, done, *_ = env.step(jax.random.PRNGKey(2), state, FORWARD)
    np.testing.assert_array_equal(obs, [1.0, 0.0])
    assert not done and float(state.episode_return) == 0 and int(state.episode_length) == 1
    _, state, _, done, *_ = env.step(jax.random.PRNGKey(3), state, 1 - cue)
    assert bool(done) and float(state.last_return) == -1 and int(state.last_length) == 2
    assert int(state.episode_length) == 0 and float(state.episode_return) == 0


# -- bad input ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("build, words", [
    (lambda: make("maze"), "unknown environment 'maze'"),
    (lambda: make("tmaze", corridor=3), "no option 'corridor'"),
    (lambda: make("tmaze", length=0), "length must be a positive integer"),
    (lambda: RLConfig(env="maze"), "env must be one of"),
    (lambda: RLConfig(envs=0), "envs must be a positive integer"),
    (lambda: RLConfig(optimizer="rmsprop"), "optimizer must be one of"),
    (lambda: RLConfig(lam=1.5), "lam must be a number in [0, 1]"),
    (lambda: RLConfig(cell="lstm"), "cell must be one of"),
    (lambda: train(RLConfig(env_args=(("width", 2),), steps=1)), "no option 'width'"),
    (lambda: train(RLConfig(method="bptt", steps=1)), "needs whole episodes"),
    (lambda: train(RLConfig(method="diagonal", steps=1)), "diagonal"),
    (lambda: train(RLConfig(method="closed_form", cell="gru", steps=1)), "closed"),
    (lambda: train(RLConfig(method="rtlr", steps=1)), "method must be one of"),
    (lambda: ActorCritic(rtrl.cells.Elman(3, 4), 3, "tbptt", truncation=0), "truncation must be"),
    (lambda: Masked(TMaze(), keep=(3,)), "keep must be"),
])
def test_bad_input_is_a_clear_value_error(build, words):
    with pytest.raises(ValueError) as error:
        build()
    assert words in str(error.value)


# -- runs --------------------------------------------------------------------------------------------------------

SMALL = RLConfig(env="tmaze", env_args=(("length", 2),), hidden=8, envs=4, steps=60, record_every=20, lam=0.8,
                 fidelity_every=7)


def test_same_seed_same_run_and_resume_is_bit_exact():
    state, records = train(SMALL)
    again, records_again = train(SMALL)
    strip = lambda recs: [{k: v for k, v in r.items() if k != "wall_s"} for r in recs]  # noqa: E731
    assert strip(records) == strip(records_again)
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(again), strict=True))
    half, first = train(RLConfig(**{**SMALL.__dict__, "steps": 40}))
    resumed, rest = train(SMALL, half)
    assert strip(first + rest) == strip(records)
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(resumed), strict=True))
    other = train(RLConfig(**{**SMALL.__dict__, "seed": 1}))[0]
    assert not np.array_equal(other.params["torso"]["W"], state.params["torso"]["W"])
    assert [r["step"] for r in records] == [20, 40, 60] and all(r["episodes"] > 0 for r in records)


@pytest.mark.parametrize("method", ["rtrl", "tbptt"])
def test_agent_learns_the_short_tmaze(method):
    """A cue two cells back: online RTRL and a window covering the corridor both learn it."""
    config = RLConfig(env="tmaze", env_args=(("length", 2),), hidden=8, envs=8, steps=2000, record_every=500,
                      method=method, lr=3e-3, seed=0, **({"truncation": 4} if method == "tbptt" else {}))
    records = train(config)[1]
    assert records[-1]["return"] > 0.6, records


def test_update_every_k_changes_the_parameters_at_every_kth_step_only():
    config = RLConfig(**{**SMALL.__dict__, "update_every": 3, "fidelity_every": 0})
    run = runner(config)
    state = run.init(0)
    changed = []
    for _ in range(7):
        before = state.params
        state = run.advance(state, 1)
        changed.append(not np.array_equal(before["value"]["W"], state.params["value"]["W"]))
    assert changed == [False, False, True, False, False, True, False]


def test_importing_rtrl_rl_does_not_import_gymnax():
    code = "import sys, rtrl, rtrl.rl; rtrl.rl.make('tmaze'); assert 'gymnax' not in sys.modules, 'gymnax imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_health_figures_are_step_means_of_what_the_step_saw():
    """Two steps by hand: the record's health figures are means over the steps (td_rms the root of the mean
    square, the first step's counted as zero: it has no TD error yet); the parameter norm against its definition,
    the entropy within (0, log A]; ``per_env_norm`` on a hand-made tree."""
    from rtrl.rl.loop import HEALTH, cleared, per_env_norm, record

    run = runner(RLConfig(**{**SMALL.__dict__, "fidelity_every": 0, "health_every": 1}))
    state = cleared(run.init(0))
    norms = []
    for _ in range(2):
        norms.append(float(jnp.sqrt(sum((p ** 2).sum() for p in jax.tree.leaves(state.params)))))
        state = run.advance(state, 1)
        if len(norms) == 1:
            assert float(state.tally.health[HEALTH.index("td_rms")]) == 0.0
    rec = record(state)
    assert rec.keys() >= set(HEALTH)
    assert rec["param_norm"] == pytest.approx(np.mean(norms), rel=1e-6)
    assert 0 < rec["entropy"] <= np.log(3) + 1e-6  # TMaze's three actions
    assert rec["td_rms"] ** 2 == pytest.approx(float(state.tally.health[HEALTH.index("td_rms")]) / 2, rel=1e-6)
    E = 3
    tree = {"a": jnp.arange(2 * E, dtype=jnp.float32).reshape(E, 2), "b": jnp.ones((E,))}
    np.testing.assert_allclose(per_env_norm(tree, E), [np.sqrt(0 + 1 + 1), np.sqrt(4 + 9 + 1), np.sqrt(16 + 25 + 1)])


@pytest.mark.parametrize("options", [{}, {"optimizer": "intentional", "lr": 0.5},
                                     {"optimizer": "intentional", "lr": 0.05, "critic_lr": 0.5},
                                     {"optimizer": "obgd", "lr": 1.0}, {"algorithm": "qrc", "epsilon": 0.1}],
                         ids=["adam", "intentional", "split-intentional", "obgd", "qrc"])
def test_update_norm_is_the_norm_of_what_the_step_added_to_the_parameters(options):
    """Under every step rule (QRC's correction and the intentional steps included, which an ascent recomputed
    outside the chain would miss): three steps by hand in float64, the record's ``update_norm`` the mean over them
    of ``||theta_{t+1} - theta_t||``."""
    from rtrl.rl.loop import cleared, record

    run = runner(RLConfig(**{**SMALL.__dict__, "fidelity_every": 0, "health_every": 1, "dtype": "float64",
                             **options}))
    state = cleared(run.init(0))
    norms = []
    for _ in range(3):
        before = state.params
        state = run.advance(state, 1)
        norms.append(float(jnp.sqrt(sum(((a - b) ** 2).sum() for a, b in zip(jax.tree.leaves(state.params),
                                                                            jax.tree.leaves(before), strict=True)))))
    assert max(norms) > 0  # the steps did move the parameters
    assert record(state)["update_norm"] == pytest.approx(np.mean(norms), rel=1e-9)


def test_a_health_figure_that_overflows_stops_the_run_naming_it():
    from rtrl.driver import Diverged
    from rtrl.rl.loop import HEALTH, cleared, record

    state = cleared(runner(RLConfig(**{**SMALL.__dict__, "fidelity_every": 0})).init(0))
    health = state.tally.health.at[HEALTH.index("value_scale")].set(jnp.inf)
    with pytest.raises(Diverged, match="value_scale became inf"):
        record(state._replace(tally=state.tally._replace(health=health, steps=jnp.ones((), jnp.int32))))
