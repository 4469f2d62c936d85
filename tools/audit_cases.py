"""The cases of ``tools/audit.py``: hostile (or merely odd) invocations a new user might try, none of them the ones
issue 22 names.

A CLI case: ``id``, ``cmd`` (the arguments after ``rtrl``, split like a shell), ``expect`` ("refuse" or "ok"),
``words`` (for a refusal: alternatives, ``|``-separated, one of which the message must contain), ``fix`` (the
module that should answer it), and optionally ``folders`` ({name: template}: a copy of a tiny finished run,
"run" (train, hidden 4), "run8" (train, hidden 8), "bptt" (train, bptt), "rl", "gym" (rl, gymnasium:CartPole-v1) or
"net" (train, --cell rtrl.cells.network:lru_network)), ``edits`` ([(folder, edit)]: how to damage a copied folder
before the case: ("config", {key: value or DELETE}), ("write", file, text), ("append", file, text), ("truncate",
file, n_bytes), ("remove", file), ("copy_from", file, template), ("mkdir", name), ("symlink", file, target),
("fifo", file), ("duplicate_last", file), ("reverse", file): its lines in reverse order),
``files`` ({path: text}), ``dirs`` ([path]) and ``fifos`` ([path]: named pipes) made in the case's folder first,
``absent`` ([path]: files that must not exist afterwards, e.g. the marker a module leaves when it is imported: a case
that makes one is silent), ``env``, and ``replaces`` (an
accepted case asked to replace the run, ``--overwrite``: its files may go), ``rewinds`` (an accepted resume may
drop the records after this step, the checkpoint's).

An API case: ``id``, ``code`` (run with ``exec`` in a namespace made by ``API_SETUP``), ``expect``, ``words``,
``fix``, ``command`` (the part of the API, for the table).
"""

from __future__ import annotations

DELETE = "<delete>"
COMMANDS = ("train", "rl", "resume", "plot", "list", "inspect", "demo", "fidelity", "bench")
TRAIN = "--steps 2 --hidden 4 --batch 2 --eval-size 4 --quiet"  # an accepted train run is quick
RL = "--steps 4 --hidden 4 --envs 2 --record-every 2 --quiet"
FID = "--lengths 2 --seeds 1 --hidden 2 --input 1"

CLI: list[dict] = []
API: list[dict] = []


def cli(id: str, cmd: str, words: str = "", expect: str = "refuse", fix: str = "", **extra) -> None:
    CLI.append({"id": id, "cmd": cmd, "words": words, "expect": expect, "fix": fix, **extra})


def ok(id: str, cmd: str, fix: str = "", **extra) -> None:
    cli(id, cmd, "", "ok", fix, **extra)


def api(id: str, code: str, words: str = "", expect: str = "refuse", fix: str = "", command: str = "api") -> None:
    API.append({"id": "api-" + id, "code": code, "words": words, "expect": expect, "fix": fix,
                "command": "api:" + command})


# -- top level ---------------------------------------------------------------------------------------------------
F = "cli/__init__.py"
cli("top-none", "", "command|COMMAND", fix=F)
cli("top-unknown", "trian --out o", "trian|command|choose", fix=F)
cli("top-upper", "TRAIN --out o", "TRAIN|command|choose", fix=F)
cli("top-empty", "''", "command|choose", fix=F)
ok("top-version", "--version", fix=F)  # prints the version (it once answered that a command was required)
cli("top-dashdash", "-- train --out o", "command|choose|train", fix=F)

# -- train: numbers ---------------------------------------------------------------------------------------------
F = "training/config.py"
for name, value, words in [
    ("hidden-zero", "--hidden 0", "hidden"), ("hidden-float", "--hidden 2.5", "hidden"),
    ("hidden-sci", "--hidden 1e1", "hidden"), ("hidden-empty", "--hidden ''", "hidden"),
    ("hidden-nan", "--hidden nan", "hidden"), ("hidden-hex", "--hidden 0x10", "hidden"),
    ("batch-zero", "--batch 0", "batch"), ("batch-neg", "--batch -1", "batch"),
    ("batch-inf", "--batch inf", "batch"), ("batch-float", "--batch 1.5", "batch"),
    ("lr-nan", "--lr nan", "lr"), ("lr-inf", "--lr inf", "lr"), ("lr-neg", "--lr -0.1", "lr"),
    ("lr-zero", "--lr 0", "lr"), ("lr-overflow", "--lr 1e400", "lr"), ("lr-word", "--lr fast", "lr"),
    ("lr-empty", "--lr ''", "lr"), ("clip-nan", "--clip nan", "clip"), ("clip-neg", "--clip -1", "clip"),
    ("clip-zero", "--clip 0", "clip"), ("clip-inf", "--clip inf", "clip"),
    ("steps-zero", "--steps 0", "steps"), ("steps-neg", "--steps -5", "steps"), ("steps-sci", "--steps 1e3", "steps"),
    ("steps-int32", "--steps 99999999999999999999", "steps"), ("steps-2pow31", "--steps 2147483648", "steps"),
    ("eval-every-zero", "--eval-every 0", "eval-every|eval_every"),
    ("eval-every-neg", "--eval-every -1", "eval-every|eval_every"),
    ("eval-size-zero", "--eval-size 0", "eval-size|eval_size"),
    ("eval-size-neg", "--eval-size -4", "eval-size|eval_size"),
    ("seed-word", "--seed abc", "seed"),
    ("seed-float", "--seed 1.5", "seed"), ("seed-2pow64", "--seed 18446744073709551617",
                                                                            "seed"),
    ("devices-zero", "--devices 0", "devices"), ("devices-two", "--devices 2", "devices"),
    ("devices-word", "--devices all", "devices"),
    ("update-every-zero", "--update-every 0", "update-every|update_every"),
    ("update-every-neg", "--update-every -2", "update-every|update_every"),
    ("update-every-float", "--update-every 1.5", "update-every|update_every"),
]:
    # the option given last overrides the tiny defaults before it
    cli(f"train-{name}", f"train {TRAIN} {value} --out o", words, fix=F)
ok("train-eval-every-beyond", f"train {TRAIN} --eval-every 3 --out o", fix=F)
ok("train-update-every-rounds", f"train {TRAIN} --update-every 3 --out o", fix=F)
ok("train-hidden-spaces", f"train {TRAIN} --hidden ' 4 ' --out o", fix=F)
ok("train-seed-big", f"train {TRAIN} --seed 4294967295 --out o", fix=F)

