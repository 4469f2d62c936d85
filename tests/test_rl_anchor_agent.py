"""The pieces of Farr et al.'s MuJoCo agent as options of the actor-critics: encoder blocks before the torso
(``encoder_blocks``; their gradient cut where it reaches the torso's state, as in Farr et al.'s code) against a BPTT
oracle written out here, the entropy's per-environment gradients that ``entropy_sign`` td hands the update rule, and
the refusals. The update rule's side of ``entropy_sign`` td (``rtrl.rl.transforms.signed_entropy``) is pinned in
tests/test_rl_transforms.py on a hand-checked case."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rtrl.cells import RTU, MinGRU
from rtrl.config import OptionError
from rtrl.rl.algorithms.ac import ActorCritic
from rtrl.rl.algorithms.gaussian import GaussianActorCritic
from rtrl.rl.config import RLConfig

D, M, T = 3, 4, 5  # observation size, block width, steps


def oracle_blocks(encoder, x):
    """The blocks written out: ``a = x W + b``, ``y = (a - mean a) / sqrt(var a + 1e-5)``, ``max(y, 0.01 y)``."""
    for layer in encoder:
        a = x @ layer["W"] + layer["b"]
        mean = a.mean(-1, keepdims=True)
        y = (a - mean) / jnp.sqrt(((a - mean) ** 2).mean(-1, keepdims=True) + 1e-5)
        x = jnp.maximum(y, 0.01 * y)
    return x


def oracle_value(cell, params, xs, cut: bool):
    """``v_T`` by BPTT: the blocks on every input, the cell stepped over them with ``lax.scan`` from zero, the value
    head on the last output; with ``cut`` the blocks' outputs of the earlier steps held constant (what reaches the
    state through them carries no gradient to the blocks), the last step's live."""
    e = oracle_blocks(params["encoder"], xs)
    if cut:
        e = jnp.concatenate([jax.lax.stop_gradient(e[:-1]), e[-1:]])

    def body(carry, x):
        return cell.step(params["torso"], carry, x)

    h = jax.lax.scan(body, cell.initial_carry((), e.dtype), e)[1][-1]
    return (h @ params["value"]["W"] + params["value"]["b"])[0]


def online_value_grads(agent, params, xs):
    """The agent's online gradient of ``v_T`` after stepping through ``xs`` from a fresh state."""
    memory, step = agent.torso.learner.init(params["torso"]), jax.jit(agent.objective_grads)
    for x in xs:
        _, grads, memory, _ = step(params, memory, x, jnp.asarray(0))
    return jax.tree.map(lambda g: g[0], grads)


def relative_error(a, b):
    a, b = (np.concatenate([np.ravel(x) for x in jax.tree.leaves(t)]) for t in (a, b))
    return np.linalg.norm(a - b) / np.linalg.norm(b)


@pytest.mark.parametrize("cell", [RTU(M, 6, output_map="concat"), MinGRU(M, 3)])
def test_encoder_blocks_are_cut_at_the_torso_and_everything_else_is_exact(cell):
    """Two blocks before an element-wise torso, float64: the torso's and the heads' online gradients equal BPTT's
    (<= 1e-9 relative), the blocks' equal BPTT's with the earlier steps' block outputs held constant (Farr et al.'s
    cut, the anchor's approximation), and differ from the full BPTT gradient (the cut is real). [guards: the blocks
    skipped; the torso stepped on the raw observation; a block's gradient counted through the state]"""
    agent = ActorCritic(cell, 2, "auto", encoder_blocks=2, encoder_width=M, observations=D)
    params = agent.init(jax.random.PRNGKey(0), jnp.float64)
    assert [layer["W"].shape for layer in params["encoder"]] == [(D, M), (M, M)]
    xs = jax.random.normal(jax.random.PRNGKey(1), (T, D), jnp.float64)
    online = online_value_grads(agent, params, xs)
    cut, full = jax.jit(lambda p: [jax.grad(lambda q, c=c: oracle_value(cell, q, xs, cut=c))(p)
                                   for c in (True, False)])(params)
    for name in ("torso", "value"):
        assert relative_error(online[name], full[name]) <= 1e-9, name
    assert relative_error(online["encoder"], cut["encoder"]) <= 1e-9
    assert relative_error(online["encoder"], full["encoder"]) > 1e-3
    np.testing.assert_array_equal(jax.tree.leaves(online["policy"])[0], 0.0)  # v_T does not read the policy


