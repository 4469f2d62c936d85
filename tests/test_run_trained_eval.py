"""``Trained.evaluate`` / ``rtrl eval RUN`` (a trained run scored on fresh episodes), ``Trained.act`` (an RL run's
policy in one environment), the short repr, and ``rtrl.load`` of a run of several seeds."""

import dataclasses
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rtrl
from rtrl.cli import main
from rtrl.run.folder import check_output_folder, read_metrics

TRAIN = ("train --task copy --task-arg max_length=2 --cell elman --hidden 3 --method rtrl --batch 2 --lr 0.05 "
         "--eval-every 4 --eval-size 8 --quiet --steps 8 --readout-decay 0.5 --out {out}")
# a T-maze of corridor 2 (junction at position 2; max_steps 12), observations as they come (no normalisation)
RL = ("rl --env tmaze --env-arg length=2 --cell elman --hidden 2 --envs 2 --record-every 20 --steps 40 --seed 3 "
      "--no-normalize-obs --quiet --out {out}")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    for command in (TRAIN.format(out=root / "train"), RL.format(out=root / "rl"),
                    RL.format(out=root / "seeds") + " --seeds 3",
                    RL.format(out=root / "normalised").replace(" --no-normalize-obs", ""),
                    RL.format(out=root / "q") + " --algorithm q"):
        assert main(command.split()) == 0
    return root