# -- train: names and options -------------------------------------------------------------------------------------
for name, value, words in [
    ("trace-dtype-int8", "--trace-dtype int8", "trace-dtype|trace_dtype"),
    ("trace-dtype-f128", "--trace-dtype float128", "trace-dtype|trace_dtype"),
    ("trace-dtype-empty", "--trace-dtype ''", "trace-dtype|trace_dtype"),
    ("trace-dtype-bptt", "--trace-dtype bfloat16 --method bptt", "trace|bptt"),
    ("optimizer-adagrad", "--optimizer adagrad", "optimizer"), ("optimizer-upper", "--optimizer ADAM", "optimizer"),
    ("optimizer-obgd", "--optimizer obgd", "optimizer"),
    ("task-unknown", "--task parity", "task"),
    ("task-upper", "--task COPY", "task"), ("task-empty", "--task ''", "task"),
    ("task-arg-unknown", "--task-arg width=3", "width"), ("task-arg-zero", "--task-arg max_length=0", "max_length"),
    ("task-arg-neg", "--task-arg max_length=-1", "max_length"),
    ("task-arg-float", "--task-arg max_length=1.5", "max_length"),
    ("task-arg-noeq", "--task-arg max_length", "task-arg|KEY=VALUE|max_length"),
    ("task-arg-nokey", "--task-arg =3", "task-arg|KEY=VALUE|key"),
    ("task-arg-other", "--task-arg delay=5", "delay"),
    ("task-arg-bool", "--task-arg max_length=true", "max_length"),
    ("task-arg-repeat", "--task-arg max_length=3 --task-arg max_length=5", "max_length"),
    ("recall-delay-long", "--task recall --task-arg delay=100 --task-arg episode_length=10", "delay"),
    ("recall-delay-nan", "--task recall --task-arg delay=nan", "delay"),
    ("recall-delay-neg", "--task recall --task-arg delay=-2", "delay"),
    ("sines-patterns-zero", "--task sines --task-arg patterns=0", "patterns"),
    ("sines-waves-neg", "--task sines --task-arg waves=-1", "waves"),
    ("adding-len-one", "--task adding --task-arg sequence_length=1", "sequence_length"),
    ("adding-len-word", "--task adding --task-arg sequence_length=long", "sequence_length"),
    ("mnist1d-train-zero", "--task mnist1d --task-arg train_size=0", "train_size"),
    ("mnist1d-seed-word", "--task mnist1d --task-arg data_seed=x", "data_seed"),
    ("cell-unknown", "--cell lstm", "cell|lstm"), ("cell-upper", "--cell Elman", "cell|Elman"),
    ("cell-empty", "--cell ''", "cell"), ("cell-missing-attr", "--cell rtrl.cells:Nope", "Nope|cell"),
    ("cell-missing-module", "--cell no_such_module:Cell", "no_such_module|cell"),
    ("cell-colon-only", "--cell rtrl.cells:", "cell"), ("cell-no-module", "--cell :Elman", "cell"),
    ("cell-function", "--cell math:sqrt", "cell|sqrt"), ("cell-int-attr", "--cell sys:maxsize", "cell|maxsize"),
    ("cell-network-class", "--cell rtrl.cells:Network", "cell|layers|Network"),
    ("cell-arg-activation", "--cell-arg activation=softmax", "activation"),
    ("cell-arg-activation-empty", "--cell-arg activation=", "activation"),
    ("cell-arg-noeq", "--cell-arg activation", "cell-arg|KEY=VALUE|activation"),
    ("gru-activation", "--cell gru --cell-arg activation=relu", "activation"),
    ("lru-rmin-big", "--cell lru --cell-arg r_min=2", "r_min"),
    ("lru-rmin-above-rmax", "--cell lru --cell-arg r_min=0.9 --cell-arg r_max=0.5", "r_min|r_max"),
    ("lru-phase-nan", "--cell lru --cell-arg max_phase=nan", "max_phase"),
    ("rtu-variant", "--cell rtu --cell-arg variant=bogus", "variant"),
    ("iir2-param", "--cell iir2 --cell-arg parameterisation=bogus", "parameterisation"),
    ("cell-arg-input-size", "--cell-arg input_size=3", "input_size"),
    ("cell-arg-hidden-size", "--cell-arg hidden_size=5", "hidden_size|hidden"),
    ("method-unknown", "--method backprop", "method"), ("method-upper", "--method RTRL", "method"),
    ("method-arg-foreign", "--method-arg truncation=6", "truncation"),
    ("tbptt-trunc-zero", "--method tbptt --method-arg truncation=0", "truncation"),
    ("tbptt-trunc-neg", "--method tbptt --method-arg truncation=-1", "truncation"),
    ("snap-n-zero", "--method snap1 --method-arg n=0", "n"),
    ("snap-n-word", "--method snap1 --method-arg n=abc", "n"),
    ("uoro-seed-word", "--method uoro --method-arg seed=x", "seed"),
    ("closed-form-gru", "--method closed_form --cell gru", "closed_form|gru|GRU"),
    ("diagonal-elman", "--method diagonal --cell elman", "diagonal|elman|Elman|element"),
    ("layer-local-elman", "--method layer_local --cell elman", "layer_local|Network|network"),
    ("layer-local-inner-bptt", "--method layer_local --method-arg inner=bptt", "inner"),
    ("method-arg-trace-dtype", "--method-arg trace_dtype=int32", "trace_dtype"),
    ("bptt-stagger", "--method bptt --stagger", "stagger"),
    ("preset-unknown", "--preset copy6", "preset"), ("preset-empty", "--preset ''", "preset"),
    ("preset-rl", "--preset memory-chain", "preset|memory-chain"),
    ("clip-and-noclip", "--clip 0.5 --no-clip", "clip"),
    ("opt-of-rl-envs", "--envs 4", "envs|unrecognized"), ("opt-of-rl-gamma", "--gamma 0.9", "gamma|unrecognized"),
    ("opt-of-rl-env", "--env tmaze", "env|unrecognized"), ("opt-of-rl-dtype", "--dtype float64", "dtype|unrecognized"),
    ("opt-of-fidelity", "--lengths 3", "lengths|unrecognized"), ("opt-unknown", "--epochs 3", "epochs|unrecognized"),
    ("extra-positional", "extra", "extra|unrecognized"),
]:
    fix = "training/config.py"
    if name.startswith(("opt-", "extra")):
        fix = "cli/train.py"
    elif name.startswith("clip-and"):
        fix = "run/options.py"
    elif name.startswith(("cell-", "gru-", "lru-", "rtu-", "iir2-")):
        fix = "cells/lookup.py make_cell / training/assemble.py"
    elif name.startswith(("method", "tbptt", "snap", "uoro", "closed", "diag", "layer", "bptt", "trace")):
        fix = "methods / training/assemble.py"
    elif name.startswith(("task", "recall", "sines", "adding", "mnist")):
        fix = "training/tasks"
    cli(f"train-{name}", f"train {TRAIN} {value} --out o", words, fix=fix)
ok("train-cell-import-registered", f"train {TRAIN} --cell rtrl.cells:Elman --out o", fix="training/config.py")
ok("train-trace-dtype-f16", f"train {TRAIN} --trace-dtype float16 --out o", fix="methods")
ok("train-preset-override", f"train --preset copy5 {TRAIN} --out o", fix="training/presets.py")
ok("train-repeat-out", f"train {TRAIN} --out a --out o", fix="cli/train.py")
ok("train-noclip-twice", f"train {TRAIN} --no-clip --no-clip --out o", fix="cli/train.py")
ok("train-bptt-update", f"train {TRAIN} --method bptt --task-arg max_length=2 --update-every 3 --out o",
   fix="training/trainer.py")

# -- train: the run folder -----------------------------------------------------------------------------------------
F = "run/folder.py"
cli("train-out-missing", f"train {TRAIN}", "out", fix="cli/train.py")
cli("train-out-empty", f"train {TRAIN} --out ''", "out", fix=F)
cli("train-out-file", f"train {TRAIN} --out f.txt", "f.txt|out", fix=F, files={"f.txt": "hello"})
cli("train-out-proc", f"train {TRAIN} --out /proc/rtrl-audit", "rtrl-audit|out|/proc", fix=F)
cli("train-out-under-file", f"train {TRAIN} --out f.txt/run", "f.txt|out", fix=F, files={"f.txt": "hello"})
cli("train-out-foreign-dir", f"train {TRAIN} --out d", "d|run|out", fix=F, files={"d/notes.txt": "mine"})
cli("train-out-rl-run", f"train {TRAIN} --out r", "r|rl|run", fix=F, folders={"r": "rl"})
cli("train-out-other-run", f"train {TRAIN} --hidden 6 --out r", "overwrite", fix=F, folders={"r": "run"})
cli("train-out-damaged-config", f"train {TRAIN} --out r", "config", fix=F, folders={"r": "run"},
    edits=[("r", ("truncate", "config.json", 20))])
ok("train-out-rl-overwrite-kind", f"train {TRAIN} --out r --overwrite", fix=F, folders={"r": "rl"}, replaces=True)
ok("train-out-other-overwrite", f"train {TRAIN} --hidden 6 --out r --overwrite", fix=F, folders={"r": "run"},
   replaces=True)
ok("train-out-same-run", f"train {TRAIN} --out r", fix=F, folders={"r": "run"})
ok("train-out-longer", f"train {TRAIN} --steps 4 --out r", fix=F, folders={"r": "run"})
ok("train-out-unicode", f"train {TRAIN} --out 'rüns/ñame é'", fix=F)
ok("train-out-trailing-slash", f"train {TRAIN} --out o/", fix=F)
ok("train-out-empty-dir", f"train {TRAIN} --out d", fix=F, dirs=["d"])
cli("train-out-dot", f"train {TRAIN} --out .", "overwrite|run|out|.", fix=F, files={"mine.txt": "x"})

# -- rl ------------------------------------------------------------------------------------------------------------
F = "rl/config.py"
for name, value, words in [
    ("env-unknown", "--env pong", "env"), ("env-upper", "--env TMAZE", "env"), ("env-empty", "--env ''", "env"),
    ("tmaze-length-zero", "--env-arg length=0", "length"), ("tmaze-length-neg", "--env-arg length=-3", "length"),
    ("env-arg-unknown", "--env-arg corridor=3", "corridor"), ("env-arg-noeq", "--env-arg length", "env-arg|KEY=VALUE"),
    ("tmaze-max-steps-short", "--env-arg length=10 --env-arg max_steps=2", "max_steps"),
    ("tmaze-length-huge", "--env-arg length=1000000000000", "length"),
    ("gamma-big", "--gamma 1.5", "gamma"),
    ("gamma-neg", "--gamma -0.1", "gamma"), ("gamma-nan", "--gamma nan", "gamma"),
    ("lam-big", "--lam 2", "lam"), ("lam-nan", "--lam nan", "lam"), ("entropy-neg", "--entropy -1", "entropy"),
    ("entropy-inf", "--entropy inf", "entropy"), ("value-coef-neg", "--value-coef -1", "value-coef|value_coef"),
    ("value-coef-nan", "--value-coef nan", "value-coef|value_coef"),
    ("kappa-zero", "--optimizer obgd --kappa 0", "kappa"), ("kappa-neg", "--optimizer obgd --kappa -1", "kappa"),
    ("truncation-zero", "--method tbptt --truncation 0", "truncation"),
    ("truncation-neg", "--truncation -1", "truncation"),
    ("method-bptt", "--method bptt", "method|bptt"), ("method-unknown", "--method a2c", "method"),
    ("closed-form-gru", "--method closed_form --cell gru", "closed_form|gru|GRU"),
    ("diagonal-elman", "--method diagonal", "diagonal|Elman|elman|element"),
    ("envs-zero", "--envs 0", "envs"), ("envs-neg", "--envs -2", "envs"), ("steps-zero", "--steps 0", "steps"),
    ("steps-int32", "--steps 5000000000", "steps"),
    ("record-every-zero", "--record-every 0", "record-every|record_every"),
    ("fidelity-every-neg", "--fidelity-every -1", "fidelity-every|fidelity_every"),
    ("update-every-zero", "--update-every 0", "update-every|update_every"),
    ("dtype-f16", "--dtype float16", "dtype"), ("dtype-int", "--dtype int32", "dtype"), ("dtype-empty", "--dtype ''",
                                                                                       "dtype"),
    ("seed-word", "--seed x", "seed"), ("devices-zero", "--devices 0", "devices"), ("devices-two", "--devices 2",
                                                                                     "devices"),
    ("preset-unknown", "--preset memory-chains", "preset"), ("preset-train", "--preset copy5", "preset|copy5"),
    ("hidden-zero", "--hidden 0", "hidden"), ("hidden-neg", "--hidden -1", "hidden"),
    ("cell-unknown", "--cell lstm", "cell|lstm"), ("lru-rmin", "--cell lru --cell-arg r_min=5", "r_min"),
    ("cell-arg-unknown-elman", "--cell-arg gain=2", "gain"),
    ("lr-zero", "--lr 0", "lr"), ("lr-neg", "--lr -1", "lr"), ("lr-nan", "--lr nan", "lr"),
    ("clip-neg", "--clip -1", "clip"), ("clip-nan", "--clip nan", "clip"),
    ("opt-of-train-task", "--task copy", "task|unrecognized"),
    ("opt-of-train-batch", "--batch 2", "batch|unrecognized"),
    ("opt-of-train-method-arg", "--method-arg n=2", "method-arg|unrecognized"),
    ("opt-of-train-stagger", "--stagger", "stagger|unrecognized"),
    ("optimizer-unknown", "--optimizer rmsprop", "optimizer"),
    ("memory-chain-length-zero", "--env memory-chain --env-arg memory_length=0", "memory_length"),
    ("cartpole-unknown-field", "--env cartpole --env-arg mass=1", "mass"),
]:
    fix = F
    if name.startswith(("env", "tmaze", "memory", "cartpole")):
        fix = "rl/envs"
    elif name.startswith("opt-of"):
        fix = "cli/rl.py"
    cli(f"rl-{name}", f"rl {RL} {value} --out o", words, fix=fix)