def test_encoder_blocks_initialise_sparse_with_zero_biases_and_leave_the_rest_as_before():
    """Each unit of a block reads ceil(0.9 D) zero weights (all but one where D is small), its bias is 0, and the
    parameters besides the blocks are those of the agent without them."""
    cell = MinGRU(M, 3)
    params = ActorCritic(cell, 2, encoder_blocks=2, encoder_width=M, observations=20).init(jax.random.PRNGKey(3))
    plain = ActorCritic(cell, 2).init(jax.random.PRNGKey(3))
    zeros = (np.asarray(params["encoder"][0]["W"]) == 0).sum(axis=0)
    np.testing.assert_array_equal(zeros, 18)  # ceil(0.9 * 20)
    np.testing.assert_array_equal((np.asarray(params["encoder"][1]["W"]) == 0).sum(axis=0), 3)  # M - 1 of M = 4
    assert all(not np.asarray(layer["b"]).any() for layer in params["encoder"])
    for a, b in zip(jax.tree.leaves({k: v for k, v in params.items() if k != "encoder"}), jax.tree.leaves(plain),
                    strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("state_std, std_map, sign", [(False, "exp", "td"), (True, "exp", "td"),
                                                     (True, "softplus", "td"), (True, "softplus", "td+statistics")])
def test_entropy_sign_td_hands_each_environments_entropy_gradient_to_the_rule(state_std, std_map, sign):
    """With ``entropy_sign`` td the step has no bonus and gives, per environment, the gradient of that
    environment's policy entropy (the rule signs it by the step's TD error), equal to BPTT's (one step from a fresh
    state); with ``positive`` the bonus is ``entropy`` times their mean, as before. [guards: the mean given as each
    environment's; the bonus left on besides]"""
    E = 3
    cell = MinGRU(D, 4)
    signed = GaussianActorCritic(cell, 2, state_std=state_std, entropy=0.2, entropy_sign=sign, std_map=std_map)
    plain = GaussianActorCritic(cell, 2, state_std=state_std, entropy=0.2, std_map=std_map)
    params = signed.init(jax.random.PRNGKey(0), jnp.float64)
    x = jax.random.normal(jax.random.PRNGKey(1), (E, D), jnp.float64)
    memory = signed.torso.memory(params, E)
    step = jax.jit(signed.stepped)(params, memory, x, jax.random.PRNGKey(2), jnp.asarray(0))
    assert step.bonus is None
    bptt = jax.jit(jax.vmap(lambda xe: signed.bptt_grads(params, xe[None], jnp.asarray(0), jnp.zeros(2))))(x)
    want = jax.tree.map(lambda g: g[:, 2], bptt)
    assert relative_error(step.extra["entropy_grads"], want) <= 1e-9
    bonus = jax.jit(plain.stepped)(params, memory, x, jax.random.PRNGKey(2), jnp.asarray(0)).bonus
    assert relative_error(bonus, jax.tree.map(lambda g: 0.2 * g.mean(0), want)) <= 1e-9


def test_categorical_entropy_sign_td_gives_per_environment_gradients():
    """The categorical actor-critic: ``entropy_grads`` per environment, their mean the ``positive`` bonus over
    ``entropy``."""
    E, cell = 2, MinGRU(D, 4)
    signed, plain = ActorCritic(cell, 3, entropy_sign="td"), ActorCritic(cell, 3)
    params = signed.init(jax.random.PRNGKey(0), jnp.float64)
    x = jax.random.normal(jax.random.PRNGKey(1), (E, D), jnp.float64)
    memory = signed.torso.memory(params, E)
    grads = jax.jit(signed.stepped)(params, memory, x, jax.random.PRNGKey(2), jnp.asarray(0)).extra["entropy_grads"]
    assert jax.tree.leaves(grads)[0].shape[0] == E
    bonus = jax.jit(plain.stepped)(params, memory, x, jax.random.PRNGKey(2), jnp.asarray(0)).bonus
    assert relative_error(jax.tree.map(lambda g: 0.01 * g.mean(0), grads), bonus) <= 1e-9


def test_std_map_softplus_is_the_softplus_of_the_head_started_at_init_std():
    """``std_map`` softplus (Farr et al.'s ``state_dependent_std``): the standard deviation is ``softplus`` of the
    head's spread columns, by hand ``softplus(0.3) = log(1 + e^0.3)``; at the start (weights 0) it is ``init_std``
    (log 2: theirs at a zero head), as under ``exp``. [guards: exp applied to the softplus column; the bias started
    at log(init_std) under softplus]"""
    cell = MinGRU(D, 4)
    agent = GaussianActorCritic(cell, 2, state_std=True, std_map="softplus", init_std=float(np.log(2.0)))
    params = agent.init(jax.random.PRNGKey(0), jnp.float64)
    h = jnp.ones(4, jnp.float64)
    (_, log_std), _ = agent.distribution(params, h)
    np.testing.assert_allclose(np.exp(log_std), np.log(2.0), rtol=1e-12)
    params["policy"]["b"] = params["policy"]["b"].at[2:].set(0.3)
    (_, log_std), _ = agent.distribution(params, h)
    np.testing.assert_allclose(np.exp(log_std), np.log1p(np.exp(0.3)), rtol=1e-12)
    with pytest.raises(ValueError, match="std_map 'softplus' maps the policy head's spread columns"):
        GaussianActorCritic(cell, 2, std_map="softplus")


def test_head_init_sparse_draws_each_heads_columns_sparse():
    """``head_init`` sparse (Farr et al.'s heads): every column of the policy head (the spread columns too, with
    ``state_std``) and of the value head holds ceil(0.9 N) zero weights of N = 10 inputs, the biases as before."""
    cell = MinGRU(D, 10)
    agent = GaussianActorCritic(cell, 2, state_std=True, std_map="softplus", head_init="sparse", init_std=0.5)
    params = agent.init(jax.random.PRNGKey(0))
    for name, columns in (("policy", 4), ("value", 1)):
        np.testing.assert_array_equal((np.asarray(params[name]["W"]) == 0).sum(axis=0), [9] * columns)
    np.testing.assert_allclose(np.asarray(params["policy"]["b"])[2:], np.log(np.expm1(0.5)), rtol=1e-6)
    with pytest.raises(ValueError, match="head_init must be one of"):
        ActorCritic(cell, 2, head_init="zeros")


@pytest.mark.parametrize("options, message", [
    ({"encoder_width": 64}, "encoder_width does nothing here: encoder_blocks is 0"),
    ({"entropy": 0.0, "entropy_sign": "td"}, "entropy_sign does nothing here: entropy is 0"),
    ({"algorithm": "q", "entropy": 0.01, "encoder_blocks": 2}, "encoder_blocks does nothing here: algorithm 'q'"),
    ({"entropy_sign": "sometimes"}, "entropy_sign"),
    ({"entropy_sign": "td+statistics"}, "entropy_sign td\\+statistics signs the entropy term in the intentional step's "
     "statistics, and optimizer is 'adam'"),
    ({"std_map": "softplus"}, "std_map does nothing here: without --state-std"),
    ({"encoder_blocks": -1}, "encoder_blocks"),
])
def test_the_anchor_options_refuse_what_does_not_apply(options, message):
    with pytest.raises((OptionError, ValueError), match=message):
        RLConfig(**options)


@pytest.mark.parametrize("critic_lr", [None, 0.5])
def test_entropy_sign_td_statistics_builds_the_intentional_step_whose_statistics_read_the_signed_term(critic_lr):
    """The run's rule (``rule_of``) under ``--entropy-sign td+statistics``: the (actor's) intentional step keeps the
    pending gradients its statistics read signed (``SignedStatisticsState``), and under ``td`` the plain
    ``IntentionalState``; the critic's is plain either way. [guards: the option read by the agent alone, the rule
    left as td's]"""
    from rtrl.rl.assemble import assemble, rule_of
    from rtrl.rl.transforms import IntentionalState, SignedStatisticsState

    def last(sign):
        config = RLConfig(env="pendulum-p", hidden=4, optimizer="intentional", lr=0.05, critic_lr=critic_lr,
                          entropy_sign=sign)
        agent = assemble(config).agent
        state = rule_of(config, agent, 1).init(agent.init(jax.random.PRNGKey(0)))
        return (state.critic[-1], state.actor[-1]) if critic_lr else (None, state[-1])

    (critic, signed), (_, plain) = last("td+statistics"), last("td")
    assert isinstance(signed, SignedStatisticsState) and isinstance(plain, IntentionalState)
    assert critic is None or isinstance(critic, IntentionalState)


def test_a_torso_that_does_not_read_the_blocks_width_is_refused():
    with pytest.raises(ValueError, match="cell input_size must be encoder_width 4"):
        ActorCritic(MinGRU(D, 3), 2, encoder_blocks=1, encoder_width=M, observations=D)


def test_critic_network_gives_the_value_a_network_of_its_own_exact_against_bptt():
    """``critic_network``: the cell and its two blocks twice. The value's online gradient is zero on the actor's
    network (its blocks ``encoder.part0``, its cell ``part0``) and, on the critic's, equals BPTT through the
    critic's blocks (``encoder.part1``, the earlier steps' outputs cut) and cell alone, written out here (<= 1e-9,
    float64); the log-policy's gradient is zero on the critic's network. [guards: both heads on one network; the
    blocks shared; the value read from the actor's half]"""
    cell = RTU(M, 6, output_map="concat")
    agent = GaussianActorCritic(cell, 2, "auto", encoder_blocks=2, encoder_width=M, observations=D,
                                critic_network=True, state_std=True, std_map="softplus")
    params = agent.init(jax.random.PRNGKey(0), jnp.float64)
    assert {p: [layer["W"].shape for layer in stack] for p, stack in params["encoder"].items()} == {
        "part0": [(D, M), (M, M)], "part1": [(D, M), (M, M)]}
    assert params["value"]["W"].shape == (6, 1) and params["policy"]["W"].shape == (6, 4)  # each reads one network
    xs = jax.random.normal(jax.random.PRNGKey(1), (T, D), jnp.float64)
    online = online_value_grads(agent, params, xs)
    critic = {"encoder": params["encoder"]["part1"], "torso": params["torso"]["part1"], "value": params["value"]}
    want = jax.jit(jax.grad(lambda p: oracle_value(cell, p, xs, cut=True)))(critic)
    assert relative_error(online["torso"]["part1"], want["torso"]) <= 1e-9
    assert relative_error(online["encoder"]["part1"], want["encoder"]) <= 1e-9
    assert relative_error(online["value"], want["value"]) <= 1e-9
    for g in jax.tree.leaves((online["torso"]["part0"], online["encoder"]["part0"])):
        np.testing.assert_array_equal(g, 0.0)
    memory, step = agent.torso.learner.init(params["torso"]), jax.jit(agent.objective_grads)
    for x in xs:
        _, grads, memory, _ = step(params, memory, x, jnp.ones(2, jnp.float64))
    policy = jax.tree.map(lambda g: g[1], grads)
    for g in jax.tree.leaves((policy["torso"]["part1"], policy["encoder"]["part1"])):
        np.testing.assert_array_equal(g, 0.0)
    assert np.abs(np.asarray(policy["torso"]["part0"]["W1"])).max() > 0


def test_critic_network_without_blocks_steps_both_networks_on_the_observation_and_refuses_split_torso():
    agent = ActorCritic(MinGRU(D, 3), 2, critic_network=True)
    params = agent.init(jax.random.PRNGKey(0))
    assert agent.torso.cell.input_size == D and agent.torso.cell.hidden_size == 6
    assert params["policy"]["W"].shape == (3, 2) and params["value"]["W"].shape == (3, 1)
    with pytest.raises(ValueError, match="critic_network and split_torso both give the value a torso apart"):
        ActorCritic(MinGRU(D, 4), 2, critic_network=True, split_torso=True)
    with pytest.raises(ValueError, match="critic_network does nothing here: algorithm 'q'"):
        RLConfig(algorithm="q", critic_network=True)


def owned(keep) -> set[str]:
    """The paths (``a/b/c``) of the leaves ``keep`` marks."""
    return {"/".join(str(getattr(k, "key", getattr(k, "idx", k))) for k in path)
            for path, kept in jax.tree_util.tree_flatten_with_path(keep)[0] if kept}


AGENTS = {  # name -> an agent whose heads or networks read apart in some way
    "critic-network": lambda: GaussianActorCritic(RTU(M, 6, output_map="concat"), 2, "auto", encoder_blocks=2,
                                                  encoder_width=M, observations=D, critic_network=True,
                                                  state_std=True, std_map="softplus"),
    "split-torso-head": lambda: ActorCritic(MinGRU(D, 4), 2, head_hidden=3, split_torso=True),
    "shared-head": lambda: ActorCritic(MinGRU(D, 4), 2, head_hidden=3),
    "log-std": lambda: GaussianActorCritic(MinGRU(D, 4), 2),
}


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_reaches_marks_every_leaf_each_gradient_can_move(name):
    """``reaches``: where it marks a leaf as not the value's, the value's online gradient there is zero after a few
    steps from random parameters, and where not the policy's, the log-policy's and the entropy's are (so the split
    rule that drops those leaves changes no update, tests/test_rl_transforms.py); where it marks one, that
    gradient is non-zero somewhere in it (nothing kept for nothing). [guards: a head, or a network, given to the
    wrong side, or to both]"""
    agent = AGENTS[name]()
    params = jax.tree.map(lambda p: p + 0.3 * jax.random.normal(jax.random.PRNGKey(2), p.shape, p.dtype),
                          agent.init(jax.random.PRNGKey(0), jnp.float64))
    value_keep, policy_keep = agent.reaches(params)
    memory, step = agent.torso.learner.init(params["torso"]), jax.jit(agent.objective_grads)
    action = jnp.ones(2, jnp.float64) if isinstance(agent, GaussianActorCritic) else jnp.asarray(1)
    for x in jax.random.normal(jax.random.PRNGKey(1), (T, D), jnp.float64):
        _, grads, memory, _ = step(params, memory, x, action)
    for i, keep in ((0, value_keep), (1, policy_keep), (2, policy_keep)):
        objective = jax.tree.map(lambda a, i=i: a[i], grads)
        for (path, g), kept in zip(jax.tree_util.tree_flatten_with_path(objective)[0], jax.tree.leaves(keep),
                                   strict=True):
            moved = bool(np.abs(np.asarray(g)).max() > 0)
            assert moved == kept or (i == 2 and not moved), f"objective {i} at {jax.tree_util.keystr(path)}"


def test_reaches_gives_each_network_and_head_to_its_side_by_hand():
    """The sides of the anchor's agent (an actor's and a critic's network, blocks before each, the spread a head's
    columns) and of a one-torso agent with the heads' tanh layers apart, listed by hand."""
    agent = AGENTS["critic-network"]()
    value_keep, policy_keep = agent.reaches(agent.init(jax.random.PRNGKey(0)))
    critic = {"encoder/part1/0/W", "encoder/part1/0/b", "encoder/part1/1/W", "encoder/part1/1/b",
              "torso/part1/W1", "torso/part1/W2", "torso/part1/nu", "torso/part1/theta", "value/W", "value/b"}
    assert owned(value_keep) == critic
    assert owned(policy_keep) == {p.replace("part1", "part0") for p in critic} - {"value/W", "value/b"} | {
        "policy/W", "policy/b"}
    agent = AGENTS["split-torso-head"]()
    value_keep, policy_keep = agent.reaches(agent.init(jax.random.PRNGKey(0)))
    torso = {"torso/" + name for name in agent.init(jax.random.PRNGKey(0))["torso"]}
    assert owned(value_keep) == torso | {"value/W", "value/b", "value_head/W", "value_head/b"}
    assert owned(policy_keep) == torso | {"policy/W", "policy/b", "head/W", "head/b"}


@pytest.mark.parametrize("name, blocks", [("gaussian", 2), ("gaussian", 0), ("categorical", 2)])
def test_the_networks_stepped_apart_give_the_joint_steps_numbers(name, blocks):
    """With an actor's and a critic's network and their gradients apart (``split``), the step differentiates each
    network on its own (``ac.apart``): its action, value, gradients, entropy gradients and next state equal the
    joint step's (one pullback of both outputs), step after step from random parameters, float64 (1e-12). [guards:
    the networks' states swapped; the value read from the actor's network; the encoder's parts swapped; a network
    stepped on the other's input]"""
    kind = GaussianActorCritic if name == "gaussian" else ActorCritic
    options = {"state_std": True, "std_map": "softplus"} if name == "gaussian" else {}
    agent = kind(RTU(M if blocks else D, 6, output_map="concat"), 2, "auto", critic_network=True,
                 encoder_blocks=blocks, encoder_width=M, observations=D, **options)
    networks = agent.categorical.networks if name == "gaussian" else agent.networks
    assert networks is not None and len(networks) == 2
    params = jax.tree.map(lambda p: p + 0.3 * jax.random.normal(jax.random.PRNGKey(2), p.shape, p.dtype),
                          agent.init(jax.random.PRNGKey(0), jnp.float64))
    E, keys = 2, jax.random.split(jax.random.PRNGKey(3), 2)

    xs = jax.random.normal(jax.random.PRNGKey(1), (T, E, D), jnp.float64)

    def run(apart):  # every step's outputs, each from the state the same way left it
        target = agent.categorical if name == "gaussian" else agent
        target.networks = networks if apart else None
        step = jax.jit(lambda m, x: agent.step(params, m, x, keys, 1.0, True, True, per_env=True))
        memory, outs = agent.torso.memory(params, E), []
        for x in xs:
            outs.append(step(memory, x))
            memory = outs[-1][4]
        return outs

    for t, (want, got) in enumerate(zip(run(False), run(True), strict=True)):
        assert jax.tree.structure(want) == jax.tree.structure(got)
        for a, b in zip(jax.tree.leaves(want), jax.tree.leaves(got), strict=True):
            np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-14, err_msg=f"step {t}")


def test_the_networks_are_stepped_apart_only_where_the_state_is_theirs_side_by_side():
    """``network_learners``: a trace method whose traces are each member's own (closed form) steps the networks
    apart; dense RTRL's traces over the joint parameters and tbptt's window do not split, so those keep the joint
    step."""
    from rtrl.rl.algorithms.ac import network_learners

    for method, apart in (("closed_form", True), ("rtrl", False), ("tbptt", False)):
        agent = ActorCritic(MinGRU(D, 3), 2, method, critic_network=True)
        assert (network_learners(agent.torso) is not None) == apart, method