def test_a_training_runs_evaluation_is_its_last_record_on_the_same_episodes(runs, capsys):
    """Default episodes and seed are the run's own held-out set: the numbers of its last record, exactly (the readout
    low-pass filtered, as the trainer evaluates it)."""
    last = read_metrics(runs / "train")[-1]
    result = rtrl.load(runs / "train").evaluate()
    held_out = {k: v for k, v in last.items() if k not in ("step", "loss", "wall_s")}
    assert result == {"metric": "token_accuracy", "value": last["metric"], "episodes": 8, "seed": 0,
                      "metrics": held_out, "step": 8, "run_seed": 0}
    assert rtrl.load(runs / "train").evaluate(episodes=8, seed=0) == result
    capsys.readouterr()
    assert main(["eval", str(runs / "train"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == result
    # other episodes: the CLI and Python agree for the same N and S, and the figure is a fraction of 2-bit tokens
    other = rtrl.load(runs / "train").evaluate(episodes=20, seed=4)
    assert main(["eval", str(runs / "train"), "--json", "--episodes", "20", "--seed", "4"]) == 0
    assert json.loads(capsys.readouterr().out) == other and other["episodes"] == 20 and other["seed"] == 4
    assert 0 <= other["value"] <= 1 and other["metrics"] != held_out
    assert main(["eval", str(runs / "train")]) == 0  # for a person: one line, every held-out figure
    assert capsys.readouterr().out == (
        f"{runs / 'train'} at step 8: token_accuracy {last['metric']:.4g} (eval_loss {last['eval_loss']:.4g}, "
        f"sequence_accuracy {last['sequence_accuracy']:.4g}) over 8 episodes drawn from seed 0; backend "
        f"{jax.default_backend()}, device {jax.devices()[0].device_kind}\n")  # where it computed
    # the episodes a run with --eval-size 20 --seed 4 holds out, scored as its trainer scores them
    from rtrl.training.tasks import Copy
    from rtrl.training.trainer import Trainer, evaluation

    trained = rtrl.load(runs / "train")
    trainer = Trainer(Copy(max_length=2), trained.cell, "rtrl", batch=2, eval_size=20, seed=4, readout_decay=0.5)
    assert other["metrics"] == evaluation(trainer, trained.state)


def hand_policy(trained, sign: float):
    """The T-maze solved by hand (``sign=1``; ``-1`` turns the wrong way, ``0`` never turns): an Elman torso of two
    units, ``h0 = tanh(10 x2)`` (at the junction) and ``h1 = tanh(10 (x0 - x1) + 3 h1)`` (the cue, remembered), and
    logits ``(10 h0 + 5 s h1, 10 h0 - 5 s h1, 8)``: forward along the corridor, at the junction the cue's turn."""
    W = jnp.array([[0.0, 10.0], [0.0, -10.0], [10.0, 0.0]])
    torso = {"W": W, "B": jnp.zeros(2), "R": jnp.array([[0.0, 0.0], [0.0, 3.0]])}
    policy = {"W": jnp.array([[10.0, 10.0, 0.0], [5.0 * sign, -5.0 * sign, 0.0]]),
              "b": jnp.array([0.0, 0.0, 8.0]) - (100.0 if sign == 0 else 0.0) * jnp.array([1.0, 1.0, 0.0])}
    params = {**trained.state.params, "torso": torso, "policy": policy}
    return dataclasses.replace(trained, state=trained.state._replace(params=params))


@pytest.mark.parametrize("sign, value", [(1.0, 1.0), (-1.0, -1.0), (0.0, 0.0)])
def test_an_rl_runs_rollout_scores_its_policy(runs, sign, value):
    """Every episode of the hand-made policy turns with the cue (+1), against it (-1), or never (0, each episode
    ended by the maze's own limit of 12 steps, none cut short by the rollout)."""
    trained = hand_policy(rtrl.load(runs / "rl"), sign)
    result = trained.evaluate(episodes=7, seed=1, greedy=True)
    assert result == {"metric": "return", "value": value, "std": 0.0, "min": value, "max": value, "cut": 0,
                      "episodes": 7, "seed": 1, "greedy": True, "step": 40,
                      "run_seed": 3}
    sampled = trained.evaluate(episodes=7, seed=1)  # logits 2 apart at least: sampling mostly agrees
    assert not sampled["greedy"] and sampled["episodes"] == 7 and -1 <= sampled["value"] <= 1


def test_a_q_runs_greedy_policy_takes_the_action_of_highest_value(runs):
    """The hand-made policy's logits as action values: greedy, every episode is won."""
    trained = rtrl.load(runs / "q")
    policy = hand_policy(trained, 1.0).state.params["policy"]
    params = {**trained.state.params, "torso": hand_policy(trained, 1.0).state.params["torso"], "q": policy}
    trained = dataclasses.replace(trained, state=trained.state._replace(params=params))
    result = trained.evaluate(episodes=6, seed=0, greedy=True)
    assert (result["value"], result["min"], result["episodes"]) == (1.0, 1.0, 6)


def test_the_policy_sees_observations_normalised_by_the_runs_statistics(runs):
    """A run that normalised its observations acts on them normalised by its statistics as they stand: with mean 0
    and variance 1 the hand-made policy wins every episode; with the junction bit's mean at 1 it never sees the
    junction (its bit normalised to 0) and never turns (return 0)."""
    from rtrl.run.rl import RLRun

    trained = hand_policy(rtrl.load(runs / "normalised"), 1.0)
    stats = trained.state.wrappers[0]
    assert RLRun.policy(trained.run, trained.state).stats is stats  # the checkpoint's, as they stand
    for mean, value in (([0.0, 0.0, 0.0], 1.0), ([0.0, 0.0, 1.0], 0.0)):
        fixed = stats._replace(count=jnp.ones_like(stats.count), mean=jnp.array(mean), m2=jnp.ones(3))
        wrappers = (fixed, *trained.state.wrappers[1:])
        scored = dataclasses.replace(trained, state=trained.state._replace(wrappers=wrappers))
        assert scored.evaluate(episodes=5, seed=2, greedy=True)["value"] == value


def test_rtrl_eval_and_evaluate_give_the_same_numbers_for_the_same_episodes_and_seed(runs, capsys):
    for argv, options in (([], {}), (["--episodes", "9", "--seed", "4", "--greedy"],
                                     {"episodes": 9, "seed": 4, "greedy": True})):
        capsys.readouterr()
        assert main(["eval", str(runs / "normalised"), "--json", *argv]) == 0
        printed = json.loads(capsys.readouterr().out)
        assert printed == rtrl.load(runs / "normalised").evaluate(**options)
        assert printed["episodes"] == options.get("episodes", 10) and printed["seed"] == options.get("seed", 3)


def test_each_environment_counts_its_first_episode_only(runs):
    """A policy that turns left only, at the junction after a left cue (+1 at step 4), and otherwise waits there
    until the maze's limit (0 at step 12): the episodes end at different steps, and an environment whose episode
    ended (and which begins another by itself) adds nothing more, so every return is 1 or 0."""
    trained = hand_policy(rtrl.load(runs / "rl"), 1.0)
    policy = {"W": trained.state.params["policy"]["W"].at[:, 1].set(0.0), "b": jnp.array([0.0, -100.0, 8.0])}
    params = {**trained.state.params, "policy": policy}
    trained = dataclasses.replace(trained, state=trained.state._replace(params=params))
    result = trained.evaluate(episodes=32, seed=0, greedy=True)
    wins = result["value"] * 32
    assert (result["min"], result["max"], result["cut"]) == (0.0, 1.0, 0) and wins == round(wins)
    assert result["std"] == pytest.approx(np.sqrt(result["value"] * (1 - result["value"])))  # returns of 0 and 1


def test_act_follows_the_policy_one_step_at_a_time(runs):
    trained = hand_policy(rtrl.load(runs / "rl"), 1.0)
    for cue, turn in (([1.0, 0.0, 0.0], 0), ([0.0, 1.0, 0.0], 1)):
        action, memory = trained.act(jnp.array(cue), greedy=True)  # the start: the cue shown
        assert int(action) == 2
        action, memory = trained.act(jnp.zeros(3), memory, greedy=True)  # the corridor
        assert int(action) == 2
        action, memory = trained.act(jnp.array([0.0, 0.0, 1.0]), memory, greedy=True)  # the junction
        assert int(action) == turn
    with pytest.raises(ValueError, match=r"obs must be one observation of shape \(3,\)"):
        trained.act(jnp.zeros((2, 3)))
    with pytest.raises(TypeError, match="act is for RL runs"):
        rtrl.load(runs / "train").act(jnp.zeros(3))


def test_the_repr_is_one_line_without_weights(runs):
    text = repr(rtrl.load(runs / "train"))  # 25: the Elman cell's 9 + 3 + 9, the readout's 3 + 1
    assert text == (f"Trained(train run {str(runs / 'train')!r} at step 8: Elman cell 3 -> 3, 25 parameters in all; "
                    "seed 0)")
    assert str(rtrl.load(runs / "rl")).startswith(f"Trained(rl run {str(runs / 'rl')!r} at step 40: Elman torso 3 -> 2")


def test_a_run_of_several_seeds_loads_one_seed(runs, capsys):
    """``rtrl rl --seeds 3 --seed 3``: seeds 3, 4 and 5, the first by default; each seed's parameters are its own
    slice of the checkpoint, and equal those of a one-seed run with that seed."""
    first, third = rtrl.load(runs / "seeds"), rtrl.load(runs / "seeds", seed=5)
    assert first.seed == 3 and third.seed == 5 and repr(first).endswith("; seed 3 of 3..5)")
    single = rtrl.load(runs / "rl")  # the same configuration with --seed 3 alone
    for name, value in single.params.items():
        np.testing.assert_allclose(np.asarray(first.params[name]), np.asarray(value), rtol=1e-5, atol=1e-6)
    assert not np.allclose(np.asarray(first.params["W"]), np.asarray(third.params["W"]))
    with pytest.raises(ValueError, match=r"seed must be one of the run's seeds 3\.\.5"):
        rtrl.load(runs / "seeds", seed=6)
    assert rtrl.load(runs / "rl", seed=3).seed == 3  # a run of one seed: its own is the one there is
    with pytest.raises(ValueError, match="seed applies to a run of several seeds.*of seed 3, got seed=4"):
        rtrl.load(runs / "rl", seed=4)
    assert third.evaluate(episodes=3)["run_seed"] == 5
    capsys.readouterr()
    assert main(["eval", str(runs / "seeds"), "--episodes", "3", "--json", "--run-seed", "4"]) == 0
    assert json.loads(capsys.readouterr().out)["run_seed"] == 4
    assert main(["eval", str(runs / "seeds"), "--episodes", "3"]) == 0
    assert "(seed 3, the first of 3; another with --run-seed)" in capsys.readouterr().out
    assert main(["eval", str(runs / "seeds"), "--run-seed", "9"]) == 2
    assert "--run-seed: seed must be one of the run's seeds 3..5" in capsys.readouterr().err


def test_bad_evaluation_options_are_one_clear_error(runs, capsys):
    trained = rtrl.load(runs / "train")
    with pytest.raises(ValueError, match="episodes must be a positive integer, got 0"):
        trained.evaluate(episodes=0)
    with pytest.raises(ValueError, match=r"seed must be an integer from 0 to 2\*\*32 - 1, got -1"):
        trained.evaluate(seed=-1)
    with pytest.raises(ValueError, match="video applies to RL runs"):
        trained.evaluate(video="films")
    for argv, said in ((["--greedy"], "--greedy applies to RL runs"), (["--video", "films"], "--video applies to RL"),
                       (["--episodes", "0"], "--episodes: must be a positive integer")):
        assert main(["eval", str(runs / "train"), *argv]) == 2
        assert said in capsys.readouterr().err
    # a jitted environment has no renderer: refused by name, nothing made
    assert main(["eval", str(runs / "rl"), "--video", str(runs / "films")]) == 2
    assert "--video needs a Gymnasium environment that renders (gymnasium:ID); TMaze(length=2)" in \
        capsys.readouterr().err
    assert not (runs / "films").exists()


def test_an_output_folder_never_names_a_run_folders_file(runs, tmp_path):
    run = runs / "rl"
    for bad in (run / "checkpoint.npz", run / "config.json" / "inner", run / ".lock", run / "wandb",
                run / "wandb" / "films", run / "events.out.tfevents.1.host"):
        with pytest.raises(ValueError, match="a file of the run folder"):
            check_output_folder(bad, "--video")
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match="is a file, not a folder"):
        check_output_folder(tmp_path / "file", "--video")
    escape = run / "films"
    escape.symlink_to(tmp_path, target_is_directory=True)
    try:
        with pytest.raises(ValueError, match="leads out of it"):
            check_output_folder(escape, "--video")
    finally:
        escape.unlink()
    assert check_output_folder(run / "videos", "--video") == run / "videos"  # a folder of its own in the run: fine
    link = tmp_path / "link"  # outside any run, leading into one's file
    link.symlink_to(run / "checkpoint.npz" / "sub")
    with pytest.raises(ValueError, match="a file of the run folder"):
        check_output_folder(link, "--video")



def film_env(blind: bool = False, endless: bool = False):
    gymnasium = pytest.importorskip("gymnasium")
    from gymnasium import spaces

    class FilmEnv(gymnasium.Env):
        metadata = {"render_modes": [] if blind else ["rgb_array"], "render_fps": 4}

        def __init__(self, render_mode=None):
            self.observation_space = spaces.Box(0.0, 1.0, (2,), np.float32)
            self.action_space = spaces.Discrete(2)
            self.render_mode, self.t = render_mode, 0

        def observe(self):
            return np.array([self.t / 3, 1.0], np.float32)

        def reset(self, seed=None, options=None):
            super().reset(seed=seed)
            self.t = 0
            return self.observe(), {}

        def step(self, action):
            self.t += 1
            return self.observe(), float(action), self.t >= 3 and not endless, False, {}

        def render(self):
            return np.full((16, 16, 3), 60 * self.t, np.uint8)

    name = "RtrlFilmBlind-v0" if blind else "RtrlFilmEndless-v0" if endless else "RtrlFilm-v0"
    if name not in gymnasium.registry:
        gymnasium.register(id=name, entry_point=FilmEnv)
    return name


def always_action_one(trained):
    """``trained`` with its policy's bias set so that it takes action 1 (of two) whatever it observes."""
    policy = {**trained.state.params["policy"], "b": jnp.array([0.0, 50.0])}
    params = {**trained.state.params, "policy": policy}
    return dataclasses.replace(trained, state=trained.state._replace(params=params))


def test_an_rl_run_on_a_gymnasium_environment_is_rolled_out_and_filmed(tmp_path, capsys):
    """Every episode of a policy that always takes action 1 returns 3; each is one video file."""
    pytest.importorskip("moviepy")
    name = film_env()
    run = tmp_path / "film"
    assert main(f"rl --env gymnasium:{name} --hidden 2 --envs 1 --record-every 6 --steps 6 --quiet --out {run}"
                .split()) == 0
    trained = always_action_one(rtrl.load(run))
    result = trained.evaluate(episodes=2, seed=5, video=tmp_path / "films")
    assert result == {"metric": "return", "value": 3.0, "std": 0.0, "min": 3.0, "max": 3.0, "cut": 0, "episodes": 2,
                      "seed": 5, "greedy": False, "step": 6, "run_seed": 0}
    films = sorted(p.name for p in (tmp_path / "films").iterdir())
    assert films == ["seed5-episode-0.mp4", "seed5-episode-1.mp4"]
    assert all((tmp_path / "films" / f).stat().st_size > 0 for f in films)
    capsys.readouterr()
    assert main(["eval", str(run), "--episodes", "1", "--json"]) == 0  # the CLI: the run's own policy
    assert json.loads(capsys.readouterr().out)["episodes"] == 1


def test_the_documented_video_environment_renders_out_of_the_box(tmp_path, capsys):
    """docs/rl.md's "Videos": ``rtrl eval RUN --video DIR`` on gymnasium:CartPole-v1 (drawn by pygame, the ``video``
    extra's) writes one MP4 per episode, named by the seed [pygame left out of the extra: the command refuses and
    names it, and this fails where the extra alone is installed]."""
    pytest.importorskip("moviepy")
    pytest.importorskip("pygame")
    run, films = tmp_path / "cartpole", tmp_path / "films"
    assert main(f"rl --env gymnasium:CartPole-v1 --hidden 2 --envs 1 --steps 4 --record-every 4 --quiet --out {run}"
                .split()) == 0
    capsys.readouterr()
    assert main(["eval", str(run), "--episodes", "1", "--video", str(films)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"videos: {films}"
    (film,) = films.iterdir()
    data = film.read_bytes()
    assert film.name == "seed0-episode-0.mp4" and data[4:8] == b"ftyp" and len(data) > 1000  # an MP4 with frames


def test_a_gymnasium_runs_observation_is_masked_as_in_training(tmp_path):
    """``--env-arg keep=1``: the torso reads one entry of the two (the constant 1), in the rollout as in training;
    a policy whose action is 1 where that entry is positive returns 3 (an unmasked observation would not fit the
    torso at all)."""
    name = film_env()
    run = tmp_path / "masked"
    assert main(f"rl --env gymnasium:{name} --env-arg keep=1 --hidden 2 --envs 1 --record-every 6 --steps 6 "
                f"--no-normalize-obs --quiet --out {run}".split()) == 0
    trained = rtrl.load(run)
    assert trained.cell.input_size == 1
    torso = {"W": jnp.array([[10.0, 0.0]]), "B": jnp.zeros(2), "R": jnp.zeros((2, 2))}
    policy = {"W": jnp.array([[-20.0, 20.0], [0.0, 0.0]]), "b": jnp.zeros(2)}
    params = {**trained.state.params, "torso": torso, "policy": policy}
    trained = dataclasses.replace(trained, state=trained.state._replace(params=params))
    assert trained.evaluate(episodes=2, seed=0, greedy=True)["value"] == 3.0


def test_a_gymnasium_episode_without_end_is_cut_and_counted(tmp_path, monkeypatch):
    """An environment without a limit of its own (never terminating): each episode is cut at ``HOST_STEPS`` steps
    (here 5), its return that far (5 actions 1), and the cut counted."""
    from rtrl.run import rollout

    name = film_env(endless=True)
    run = tmp_path / "endless"
    assert main(f"rl --env gymnasium:{name} --hidden 2 --envs 1 --record-every 6 --steps 6 --quiet --out {run}"
                .split()) == 0
    trained = always_action_one(rtrl.load(run))
    monkeypatch.setattr(rollout, "HOST_STEPS", 5)
    result = trained.evaluate(episodes=2, seed=0)
    assert (result["value"], result["cut"], result["episodes"]) == (5.0, 2, 2)


def test_a_gymnasium_evaluation_is_bounded_before_it_starts(tmp_path, monkeypatch, capsys):
    """Host episodes are played one after another, so ``episodes`` x the step limit is at most ``HOST_EVAL_STEPS``
    (``rtrl eval --episodes 2147483647`` on a Gymnasium environment once passed every check and ran for days): as
    documented, 1,000,000 steps, 10 episodes of 100,000 (``HOST_STEPS``) where the environment has no limit. By
    hand, with a limit of 5 steps and a bound of 10: 2 episodes are played, each returning 5; 3 are refused by
    name, in one line by the command, nothing played."""
    from rtrl.run import rollout

    assert (rollout.HOST_EVAL_STEPS, rollout.HOST_STEPS) == (1_000_000, 100_000)  # as --episodes' help says
    name = film_env(endless=True)
    run = tmp_path / "endless"
    assert main(f"rl --env gymnasium:{name} --hidden 2 --envs 1 --record-every 6 --steps 6 --quiet --out {run}"
                .split()) == 0
    monkeypatch.setattr(rollout, "HOST_STEPS", 5)
    monkeypatch.setattr(rollout, "HOST_EVAL_STEPS", 10)
    capsys.readouterr()
    assert main(["eval", str(run), "--episodes", "3"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err] and err.endswith(
        f"episodes must be at most 2 on gymnasium:{name}, whose episodes are played one after another on the host, "
        "each up to 5 steps (10 steps in all), got 3")
    trained = always_action_one(rtrl.load(run))
    played, seeds = [], np.random.SeedSequence
    monkeypatch.setattr(np.random, "SeedSequence", lambda *a: played.append(a) or seeds(*a))
    assert trained.evaluate(episodes=2, seed=0)["value"] == 5.0
    before = len(played)
    with pytest.raises(ValueError, match=r"^episodes must be at most 2 on .* each up to 5 steps \(10 steps in all\), "
                                         "got 3$"):
        trained.evaluate(episodes=3, seed=0)
    assert len(played) == before > 0  # the refused evaluation seeded nothing: no episode was played


def test_a_gymnasium_environment_that_does_not_render_is_refused_by_name(tmp_path, capsys):
    name = film_env(blind=True)
    run = tmp_path / "blind"
    assert main(f"rl --env gymnasium:{name} --hidden 2 --envs 1 --record-every 3 --steps 3 --quiet --out {run}"
                .split()) == 0
    assert main(["eval", str(run), "--video", str(tmp_path / "films")]) == 2
    assert f"--video: gymnasium:{name} does not render rgb_array frames" in capsys.readouterr().err
    assert not (tmp_path / "films").exists()


def test_export_of_a_run_of_several_seeds_writes_the_seed_asked_for(tmp_path, capsys):
    pytest.importorskip("nir")
    import nir

    from rtrl.export import from_nir

    run = tmp_path / "lifs"
    assert main(f"rl --env tmaze --env-arg length=2 --cell lif --hidden 3 --envs 2 --record-every 10 --steps 10 "
                f"--seed 7 --seeds 2 --quiet --out {run}".split()) == 0
    capsys.readouterr()
    assert main(["export", str(run), "--nir", str(tmp_path / "first.nir")]) == 0
    assert "at step 10, seed 7 (the first of 2; another with --run-seed)" in capsys.readouterr().out
    assert main(["export", str(run), "--nir", str(tmp_path / "second.nir"), "--run-seed", "8"]) == 0
    for file, seed in (("first.nir", 7), ("second.nir", 8)):
        params = from_nir(nir.read(tmp_path / file))[1]
        expected = rtrl.load(run, seed=seed).params
        for name, value in expected.items():
            np.testing.assert_allclose(np.asarray(params[name]), np.asarray(value), rtol=1e-6, err_msg=name)
    assert main(["export", str(run), "--nir", str(tmp_path / "third.nir"), "--run-seed", "9"]) == 2
    assert "--run-seed: seed must be one of the run's seeds 7..8" in capsys.readouterr().err
    assert not (tmp_path / "third.nir").exists()


def test_a_damaged_checkpoint_of_a_run_of_several_seeds_is_one_line_naming_it(runs, tmp_path, capsys):
    import shutil

    run = tmp_path / "seeds"
    shutil.copytree(runs / "seeds", run)
    data = (run / "checkpoint.npz").read_bytes()
    (run / "checkpoint.npz").write_bytes(data[: len(data) // 2])
    capsys.readouterr()
    for argv in (["eval", str(run)], ["export", str(run), "--nir", str(tmp_path / "x.nir")]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{run / 'checkpoint.npz'} is damaged" in err, err


def test_a_figure_that_is_not_finite_is_null_in_the_json(runs, capsys, monkeypatch):
    """Strict JSON never holds NaN: a held-out loss that overflowed on other episodes is printed as null."""
    from rtrl.run.trained import Trained

    monkeypatch.setattr(Trained, "evaluate", lambda self, *a, **k: {"metric": "token_accuracy", "value": 0.5,
                                                                    "metrics": {"eval_loss": float("inf")}})
    capsys.readouterr()
    assert main(["eval", str(runs / "train"), "--json"]) == 0
    assert capsys.readouterr().out == '{"metric": "token_accuracy", "value": 0.5, "metrics": {"eval_loss": null}}\n'


def test_a_gymnasium_runs_extra_inputs_are_given_in_the_rollout_as_in_training(tmp_path):
    """``--extra-inputs`` on the host (episodes of 3 steps, limit 3): the torso reads only the time entry (index 5
    of [t/3, 1, one-hot of the previous action, previous reward, time / 3 - 1/2]) with a bias of 3, and the greedy
    policy takes action 1 where that is positive (the time above -0.3): action 0 at an episode's first step (time
    -1/2), then 1 twice (-1/6, 1/6), a return of 2 in each episode. [A rollout without the extras does not fit the
    torso; a time not restarted at a reset returns 3 in the second episode; a time never given returns 0]"""
    name = film_env()
    run = tmp_path / "extras"
    assert main(f"rl --env gymnasium:{name} --env-arg max_episode_steps=3 --extra-inputs --hidden 2 --envs 1 "
                f"--record-every 6 --steps 6 --no-normalize-obs --quiet --out {run}".split()) == 0
    trained = rtrl.load(run)
    assert trained.cell.input_size == 2 + 2 + 1 + 1
    torso = {"W": jnp.zeros((6, 2)).at[5, 0].set(10.0), "B": jnp.array([3.0, 0.0]), "R": jnp.zeros((2, 2))}
    policy = {"W": jnp.array([[-20.0, 20.0], [0.0, 0.0]]), "b": jnp.zeros(2)}
    params = {**trained.state.params, "torso": torso, "policy": policy}
    trained = dataclasses.replace(trained, state=trained.state._replace(params=params))
    result = trained.evaluate(episodes=2, seed=0, greedy=True)
    assert (result["value"], result["min"]) == (2.0, 2.0)


def test_a_rollout_normalises_the_observation_but_not_the_time_as_training_did(tmp_path):
    """A run with the time input and normalised observations: its policy (what ``rtrl eval`` acts with) standardises
    every entry by the run's statistics but the time's, which it passes as it is, as the training loop did.
    [guards: the rollout built without the clock, so the time it gives the torso differs from training's]"""
    run = tmp_path / "clock"
    assert main(f"rl --env tmaze --extra-inputs time --hidden 2 --envs 2 --record-every 4 --steps 4 --quiet "
                f"--out {run}".split()) == 0
    trained = rtrl.load(run)
    policy, stats = trained._policy, trained.state.wrappers[0]
    obs = jnp.linspace(-2.0, 0.3, stats.mean.shape[0])  # the T-maze's 3 entries and the time
    x = np.asarray(policy.observe(obs))
    expected = (np.asarray(obs) - np.asarray(stats.mean)) / np.sqrt(np.asarray(stats.m2 / stats.count) + 1e-8)
    np.testing.assert_allclose(x[:-1], expected[:-1], rtol=1e-6)
    assert x[-1] == np.float32(0.3)


def box_env():
    """A Gymnasium environment of Box actions in [-1, 1] whose reward is the action taken, episodes of 3 steps."""
    gymnasium = pytest.importorskip("gymnasium")
    from gymnasium import spaces

    class BoxEnv(gymnasium.Env):
        metadata = {"render_modes": []}

        def __init__(self, render_mode=None):
            self.observation_space = spaces.Box(0.0, 1.0, (2,), np.float32)
            self.action_space = spaces.Box(-1.0, 1.0, (1,), np.float32)
            self.t = 0

        def reset(self, seed=None, options=None):
            super().reset(seed=seed)
            self.t = 0
            return np.array([0.0, 1.0], np.float32), {}

        def step(self, action):
            self.t += 1
            return np.array([self.t / 3, 1.0], np.float32), float(action[0]), self.t >= 3, False, {}

    if "RtrlBox-v0" not in gymnasium.registry:
        gymnasium.register(id="RtrlBox-v0", entry_point=BoxEnv)
    return "RtrlBox-v0"


@pytest.mark.parametrize("actions, value", [("clip", 1.5), ("squash", 3 * float(np.tanh(np.float32(0.5))))])
def test_a_gymnasium_runs_box_actions_are_mapped_in_the_rollout_as_in_training(tmp_path, actions, value):
    """``--env-arg actions=clip`` (the anchor agents' map): the greedy action 0.5 is taken as 0.5, three steps a
    return of 1.5, as the training vector takes it; squashed it would be tanh(0.5) a step. [An evaluation that
    squashes what training clipped returned 1.386 here]"""
    run = tmp_path / actions
    assert main(f"rl --env gymnasium:{box_env()} --env-arg actions={actions} --hidden 2 --envs 1 --record-every 6 "
                f"--steps 6 --no-normalize-obs --quiet --out {run}".split()) == 0
    trained = rtrl.load(run)
    params = {**trained.state.params, "policy": {"W": jnp.zeros((2, 1)), "b": jnp.array([0.5])}}
    trained = dataclasses.replace(trained, state=trained.state._replace(params=params))
    assert trained.evaluate(episodes=2, seed=0, greedy=True)["value"] == pytest.approx(value, rel=1e-6)


def test_videos_are_never_written_through_a_link_nor_over_a_video_without_overwrite(tmp_path, capsys):
    """A link named like one of the videos (out of the folder, or dangling) is refused before anything is filmed,
    even with ``overwrite``, and what it points to is untouched; a video already there is replaced only with
    ``overwrite``; a dangling ``--video`` folder is one usage error; no temporary folder is left behind."""
    pytest.importorskip("moviepy")
    name = film_env()
    run = tmp_path / "film"
    assert main(f"rl --env gymnasium:{name} --hidden 2 --envs 1 --record-every 6 --steps 6 --quiet --out {run}"
                .split()) == 0
    trained = rtrl.load(run)
    films, precious = tmp_path / "films", tmp_path / "precious.mp4"
    films.mkdir()
    precious.write_bytes(b"precious")
    os.symlink(precious, films / "seed5-episode-1.mp4")
    for overwrite in (False, True):
        with pytest.raises(ValueError, match="seed5-episode-1.mp4 is a symbolic link"):
            trained.evaluate(episodes=2, seed=5, video=films, overwrite=overwrite)
    assert precious.read_bytes() == b"precious" and sorted(os.listdir(films)) == ["seed5-episode-1.mp4"]
    os.symlink(precious, run / "seed0-episode-0.mp4")  # --video RUN: the same rule in the run folder
    assert main(["eval", str(run), "--episodes", "1", "--video", str(run)]) == 2
    assert "seed0-episode-0.mp4 is a symbolic link" in capsys.readouterr().err
    (films / "seed5-episode-1.mp4").unlink()
    (films / "seed5-episode-0.mp4").write_bytes(b"an earlier video")
    with pytest.raises(ValueError, match="seed5-episode-0.mp4 exists; choose another file, or replace it with"):
        trained.evaluate(episodes=2, seed=5, video=films)
    assert sorted(os.listdir(films)) == ["seed5-episode-0.mp4"]
    trained.evaluate(episodes=2, seed=5, video=films, overwrite=True)
    assert sorted(os.listdir(films)) == ["seed5-episode-0.mp4", "seed5-episode-1.mp4"]  # nothing else left there
    assert (films / "seed5-episode-0.mp4").read_bytes()[4:8] == b"ftyp"  # an MP4 now
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling")
    assert main(["eval", str(run), "--episodes", "1", "--video", str(tmp_path / "dangling")]) == 2
    err = capsys.readouterr().err
    assert "dangling is a symbolic link to" in err and "which does not exist" in err and "Traceback" not in err
    assert main(["eval", str(run), "--overwrite"]) == 2
    assert "--overwrite applies to the videos of --video DIR" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["train", "rl"])
def test_a_checkpoint_whose_parameters_are_nan_is_refused_on_load_and_eval(runs, tmp_path, capsys, kind):
    """A checkpoint of NaN parameters (an older version's, or an edited one) would score as a policy or a readout
    (return 0, accuracy 1/3, exit 0): ``rtrl.load`` and ``rtrl eval`` refuse it, naming the file and the leaf."""
    import shutil

    import jax

    from rtrl.run import checkpoint
    from rtrl.run.folder import Run, RunError

    run = tmp_path / kind
    shutil.copytree(runs / kind, run)
    file = run / "checkpoint.npz"
    state, meta = checkpoint.load(file, Run.open(run).fresh())
    nan = state._replace(params=jax.tree.map(lambda a: jnp.full_like(a, jnp.nan), state.params))
    checkpoint.save(file, nan, meta)
    with pytest.raises(RunError, match=f"{file} holds nan in \\.params.*: the run had diverged and cannot be loaded"):
        rtrl.load(run)
    assert main(["eval", str(run)]) == 2
    err = capsys.readouterr().err
    assert "holds nan in .params" in err and "Traceback" not in err
    checkpoint.save(file, state, meta)  # the same parameters, finite: loaded again
    assert rtrl.load(run).step == meta["step"]


def test_act_refuses_an_observation_it_cannot_act_on_in_one_line(runs):
    """A NaN (or an infinity) in the observation, another width, a batch, text: each a ``ValueError`` saying what
    was expected [unchecked: action 0 and NaN memory without a word, or JAX's broadcasting error]."""
    trained = rtrl.load(runs / "normalised")  # its statistics broadcast against a wrong width
    for obs, said in (([0.0, np.nan, 1.0], "obs must be finite, got nan at index 1"),
                      (np.array([np.inf, 0.0, 0.0]), "obs must be finite, got inf at index 0"),
                      (np.zeros(5), r"obs must be one observation of shape \(3,\) \(the torso's 3 inputs\), got shape "
                                    r"\(5,\)"),
                      (np.zeros(1), r"got shape \(1,\)"), (np.zeros((2, 3)), r"got shape \(2, 3\)"),
                      ("abc", "obs must be one observation of 3 numbers, got str")):
        with pytest.raises(ValueError, match=said):
            trained.act(obs)
    action, _ = trained.act([0, 1, 0], greedy=True)  # a list of ints: an observation
    assert int(action) in (0, 1, 2)


def test_a_link_made_while_the_episodes_are_filmed_is_replaced_not_written_through(tmp_path, monkeypatch):
    """The videos are recorded apart and moved onto their names (``os.replace``): a link that appears under a video's
    name after the check (another process) is replaced by the video, and the file it points to is untouched."""
    pytest.importorskip("moviepy")
    from rtrl.run import rollout

    name = film_env()
    run = tmp_path / "film"
    assert main(f"rl --env gymnasium:{name} --hidden 2 --envs 1 --record-every 6 --steps 6 --quiet --out {run}"
                .split()) == 0
    films, precious = tmp_path / "films", tmp_path / "precious.mp4"
    precious.write_bytes(b"precious")
    checked = rollout.video_files

    def then_a_link(folder, seed, episodes, overwrite):
        files = checked(folder, seed, episodes, overwrite)
        folder.mkdir()
        os.symlink(precious, files[0])
        return files

    monkeypatch.setattr(rollout, "video_files", then_a_link)
    rtrl.load(run).evaluate(episodes=1, seed=2, video=films)
    assert precious.read_bytes() == b"precious"
    video = films / "seed2-episode-0.mp4"
    assert not video.is_symlink() and video.read_bytes()[4:8] == b"ftyp" and os.listdir(films) == [video.name]