cli("rl-out-train-run", f"rl {RL} --out r", "r|run|train", fix="run/folder.py", folders={"r": "run"})
cli("rl-out-file", f"rl {RL} --out f.txt", "f.txt|out", fix="run/folder.py", files={"f.txt": "x"})
cli("rl-out-other", f"rl {RL} --hidden 6 --out r", "overwrite", fix="run/folder.py", folders={"r": "rl"})
ok("rl-out-same", f"rl {RL} --out r", fix="run/folder.py", folders={"r": "rl"})
ok("rl-fidelity-every", f"rl {RL} --fidelity-every 2 --out o", fix="rl/loop.py")
ok("rl-tbptt", f"rl {RL} --method tbptt --truncation 2 --out o", fix="rl/loop.py")
ok("rl-obgd", f"rl {RL} --optimizer obgd --out o", fix="rl/loop.py")
ok("rl-record-beyond", f"rl {RL} --record-every 8 --out o", fix="rl/loop.py")
ok("rl-flags-both", f"rl {RL} --normalize-obs --no-normalize-obs --out o", fix="cli/rl.py")

# -- resume --------------------------------------------------------------------------------------------------------
F = "run/folder.py"
R1 = {"r": "run"}
cli("resume-nonexistent", "resume nowhere", "nowhere", fix=F)
cli("resume-file", "resume f.txt", "f.txt", fix=F, files={"f.txt": "x"})
cli("resume-empty", "resume ''", "run|config", fix=F)
cli("resume-cwd", "resume .", "config|run", fix=F)
cli("resume-missing-arg", "resume", "run", fix="cli/train.py")
cli("resume-two-runs", "resume r r", "unrecognized|r", fix="cli/train.py", folders=R1)
cli("resume-out-option", "resume r --out x", "out|unrecognized", fix="cli/train.py", folders=R1)
for name, value, words in [("steps-zero", "--steps 0", "steps"), ("steps-neg", "--steps -1", "steps"),
                           ("steps-word", "--steps abc", "steps"), ("steps-float", "--steps 1.5", "steps"),
                           ("steps-nan", "--steps nan", "steps"), ("devices-zero", "--devices 0", "devices"),
                           ("devices-two", "--devices 2", "devices"), ("devices-word", "--devices x", "devices"),
                           ("steps-huge", "--steps 99999999999999999999", "steps"),
                           ("hidden-option", "--hidden 8", "hidden|unrecognized")]:
    cli(f"resume-{name}", f"resume r {value} --quiet", words, fix=F, folders=R1)
ok("resume-same-steps", "resume r --quiet", fix=F, folders=R1)
ok("resume-longer", "resume r --steps 4 --quiet", fix=F, folders=R1)
ok("resume-rl-longer", "resume r --steps 6 --quiet", fix=F, folders={"r": "rl"})
ok("resume-bptt-longer", "resume r --steps 16 --quiet", fix=F, folders={"r": "bptt"})
ok("resume-torn-metrics", "resume r --steps 4 --quiet", fix=F, folders=R1,
   edits=[("r", ("append", "metrics.jsonl", '{"step": 3, "lo'))])
# damaged config.json
for name, change, words in [
    ("hidden-word", {"hidden": "x"}, "hidden"), ("hidden-neg", {"hidden": -4}, "hidden"),
    ("hidden-other", {"hidden": 8}, "checkpoint|hidden|shape"), ("batch-other", {"batch": 3}, "checkpoint|batch|shape"),
    ("task-unknown", {"task": "nope"}, "task"), ("method-unknown", {"method": "nope"}, "method"),
    ("method-bptt", {"method": "bptt"}, "checkpoint|method"), ("optimizer-sgd", {"optimizer": "sgd"},
                                                                 "checkpoint|optimizer"),
    ("lr-string", {"lr": "nan"}, "lr"),
    ("lr-nan", {"lr": float("nan")}, "lr"), ("steps-huge", {"steps": 1e30}, "steps"),
    ("unknown-key", {"colour": "red"}, "colour"), ("missing-hidden", {"hidden": DELETE}, "hidden"),
    ("cell-args-bad", {"cell_args": {"activation": "bogus"}}, "activation"),
    ("task-args-zero", {"task_args": {"max_length": 0}}, "max_length"), ("seed-word", {"seed": "zero"}, "seed"),
    ("eval-every-zero", {"eval_every": 0}, "eval_every"), ("devices-zero", {"devices": 0}, "devices"),
    ("cell-args-list", {"cell_args": ["activation", "relu"]}, "cell_args"),
    ("cell-other", {"cell": "gru"}, "checkpoint|cell"), ("task-other", {"task": "recall"}, "checkpoint|task|input"),
    ("steps-float", {"steps": 2.5}, "steps"), ("trace-dtype-bad", {"trace_dtype": "int8"}, "trace_dtype"),
]:
    cli(f"resume-config-{name}", "resume r --quiet", words, fix=F, folders=R1, edits=[("r", ("config", change))])
for name, edit, words in [
    ("config-truncated", ("truncate", "config.json", 10), "config"), ("config-empty", ("write", "config.json", ""),
                                                                      "config"),
    ("config-list", ("write", "config.json", "[]"), "config"), ("config-null", ("write", "config.json", "null"),
                                                                "config"),
    ("config-dir", ("remove", "config.json"), "config"),
    ("metrics-garbage", ("append", "metrics.jsonl", "garbage line\n"), "metrics"),
    ("metrics-binary", ("write", "metrics.jsonl", "\x00\x01\x02"), "metrics"),
    ("metrics-list", ("write", "metrics.jsonl", "[1, 2]\n"), "metrics"),
    ("checkpoint-truncated", ("truncate", "checkpoint.npz", 100), "checkpoint"),
    ("checkpoint-text", ("write", "checkpoint.npz", "not a zip"), "checkpoint"),
    ("checkpoint-run8", ("copy_from", "checkpoint.npz", "run8"), "checkpoint"),
    ("checkpoint-rl", ("copy_from", "checkpoint.npz", "rl"), "checkpoint"),
    ("checkpoint-bptt", ("copy_from", "checkpoint.npz", "bptt"), "checkpoint"),
]:
    edits = [("r", edit)]
    if name == "config-dir":
        edits.append(("r", ("mkdir", "config.json")))
    cli(f"resume-{name}", "resume r --steps 4 --quiet", words, fix=F, folders=R1, edits=edits)
# a record past the checkpoint (as a kill between an evaluation and its checkpoint leaves) is rewound
ok("resume-metrics-ahead", "resume r --steps 4 --quiet", fix=F, folders=R1, rewinds=2,
   edits=[("r", ("append", "metrics.jsonl", '{"step": 99, "loss": null, "eval_loss": 1.0, "metric": 0.5, '
                                          '"sequence_accuracy": 0.0, "wall_s": 2.0}\n'))])
cli("resume-metrics-missing", "resume r --steps 4 --quiet", "metrics", fix=F, folders=R1,
    edits=[("r", ("remove", "metrics.jsonl"))])
cli("resume-checkpoint-missing", "resume r --steps 4 --quiet", "checkpoint", fix=F, folders=R1,
    edits=[("r", ("remove", "checkpoint.npz"))])
cli("resume-checkpoint-dir", "resume r --steps 4 --quiet", "checkpoint", fix=F, folders=R1,
    edits=[("r", ("remove", "checkpoint.npz")), ("r", ("mkdir", "checkpoint.npz"))])
cli("resume-only-lock", "resume r --quiet", "config|run", fix=F, folders=R1,
    edits=[("r", ("remove", "config.json")), ("r", ("remove", "metrics.jsonl")), ("r", ("remove", "checkpoint.npz"))])
for name, change, words in [("env-unknown", {"env": "nope"}, "env"), ("dtype-f16", {"dtype": "float16"}, "dtype"),
                            ("hidden-other", {"hidden": 8}, "checkpoint|hidden|shape"),
                            ("envs-other", {"envs": 3}, "checkpoint|envs|shape"),
                            ("gamma-big", {"gamma": 3}, "gamma"), ("env-args-bad", {"env_args": {"length": -1}},
                                                                  "length"),
                            ("method-tbptt", {"method": "tbptt"}, "checkpoint|method")]:
    cli(f"resume-rl-config-{name}", "resume r --steps 6 --quiet", words, fix=F, folders={"r": "rl"},
        edits=[("r", ("config", change))])
cli("resume-rl-checkpoint-train", "resume r --steps 6 --quiet", "checkpoint", fix=F, folders={"r": "rl"},
    edits=[("r", ("copy_from", "checkpoint.npz", "run"))])
cli("resume-rl-metrics-garbage", "resume r --steps 6 --quiet", "metrics", fix=F, folders={"r": "rl"},
    edits=[("r", ("append", "metrics.jsonl", "{{{\n"))])

# -- plot --------------------------------------------------------------------------------------------------------
F = "cli/browse.py"
cli("plot-no-runs", "plot --out p.png", "runs", fix=F)
cli("plot-no-out", "plot r", "out", fix=F, folders=R1)
cli("plot-nonexistent", "plot --out p.png nowhere", "nowhere", fix=F)
cli("plot-file", "plot --out p.png f.txt", "f.txt", fix=F, files={"f.txt": "x"})
cli("plot-out-nodir", "plot --out nodir/p.png r", "nodir|out", fix=F, folders=R1)
cli("plot-out-txt", "plot --out p.txt r", "txt|png|out", fix=F, folders=R1)
cli("plot-out-config", "plot --out r/config.json r", "config.json|out|run", fix=F, folders=R1)
cli("plot-out-checkpoint", "plot --out r/checkpoint.npz r", "checkpoint|out|run", fix=F, folders=R1)
cli("plot-out-dir", "plot --out r r", "out|r", fix=F, folders=R1)
cli("plot-out-empty", "plot --out '' r", "out", fix=F, folders=R1)
cli("plot-out-proc", "plot --out /proc/p.png r", "out|/proc", fix=F, folders=R1)
cli("plot-metrics-garbage", "plot --out p.png r", "metrics", fix=F, folders=R1,
    edits=[("r", ("write", "metrics.jsonl", "nonsense\n"))])
cli("plot-config-damaged", "plot --out p.png r", "config", fix=F, folders=R1,
    edits=[("r", ("truncate", "config.json", 5))])
cli("plot-metrics-missing", "plot --out p.png r", "metrics|record", fix=F, folders=R1,
    edits=[("r", ("remove", "metrics.jsonl"))])
cli("plot-metrics-empty", "plot --out p.png r", "metrics|record", fix=F, folders=R1,
    edits=[("r", ("write", "metrics.jsonl", ""))])
cli("plot-metrics-nan-step", "plot --out p.png r", "metrics|step", fix=F, folders=R1,
    edits=[("r", ("write", "metrics.jsonl", '{"step": "two", "metric": 0.5}\n'))])
cli("plot-steps-option", "plot --out p.png --steps 3 r", "steps|unrecognized", fix=F, folders=R1)
ok("plot-mixed-kinds", "plot --out p.png r q", fix=F, folders={"r": "run", "q": "rl"})
ok("plot-same-twice", "plot --out p.png r r", fix=F, folders=R1)
ok("plot-trailing-slash", "plot --out p.png r/", fix=F, folders=R1)
ok("plot-pdf", "plot --out p.pdf r", fix=F, folders=R1)
ok("plot-torn-last-line", "plot --out p.png r", fix=F, folders=R1,
   edits=[("r", ("append", "metrics.jsonl", '{"step": 3, "lo'))])

# -- inspect --------------------------------------------------------------------------------------------------------
F = "cli/browse.py"
for name, value, words in [
    ("cell-unknown", "--cell lstm", "cell|lstm"), ("cell-empty", "--cell ''", "cell"),
    ("input-zero", "--cell elman --input 0", "input"), ("input-neg", "--cell elman --input -1", "input"),
    ("hidden-zero", "--cell elman --hidden 0", "hidden"), ("hidden-word", "--cell elman --hidden abc", "hidden"),
    ("huge", "--cell elman --input 100000 --hidden 100000", "hidden|input|memory"),
    ("lru-rmin", "--cell lru --cell-arg r_min=-1", "r_min"),
    ("rtu-activation", "--cell rtu --cell-arg activation=bogus",
                                                                 "activation"),
    ("elman-unknown-arg", "--cell elman --cell-arg gain=2", "gain"),
    ("function", "--cell math:sqrt", "cell|sqrt"), ("network", "--cell rtrl.cells:Network", "cell|layers|Network"),
    ("stack", "--cell rtrl.cells:Stack", "cell|layers|Stack"), ("missing-cell", "", "cell"),
    ("steps-option", "--cell elman --steps 2", "steps|unrecognized"),
    ("cell-arg-noeq", "--cell elman --cell-arg activation", "cell-arg|KEY=VALUE"),
    ("input-float", "--cell elman --input 2.5", "input"),
]:
    cli(f"inspect-{name}", f"inspect {value}", words, fix=F)
ok("inspect-gru", "inspect --cell gru --hidden 3 --input 2", fix=F)
ok("inspect-flax", "inspect --cell flax.linen:GRUCell --hidden 3 --input 2", fix=F)
ok("inspect-equinox", "inspect --cell equinox.nn:GRUCell --hidden 3 --input 2", fix=F)

# -- demo, fidelity, bench, list ---------------------------------------------------------------------------------
F = "cli/demo.py"
for name, value, words in [("steps-zero", "--steps 0", "steps"), ("steps-neg", "--steps -1", "steps"),
                           ("steps-word", "--steps many", "steps"), ("out-empty", "--steps 2 --out ''", "out"),
                           ("out-proc", "--steps 2 --out /proc/demo", "out|/proc"),
                           ("hidden-option", "--steps 2 --hidden 4", "hidden|unrecognized")]:
    cli(f"demo-{name}", f"demo --quiet {value}", words, fix=F)
cli("demo-out-file", "demo --quiet --steps 2 --out f.txt", "f.txt|out", fix=F, files={"f.txt": "x"})
cli("demo-out-train-run", "demo --quiet --steps 2 --out r", "overwrite|run", fix=F, folders=R1)
cli("demo-out-rl-run", "demo --quiet --steps 2 --out r", "overwrite|run|rl", fix=F, folders={"r": "rl"})
ok("demo-tiny", "demo --quiet --steps 2 --out d", fix=F)

F = "reports/fidelity.py"
for name, value, words in [
    ("lengths-zero", f"{FID} --lengths 0", "lengths"), ("lengths-neg", f"{FID} --lengths -1", "lengths"),
    ("lengths-word", f"{FID} --lengths abc", "lengths"), ("seeds-zero", f"{FID} --seeds 0", "seeds"),
    ("hidden-zero", f"{FID} --hidden 0", "hidden"), ("input-zero", f"{FID} --input 0", "input"),
    ("methods-empty", f"{FID} --methods", "methods"), ("methods-upper", f"{FID} --methods RTRL", "methods|RTRL"),
    ("out-empty", f"{FID} --methods rtrl --out ''", "out"),
]:
    cli(f"fidelity-{name}", f"fidelity --out o {value}", words, fix=F)
cli("fidelity-out-file", f"fidelity {FID} --methods rtrl --out f.txt", "f.txt|out", fix=F, files={"f.txt": "x"})
cli("fidelity-out-proc", f"fidelity {FID} --methods rtrl --out /proc/fid", "out|/proc", fix=F)
cli("fidelity-markdown-nodir", f"fidelity {FID} --methods rtrl --out o --markdown nodir/f.md", "markdown|nodir",
    fix=F)

cli("fidelity-missing-out", f"fidelity {FID}", "out", fix=F)
# an accepted fidelity run covers every cell: about a minute even at these sizes, more on a loaded machine
ok("fidelity-tiny", f"fidelity {FID} --methods rtrl --out o", fix=F, timeout=300)
ok("fidelity-methods-repeat", f"fidelity {FID} --methods rtrl rtrl --out o", fix=F, timeout=300)
ok("fidelity-methods-tbptt", f"fidelity --out o {FID} --methods tbptt", fix=F, timeout=300)
# beside a run's files (which must stay as they are)
ok("fidelity-out-run", f"fidelity {FID} --methods rtrl --out r", fix=F, folders=R1, timeout=300)

F = "benchmarks/suite.py"
cli("bench-out-file", "bench --quick --out f.txt", "f.txt|out", fix=F, files={"f.txt": "x"})
cli("bench-out-empty", "bench --quick --out ''", "out", fix=F)
cli("bench-out-proc", "bench --quick --out /proc/bench", "out|/proc", fix=F)
# (a new page in an existing folder is documented, and accepting it would run the benchmark: a missing folder instead)
cli("bench-markdown-no-folder", "bench --quick --out o --markdown nodir/page.md", "markdown|nodir", fix=F)
cli("bench-markdown-no-markers", "bench --quick --out o --markdown page.md", "markdown|marker|page.md", fix=F,
    files={"page.md": "# a page without markers\n"})
cli("bench-steps-option", "bench --quick --steps 2", "steps|unrecognized", fix=F)
cli("bench-out-run", "bench --quick --out r", "r|run|out", fix=F, folders=R1)

F = "cli/browse.py"
cli("list-extra", "list cells extra", "extra|SECTION", fix=F)  # `list cells` is a section since round 5
ok("list-cells", "list cells", fix=F)
cli("list-verbose", "list --verbose", "verbose|unrecognized", fix=F)
cli("list-task-option", "list --task copy", "task|unrecognized", fix=F)
ok("list-plain", "list", fix=F)
ok("help-train", "train --help", fix=F)


# -- the Python API --------------------------------------------------------------------------------------------------
API_SETUP = """
import math
import jax
import jax.numpy as jnp
import numpy as np
import rtrl
from rtrl import cells, methods
from rtrl.training.tasks import Adding, Copy, MNIST1D, Recall, Sines
from rtrl.training.trainer import Trainer, make_optimizer
from rtrl.training.config import RunConfig
from rtrl.training.assemble import assemble
import rtrl.rl as rl

key = jax.random.PRNGKey(0)
cell = cells.Elman(2, 3)
params = cell.init(key)
other = cells.Elman(2, 4).init(key)
xs = jnp.ones((4, 2))
ys = jnp.ones((4, 3))


def loss(h, y):
    return jnp.sum((h - y) ** 2)


learner = rtrl.online(cell, "rtrl")
state = learner.init(params)
task = Copy(max_length=2)
tcell = cells.Elman(task.input_size, 4)


def fn_init(k):
    return {"W": jnp.zeros((2, 3))}


def fn_step(p, c, x):
    c = jnp.tanh(x @ p["W"] + c)
    return c, c


def fn_carry():
    return jnp.zeros(3)
"""

F = "sequence.py"
for id, code, words in [
    ("seq-x-width", "rtrl.sequence_grad(cell, params, jnp.ones((4, 5)), ys, loss)", "xs|input"),
    ("seq-x-1d", "rtrl.sequence_grad(cell, params, jnp.ones(4), ys, loss)", "xs"),
    ("seq-targets-short", "rtrl.sequence_grad(cell, params, xs, ys[:3], loss)", "targets"),
    ("seq-empty", "rtrl.sequence_grad(cell, params, jnp.ones((0, 2)), jnp.ones((0, 3)), loss)", "xs|length|empty"),
    ("seq-method-unknown", "rtrl.sequence_grad(cell, params, xs, ys, loss, method='nope')", "method"),
    ("seq-method-int", "rtrl.sequence_grad(cell, params, xs, ys, loss, method=3)", "method"),
    ("seq-params-other", "rtrl.sequence_grad(cell, params, xs, ys, loss) if False else "
                         "rtrl.sequence_grad(cell, other, xs, ys, loss)", "params"),
    ("seq-params-empty", "rtrl.sequence_grad(cell, {}, xs, ys, loss)", "params"),
    ("seq-params-none", "rtrl.sequence_grad(cell, None, xs, ys, loss)", "params"),
    ("seq-cell-string", "rtrl.sequence_grad('elman', params, xs, ys, loss)", "cell"),
    ("seq-cell-class", "rtrl.sequence_grad(cells.Elman, params, xs, ys, loss)", "cell"),
    ("seq-carry-shape", "rtrl.sequence_grad(cell, params, xs, ys, loss, carry=jnp.zeros(5))", "carry"),
    ("seq-carry-int", "rtrl.sequence_grad(cell, params, xs, ys, loss, carry=jnp.zeros(3, jnp.int32))", "carry"),
    ("seq-layer-local-elman", "rtrl.sequence_grad(cell, params, xs, ys, loss, method='layer_local')",
     "layer_local|Network|network"),
    ("seq-diagonal-elman", "rtrl.sequence_grad(cell, params, xs, ys, loss, method='diagonal')", "diagonal|element"),
    ("seq-closed-form-gru", "g = cells.GRU(2, 3); rtrl.sequence_grad(g, g.init(key), xs, ys, loss, "
                            "method='closed_form')", "closed_form|GRU|gru"),
    ("seq-x-string", "rtrl.sequence_grad(cell, params, 'abc', ys, loss)", "xs"),
]:
    api(id, code, words, fix=F, command="sequence_grad")
api("seq-int-inputs", "rtrl.sequence_grad(cell, params, jnp.ones((4, 2), jnp.int32), ys, loss)", expect="ok", fix=F,
    command="sequence_grad")
api("seq-list-inputs", "rtrl.sequence_grad(cell, params, [[1.0, 2.0]] * 4, ys, loss)", expect="ok", fix=F,
    command="sequence_grad")
api("seq-batched-broadcast", "rtrl.sequence_grad(cell, params, jnp.ones((4, 2, 2)), ys, loss)", expect="ok", fix=F,
    command="sequence_grad")
api("seq-tbptt", "rtrl.sequence_grad(cell, params, xs, ys, loss, method='tbptt')", expect="ok", fix=F,
    command="sequence_grad")

F = "online.py"
for id, code, words in [
    ("online-bptt", "rtrl.online(cell, 'bptt')", "bptt|trace|method"),
    ("online-tbptt", "rtrl.online(cell, 'tbptt')", "tbptt|trace|method"),
    ("online-method-int", "rtrl.online(cell, 3)", "method"),
    ("online-none", "rtrl.online(None)", "cell"),
    ("online-class", "rtrl.online(cells.GRU)", "cell"),
    ("init-batch-neg", "learner.init(params, batch_shape=(-1,))", "batch_shape"),
    ("init-batch-float", "learner.init(params, batch_shape=(2.5,))", "batch_shape"),
    ("init-batch-string", "learner.init(params, batch_shape='ab')", "batch_shape"),
    ("init-carry-shape", "learner.init(params, carry=jnp.zeros(5))", "carry"),
    ("init-params-other", "learner.init(other)", "params"),
    ("init-params-none", "learner.init(None)", "params"),
    ("step-x-width", "learner.step(params, state, jnp.ones(3))", "x|input"),
    ("step-x-batched", "learner.step(params, state, jnp.ones((2, 2)))", "x|batch"),
    ("step-x-string", "learner.step(params, state, 'x')", "x"),
    ("step-state-none", "learner.step(params, None, jnp.ones(2))", "state"),
    ("step-traces-none", "learner.step(params, state._replace(traces=None), jnp.ones(2))", "traces|state"),
    ("step-params-other", "learner.step(other, state, jnp.ones(2))", "params"),
    ("step-state-tuple", "learner.step(params, (jnp.zeros(3),), jnp.ones(2))", "state"),
    ("reset-done-batched", "learner.reset(state, jnp.array([True]))", "done"),
    ("reset-done-int", "learner.reset(state, 1)", "done"),
    ("reset-state-none", "learner.reset(None, True)", "state"),
    ("reset-done-string", "learner.reset(state, 'yes')", "done"),
    ("stream-x-width", "rtrl.stream_grad(learner, params, state, jnp.ones((4, 5)), ys, loss)", "xs|x|input"),
    ("stream-learner-none", "rtrl.stream_grad(None, params, state, xs, ys, loss)", "learner"),
    ("stream-state-none", "rtrl.stream_grad(learner, params, None, xs, ys, loss)", "state"),
    ("stream-x-1d", "rtrl.stream_grad(learner, params, state, jnp.ones(4), ys, loss)", "xs"),
    ("stream-batched-state", "rtrl.stream_grad(learner, params, learner.init(params, (2,)), xs, ys, loss)",
     "xs|batch|state"),
    ("stream-params-other", "rtrl.stream_grad(learner, other, state, xs, ys, loss)", "params"),
]:
    api(id, code, words, fix=F, command="online")
api("reset-done-scalar", "learner.reset(state, jnp.asarray(True))", expect="ok", fix=F, command="online")
api("step-under-jit", "jax.jit(learner.step)(params, state, jnp.ones(2))", expect="ok", fix=F, command="online")
# An empty batch is a shape like any other, as in numpy and JAX (vmap over 0 rows): accepted, by decision.
api("init-batch-zero", "learner.init(params, batch_shape=(0,))", expect="ok", fix=F, command="online")
api("online-method-object", "rtrl.online(cell, methods.SnAp(n=2)).init(params)", expect="ok", fix=F,
    command="online")

F = "inspection.py"
for id, code, words in [
    ("inspect-string", "rtrl.inspect('elman')", "cell"),
    ("inspect-params-empty", "rtrl.inspect(cell, params={})", "params"),
    ("inspect-params-other", "rtrl.inspect(cell, params=other)", "params"),
    ("inspect-none", "rtrl.inspect(None)", "cell"),
    ("inspect-learner", "rtrl.inspect(learner)", "cell"),
]:
    api(id, code, words, fix=F, command="inspect")
api("inspect-gru", "str(rtrl.inspect(cells.GRU(2, 3)))", expect="ok", fix=F, command="inspect")

F = "cells"
for id, code, words in [
    ("elman-input-zero", "cells.Elman(0, 3)", "input_size"), ("elman-hidden-zero", "cells.Elman(2, 0)", "hidden_size"),
    ("elman-input-float", "cells.Elman(2.5, 3)", "input_size"),
    ("elman-input-str", "cells.Elman('2', 3)", "input_size"),
    ("elman-activation", "cells.Elman(2, 3, activation='softmax')", "activation"),
    ("elman-hidden-neg", "cells.Elman(2, -1)", "hidden_size"),
    ("elman-input-bool", "cells.Elman(True, 3)", "input_size"),
    ("elman-activation-none", "cells.Elman(2, 3, activation=None)", "activation"),
    ("elman-input-numpy-float", "cells.Elman(np.float32(2.0), 3)", "input_size"),
    ("gru-input-zero", "cells.GRU(0, 3)", "input_size"), ("gru-hidden-none", "cells.GRU(2, None)", "hidden_size"),
    ("iir2-param", "cells.IIR2(2, 3, parameterisation='bogus')", "parameterisation"),
    ("iir2-activation", "cells.IIR2(2, 3, activation='bogus')", "activation"),
    ("aiir2-param", "cells.AdaptiveIIR2(2, 3, parameterisation='x')", "parameterisation"),
    ("elstm-input-neg", "cells.ELSTM(-1, 3)", "input_size"), ("elstm-hidden-float", "cells.ELSTM(2, 2.0)",
                                                              "hidden_size"),
    ("lru-rmin-neg", "cells.LRU(2, 3, r_min=-0.1)", "r_min"), ("lru-rmax-big", "cells.LRU(2, 3, r_max=1.5)", "r_max"),
    ("lru-rmin-gt-rmax", "cells.LRU(2, 3, r_min=0.9, r_max=0.5)", "r_min|r_max"),
    ("lru-phase-nan", "cells.LRU(2, 3, max_phase=float('nan'))", "max_phase"),
    ("lru-rmin-nan", "cells.LRU(2, 3, r_min=float('nan'))", "r_min"),
    ("lru-phase-neg", "cells.LRU(2, 3, max_phase=-1.0)", "max_phase"),
    ("rtu-variant", "cells.RTU(2, 3, variant='bogus')", "variant"),
    ("rtu-activation", "cells.RTU(2, 3, activation='softmax')", "activation"),
    ("rtu-rmin-str", "cells.RTU(2, 3, r_min='a')", "r_min"),
    ("network-empty", "cells.Network()", "layers"),
    ("network-strings", "cells.Network(input_size=2, layers=('elman',))", "layers"),
    ("network-norm", "cells.Network(layers=(cells.Elman(3, 3),), norm='bogus')", "norm"),
    ("network-mix", "cells.Network(layers=(cells.Elman(3, 3),), mix='bogus')", "mix"),
    ("network-input-zero", "cells.Network(input_size=0, layers=(cells.Elman(3, 3),))", "input_size"),
    ("network-widths", "cells.Network(layers=(cells.Elman(3, 3), cells.Elman(4, 3)))", "input_size|width"),
    ("stack-empty", "cells.Stack(())", "layers"),
    ("stack-mismatch", "cells.Stack((cells.Elman(2, 3), cells.Elman(4, 3)))", "input_size|layers"),
    ("stack-strings", "cells.Stack(('elman',))", "layers"),
    ("cell-init-key-str", "cell.init('key')", "key"),
    ("cell-init-dtype-int", "cell.init(key, dtype='int32')", "dtype"),
    ("cell-init-dtype-bogus", "cell.init(key, dtype='float17')", "dtype"),
    ("cell-carry-batch-neg", "cell.initial_carry(batch_shape=(-1,))", "batch_shape"),
    ("cell-carry-dtype-int", "cell.initial_carry(dtype=jnp.int32)", "dtype"),
    ("cell-step-x-width", "cell.step(params, cell.initial_carry(), jnp.ones(5))", "x|input"),
    ("cell-step-params-other", "cell.step(other, cell.initial_carry(), jnp.ones(2))", "params"),
]:
    api(id, code, words, fix=F, command="cells")
api("network-list-layers", "cells.Network(layers=[cells.LRU(3, 3)])", expect="ok", fix=F, command="cells")

F = "methods"
for id, code, words in [
    ("snap-n-zero", "methods.SnAp(n=0)", "n"), ("snap-n-neg", "methods.SnAp(n=-1)", "n"),
    ("snap-n-float", "methods.SnAp(n=1.5)", "n"), ("snap-n-str", "methods.SnAp(n='2')", "n"),
    ("tbptt-zero", "methods.TBPTT(truncation=0)", "truncation"), ("tbptt-neg", "methods.TBPTT(-3)", "truncation"),
    ("tbptt-float", "methods.TBPTT(2.5)", "truncation"), ("uoro-seed-str", "methods.UORO(seed='x')", "seed"),
    ("rtrl-trace-int8", "methods.DenseRTRL(trace_dtype='int8')", "trace_dtype"),
    ("rtrl-trace-f128", "methods.DenseRTRL(trace_dtype='float128')", "trace_dtype"),
    ("closed-trace-int", "methods.ClosedForm(trace_dtype=3)", "trace_dtype"),
    ("auto-trace-bogus", "methods.Auto(trace_dtype='x')", "trace_dtype"),
    ("layer-local-inner-int", "methods.LayerLocal(inner=3)", "inner"),
    ("layer-local-inner-bptt", "methods.LayerLocal(inner=methods.BPTT())", "inner"),
    ("resolve-diagonal-elman", "methods.resolve('diagonal', cell)", "diagonal|element"),
    ("resolve-closed-gru", "methods.resolve('closed_form', cells.GRU(2, 3))", "closed_form|GRU"),
    ("resolve-cell-string", "methods.resolve('rtrl', 'elman')", "cell"),
]:
    api(id, code, words, fix=F, command="methods")
api("eprop-bf16", "methods.EProp(trace_dtype='bfloat16')", expect="ok", fix=F, command="methods")

F = "cells/adapters.py"
for id, code, words in [
    ("fn-input-zero", "cells.from_function(fn_init, fn_step, fn_carry, input_size=0, hidden_size=3)", "input_size"),
    ("fn-hidden-neg", "cells.from_function(fn_init, fn_step, fn_carry, input_size=2, hidden_size=-1)", "hidden_size"),
    ("fn-input-str", "cells.from_function(fn_init, fn_step, fn_carry, input_size='2', hidden_size=3)", "input_size"),
    ("fn-carry-size", "cells.from_function(fn_init, fn_step, lambda: jnp.zeros(4), input_size=2, hidden_size=3)",
     "carry|hidden_size"),
    ("fn-step-single", "cells.from_function(fn_init, lambda p, c, x: c, fn_carry, input_size=2, hidden_size=3)",
     "step_fn"),
    ("fn-init-string", "cells.from_function(lambda k: 'params', fn_step, fn_carry, input_size=2, hidden_size=3)",
     "init_fn|params"),
    ("fn-hidden-mismatch", "cells.from_function(fn_init, fn_step, fn_carry, input_size=2, hidden_size=5)",
     "hidden_size|carry"),
    ("fn-input-mismatch", "cells.from_function(fn_init, fn_step, fn_carry, input_size=7, hidden_size=3)",
     "input_size"),
    ("fn-name-int", "cells.from_function(fn_init, fn_step, fn_carry, input_size=2, hidden_size=3, name=5)", "name"),
    ("fn-step-wrong-h", "cells.from_function(fn_init, lambda p, c, x: (c, jnp.zeros(7)), fn_carry, input_size=2, "
                        "hidden_size=3)", "step_fn|h|hidden_size"),
    ("flax-dense", "import flax.linen as nn; cells.from_flax(nn.Dense(3), input_size=2)", "module"),
    ("flax-input-zero", "import flax.linen as nn; cells.from_flax(nn.GRUCell(features=3), input_size=0)",
     "input_size"),
    ("flax-input-str", "import flax.linen as nn; cells.from_flax(nn.GRUCell(features=3), input_size='2')",
     "input_size"),
    ("flax-string", "cells.from_flax('GRUCell', input_size=2)", "module"),
    ("flax-class", "import flax.linen as nn; cells.from_flax(nn.GRUCell, input_size=2)", "module"),
    ("flax-no-input", "import flax.linen as nn; cells.from_flax(nn.GRUCell(features=3))", "input_size"),
    ("eqx-linear", "import equinox as eqx; cells.from_equinox(eqx.nn.Linear(2, 3, key=key))", "module"),
    ("eqx-lambda", "cells.from_equinox(lambda x, s: s)", "module"),
    ("eqx-class", "import equinox as eqx; cells.from_equinox(eqx.nn.GRUCell)", "module"),
    ("nnx-string", "cells.from_nnx('GRUCell')", "module"),
    ("nnx-linen", "import flax.linen as nn; cells.from_nnx(nn.GRUCell(features=3))", "module"),
]:
    api(id, code, words, fix=F, command="adapters")
api("eqx-gru-ok", "import equinox as eqx; c = cells.from_equinox(eqx.nn.GRUCell(2, 3, key=key)); "
    "rtrl.sequence_grad(c, c.init(key), xs, ys, loss)", expect="ok", fix=F, command="adapters")
api("flax-gru-ok", "import flax.linen as nn; c = cells.from_flax(nn.GRUCell(features=3), input_size=2); "
    "rtrl.sequence_grad(c, c.init(key), xs, ys, loss)", expect="ok", fix=F, command="adapters")

F = "training"  # a RunConfig checks each field; assemble(config) checks them together and builds the parts
for id, code, words in [
    ("trainer-method", "Trainer(task, tcell, 'nope')", "method"),
    ("trainer-update-float", "Trainer(task, tcell, update_every=2.5)", "update_every"),
    ("trainer-eval-neg", "Trainer(task, tcell, eval_size=-1)", "eval_size"),
    ("trainer-devices-zero", "Trainer(task, tcell, batch=2, devices=0)", "devices"),
    ("trainer-devices-many", "Trainer(task, tcell, batch=2, devices=5)", "devices"),
    ("trainer-seed-str", "Trainer(task, tcell, batch=2, seed='x')", "seed"),
    ("trainer-optimizer-str", "Trainer(task, tcell, batch=2, optimizer='adam')", "optimizer"),
    ("trainer-task-str", "Trainer('copy', tcell)", "task"),
    ("trainer-cell-str", "Trainer(task, 'elman')", "cell"),
    ("trainer-stagger-str", "Trainer(task, tcell, batch=2, stagger='yes')", "stagger"),
    ("trainer-train-multiple", "t = Trainer(task, tcell, batch=2, update_every=2); t.train(t.init(), 3)",
     "n_steps|multiple|update_every"),
    ("trainer-train-neg", "t = Trainer(task, tcell, batch=2); t.train(t.init(), -1)", "n_steps|steps"),
    ("trainer-evaluate-none", "t = Trainer(task, tcell, batch=2, eval_size=2); t.evaluate(None)", "params"),
    ("trainer-evaluate-other", "t = Trainer(task, tcell, batch=2, eval_size=2); t.evaluate({'cell': other})",
     "params"),
    ("make-opt-name", "make_optimizer('adagrad')", "optimizer|name|adam"),
    ("make-opt-lr-neg", "make_optimizer(lr=-1.0)", "lr"),
    ("make-opt-clip-neg", "make_optimizer(clip=-1.0)", "clip"),
    ("make-opt-lr-nan", "make_optimizer(lr=float('nan'))", "lr"),
    ("runconfig-hidden", "RunConfig(hidden=0)", "hidden"),
    ("runconfig-task", "RunConfig(task='nope')", "task"),
    ("runconfig-lr-nan", "RunConfig(lr=float('nan'))", "lr"),
    ("runconfig-steps-bool", "RunConfig(steps=True)", "steps"),
    ("runconfig-cell-args-str", "RunConfig(cell_args='activation=relu')", "cell_args"),
    ("runconfig-devices-batch", "RunConfig(batch=2, devices=3)", "devices|batch"),
    ("runconfig-eval-every", "RunConfig(eval_every=0)", "eval_every"),
    ("runconfig-bptt-stagger", "assemble(RunConfig(method='bptt', stagger=True))", "stagger"),
    ("runconfig-trace-dtype", "RunConfig(trace_dtype='int8')", "trace_dtype"),
    ("runconfig-from-list", "RunConfig.from_dict([])", "object|configuration"),
    ("runconfig-from-unknown", "RunConfig.from_dict({'bogus': 1})", "bogus"),
    ("runconfig-optimizer-obgd", "RunConfig(optimizer='obgd')", "optimizer"),
    ("runconfig-seed-huge", "RunConfig(seed=2 ** 70)", "seed"),
    ("runconfig-task-args-bad", "assemble(RunConfig(task_args={'max_length': 'x'}))", "max_length"),
    ("copy-zero", "Copy(max_length=0)", "max_length"), ("copy-str", "Copy(max_length='8')", "max_length"),
    ("recall-delay-long", "Recall(delay=60, episode_length=50)", "delay"),
    ("recall-delay-neg", "Recall(delay=-1)", "delay"), ("adding-zero", "Adding(sequence_length=0)", "sequence_length"),
    ("sines-patterns", "Sines(patterns=0)", "patterns"), ("sines-waves", "Sines(waves=0)", "waves"),
    ("sines-length", "Sines(episode_length=1)", "episode_length"),
    ("mnist1d-train", "MNIST1D(train_size=0)", "train_size"),
]:
    api(id, code, words, fix=F, command="training")
api("trainer-tiny-ok", "t = Trainer(task, tcell, batch=2, eval_size=2); s = t.init(); t.train(s, 2)", expect="ok",
    fix=F, command="training")

F = "rl"  # likewise an RLConfig, its parts checked together by rl.assemble
for id, code, words in [
    ("rlconfig-gamma", "rl.RLConfig(gamma=1.5)", "gamma"), ("rlconfig-lam", "rl.RLConfig(lam=-0.1)", "lam"),
    ("rlconfig-envs", "rl.RLConfig(envs=0)", "envs"), ("rlconfig-dtype", "rl.RLConfig(dtype='float16')", "dtype"),
    ("rlconfig-env", "rl.RLConfig(env='nope')", "env"),
    ("rlconfig-method-bptt", "rl.assemble(rl.RLConfig(method='bptt'))", "method"),
    ("rlconfig-truncation", "rl.RLConfig(truncation=0)", "truncation"),
    ("rlconfig-optimizer", "rl.RLConfig(optimizer='adagrad')", "optimizer"),
    ("rlconfig-kappa", "rl.RLConfig(kappa=0)", "kappa"), ("rlconfig-record", "rl.RLConfig(record_every=0)",
                                                          "record_every"),
    ("rlconfig-cell-int", "rl.RLConfig(cell=3)", "cell"), ("rlconfig-cell-args", "rl.RLConfig(cell_args='x')",
                                                           "cell_args"),
    ("rlconfig-fidelity", "rl.RLConfig(fidelity_every=-1)", "fidelity_every"),
    ("rlconfig-entropy-nan", "rl.RLConfig(entropy=float('nan'))", "entropy"),
    ("rlconfig-envs-devices", "rl.RLConfig(envs=3, devices=2)", "devices|envs"),
    ("rl-agent-length", "rl.OnlineActorCritic(rl.RLConfig(env_args={'length': 0}, hidden=4, envs=2))", "length"),
    ("rl-agent-env-arg-unknown", "rl.OnlineActorCritic(rl.RLConfig(env_args={'width': 3}, hidden=4, envs=2))",
     "width"),
    ("tmaze-zero", "rl.TMaze(length=0)", "length"), ("tmaze-neg", "rl.TMaze(length=-1)", "length"),
    ("tmaze-max-short", "rl.TMaze(length=5, max_steps=2)", "max_steps"),
    ("tmaze-float", "rl.TMaze(length=2.5)", "length"),
    ("rl-make-unknown", "rl.make('nope')", "env|nope"),
    ("obgd-lr-neg", "rl.obgd(learning_rate=-1.0)", "learning_rate"),
    ("obgd-lr-inf", "rl.obgd(learning_rate=float('inf'))", "learning_rate"),
    ("obgd-kappa-nan", "rl.obgd(kappa=float('nan'))", "kappa"), ("obgd-kappa-zero", "rl.obgd(kappa=0.0)", "kappa"),
    ("rl-train-config-dict", "rl.train({'env': 'tmaze'})", "config"),
]:
    api(id, code, words, fix="optim.py" if id.startswith("obgd") else F, command="rl")
api("rl-train-tiny-ok", "rl.train(rl.RLConfig(hidden=4, envs=2, steps=4, record_every=2))", expect="ok", fix=F,
    command="rl")


# -- issue 34: run folders that name code, Gymnasium options and faulty environments, sizes, run files, the API --
# A module beside the run folder (the case's working folder is on sys.path under `python -m rtrl`) that leaves a
# marker when imported; ``absent`` says the marker must not appear (its import is classed silent).
EVIL = {"evil34.py": "open('IMPORTED', 'w').close()\nimport os\nos.environ['EVIL34'] = '1'\n"}
GYM = "--steps 4 --hidden 4 --envs 2 --record-every 2 --quiet"
# Gymnasium environments that fail in each way, registered by a module the command line names (so allowed).
BAD_ENVS = {"badenv34.py": '''
import gymnasium as gym
import numpy as np
from gymnasium import spaces


class Base(gym.Env):
    observation_space = spaces.Box(-1.0, 1.0, (3,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self, fault="", at=0, **kwargs):
        self.fault, self.at, self.t = fault, at, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if self.fault == "reset":
            raise RuntimeError("reset broke")
        self.t = 0
        return np.zeros(5 if self.fault == "shape" else 3, np.float32), {}

    def step(self, action):
        self.t += 1
        if self.fault == "step" and self.t > self.at:
            raise RuntimeError("step broke")
        obs = np.zeros(3, np.float32)
        reward = 0.0
        if self.t > self.at:
            if self.fault == "nan_reward":
                reward = float("nan")
            elif self.fault == "inf_reward":
                reward = float("inf")
            elif self.fault == "none_reward":
                reward = None
            elif self.fault == "nan_obs":
                obs[:] = np.nan
        return obs, reward, False, self.t >= 5, {}


class Raises(Base):
    def __init__(self, **kwargs):
        raise RuntimeError("constructor broke")


gym.register("Bad-v0", entry_point=Base)
gym.register("Raises-v0", entry_point=Raises)
'''}
F = "cells/lookup.py"
for id, edit in [("cell", {"cell": "evil34:Cell"}), ("env", {"env": "gymnasium:evil34:CartPole-v1"}),
                 ("method", {"method": "evil34:Method"}), ("task", {"task": "evil34:Task"})]:
    template = "rl" if id == "env" else "run"
    cli(f"i34-{id}-module-resume", f"resume {template} --steps 8 --quiet", "allow-import|method|task", fix=F,
        folders={template: template}, edits=[(template, ("config", edit))], files=EVIL, absent=["IMPORTED"])
    cli(f"i34-{id}-module-plot", f"plot {template} --out p.png", "method|task", fix=F,
        expect="ok" if id in ("cell", "env") else "refuse",
        folders={template: template}, edits=[(template, ("config", edit))], files=EVIL, absent=["IMPORTED"])
cli("i34-env-module-rl-out", f"rl --env gymnasium:CartPole-v1 {GYM} --out gym", "allow-import|different", fix=F,
    folders={"gym": "gym"}, edits=[("gym", ("config", {"env": "gymnasium:evil34:CartPole-v1"}))], files=EVIL,
    absent=["IMPORTED"])
cli("i34-env-module-resume-env-var", "resume gym --steps 8 --quiet", "allow-import", fix=F,
    folders={"gym": "gym"}, edits=[("gym", ("config", {"env": "gymnasium:evil34:CartPole-v1"}))], files=EVIL,
    absent=["IMPORTED"], env={"RTRL_ALLOW_IMPORT": "evil34:Other"})
ok("i34-env-module-allowed", "resume gym --steps 8 --quiet --allow-import evil34:CartPole-v1", fix=F,
   folders={"gym": "gym"}, edits=[("gym", ("config", {"env": "gymnasium:evil34:CartPole-v1"}))], files=EVIL)
ok("i34-network-resume", "resume net --steps 8 --quiet", fix=F, folders={"net": "net"})
ok("i34-network-plot", "plot net --out p.png", fix=F, folders={"net": "net"})
ok("i34-gym-plot", "plot gym rl --out p.png", fix=F, folders={"gym": "gym", "rl": "rl"})

F = "rl/envs/gymnasium_env.py"
for id, arg in [("zero", "max_episode_steps=0"), ("neg", "max_episode_steps=-5"), ("word", "max_episode_steps=ten"),
                ("float", "max_episode_steps=2.5"), ("bool", "max_episode_steps=true"),
                ("json", "'max_episode_steps={\"a\": 1}'"), ("null", "max_episode_steps=null")]:
    cli(f"i34-gym-max-steps-{id}", f"rl --env gymnasium:CartPole-v1 {GYM} --env-arg {arg} --out o",
        "max_episode_steps", fix=F)
cli("i34-gym-preset-max-steps", f"rl --preset popgym-repeat-first {GYM} --env-arg max_episode_steps=0 --out o",
    "max_episode_steps", fix=F)
for id, env, arg, words in [
    ("map-name", "FrozenLake-v1", "map_name=9x9", "map_name"),
    ("slippery-word", "FrozenLake-v1", "is_slippery=maybe", "is_slippery"),
    ("render-human", "CartPole-v1", "render_mode=human", "render_mode"),
    ("render-bogus", "CartPole-v1", "render_mode=bogus", "render_mode"),
    ("unknown-option", "CartPole-v1", "wind=3", "wind"),
    ("labyrinth", "popgym-LabyrinthEscapeEasy-v0", "", "mazelib"),
]:
    cli(f"i34-gym-{id}", f"rl --env gymnasium:{env} {GYM} {'--env-arg ' + arg if arg else ''} --out o", words, fix=F)
for id, fault, words in [("ctor", "", "constructor broke|Raises"), ("reset", "reset", "reset"),
                         ("shape", "shape", "observation"), ("step0", "step", "step"),
                         ("nan-reward", "nan_reward", "reward"), ("inf-reward", "inf_reward", "reward"),
                         ("none-reward", "none_reward", "reward"), ("nan-obs", "nan_obs", "observation")]:
    env = "gymnasium:badenv34:Raises-v0" if id == "ctor" else "gymnasium:badenv34:Bad-v0"
    arg = f"--env-arg fault={fault}" if fault else ""
    cli(f"i34-gym-fault-{id}", f"rl --env {env} {arg} {GYM} --out o", words, fix=F, files=BAD_ENVS)
# a run that fails after its first record is a failure, not a refusal: exit status 1 (as a divergence), the run
# folder kept with its last good checkpoint
cli("i34-gym-fault-step-late", f"rl --env gymnasium:badenv34:Bad-v0 --env-arg fault=step --env-arg at=3 {GYM} "
    "--out o", "step", fix=F, files=BAD_ENVS, status=1, keeps=True)

F = "training/tasks"
for id, cmd in [("evidence-delay", "--task evidence --task-arg delay=100000000"),
                ("store-recall-length", "--task store_recall --task-arg episode_length=50000000"),
                ("recall-length", "--task recall --task-arg episode_length=200000000"),
                ("copy-length", "--task copy --task-arg max_length=300000000"),
                ("adding-length", "--task adding --task-arg sequence_length=400000000")]:
    cli(f"i34-size-{id}", f"train {TRAIN} {cmd} --out o", "memory|needs|at most|steps", fix=F, timeout=90)

F = "run/folder.py"
for id, file in [("metrics", "metrics.jsonl"), ("checkpoint", "checkpoint.npz"), ("config", "config.json")]:
    cli(f"i34-symlink-{id}", "resume run --steps 8 --quiet", "symlink|link", fix=F,
        folders={"run": "run", "other": "run"}, edits=[("run", ("symlink", file, f"../other/{file}"))])
for id, line in [("step-true", '{"step": true, "loss": 1.0, "metric": 0.5, "wall_s": 1.0}'),
                 ("step-neg", '{"step": -4, "loss": 1.0, "metric": 0.5, "wall_s": 1.0}'),
                 ("metric-str", '{"step": 4, "loss": 1.0, "metric": "high", "wall_s": 1.0}'),
                 ("metric-list", '{"step": 4, "loss": 1.0, "metric": [1, 2], "wall_s": 1.0}')]:
    for command in ("resume run --steps 8 --quiet", "plot run --out p.png"):
        cli(f"i34-record-{id}-{command.split()[0]}", command, "metrics.jsonl", fix=F, folders={"run": "run"},
            edits=[("run", ("append", "metrics.jsonl", line + "\n"))])
cli("i34-record-duplicate", "plot run --out p.png", "metrics.jsonl", fix=F, folders={"run": "run"},
    edits=[("run", ("duplicate_last", "metrics.jsonl"))])
cli("i34-record-order", "plot run --out p.png", "metrics.jsonl", fix=F, folders={"run": "run"},
    edits=[("run", ("reverse", "metrics.jsonl"))])
cli("i34-fifo-checkpoint", "resume run --steps 8 --quiet", "checkpoint.npz", fix=F, folders={"run": "run"},
    edits=[("run", ("fifo", "checkpoint.npz"))], timeout=40)
cli("i34-fifo-plot-out", "plot run --out f.png", "f.png", fix="run/plot.py", folders={"run": "run"}, fifos=["f.png"],
    timeout=40)

F = "api"
cli("i34-preset-twice", f"train --preset copy20 --preset recall50 {TRAIN} --out o", "preset", fix="run/options.py")
cli("i34-lr-negative", f"train {TRAIN} --lr -1e-3 --out o", "positive", fix="run/options.py")
cli("i34-rl-lr-negative", f"rl {RL} --lr -1e-3 --out o", "positive", fix="run/options.py")
cli("i34-manifolds-one-class", f"train {TRAIN} --task manifolds --task-arg classes=1 --out o", "classes",
    fix="training/tasks")
for id, code, words in [
    ("bind-name", "methods.DenseRTRL().bind('elman')", "cell"),
    ("bind-class", "methods.DenseRTRL().bind(cells.Elman)", "cell|class"),
    ("bind-none", "methods.DenseRTRL().bind(None)", "cell"),
    ("bind-other-params", "methods.DenseRTRL().bind(cell, params=other)", "params"),
    ("bind-bptt", "methods.BPTT().bind(cell)", "BPTT|bind|sequence"),
    ("diag-bind-class", "methods.Diagonal().bind(cells.LRU)", "cell|class"),
    ("alif-carry-missing", "c = cells.ALIF(2, 3); p = c.init(key); k = dict(c.initial_carry(())); del k['a']; "
     "c.step(p, k, jnp.ones(2))", "'a'|carry"),
    ("trace-dtype-f64", "methods.DenseRTRL(trace_dtype='float64').bind(cell).init(params, cell.initial_carry(()))",
     "float64|x64"),
    ("nan-input-spiking", "c = cells.LIF(2, 3); rtrl.sequence_grad(c, c.init(key), xs * jnp.nan, ys, loss)",
     "NaN|nan"),
    ("manifolds-one", "from rtrl.training.tasks import TASKS; TASKS['manifolds'](classes=1)", "classes"),
]:
    api("i34-" + id, code, words, fix=F, command="i34")
api("i34-stability-spiking-iir2", "c = cells.SpikingIIR2(2, 3); cells.stability(c, c.init(key))", expect="ok",
    fix=F, command="i34")
