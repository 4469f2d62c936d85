"""A run folder: one training run that can be started, stopped, resumed and compared.

Every kind of run shares it: a training run of ``rtrl train`` (``rtrl.run.training.TrainRun``: a model trained
online on a task) and an online reinforcement-learning run of ``rtrl rl`` (``rtrl.run.rl.RLRun``: ``rtrl.rl``'s
actor-critic). Each kind registers itself in ``KINDS`` (its configuration class, how it assembles and advances);
``Run.create`` and ``Run.open`` pick the kind from the configuration, and ``kind_of_data`` infers it from
``config.json``'s options (once, here). Files in ``runs/NAME/``:

* ``config.json``: the run's configuration, complete (every option its run reads: ``Config.stored``) and resolved:
  a ``RunConfig`` (task, cell, method and their options, sizes, optimiser, budget, seed; ``rtrl.training.assemble``
  turns it back into its parts) or an ``rtrl.rl.RLConfig``; beside the options, ``backend`` and ``device``: where
  the run last computed (``rtrl.provenance.platform``; a folder without them, written before they were, reads and
  resumes as ever);
* ``metrics.jsonl``: one strict-JSON object per evaluation (never ``NaN``): ``step``, ``loss`` (training loss since
  the previous evaluation, ``null`` at step 0), ``metric`` (the task's held-out headline metric), ``eval_loss``,
  any other metric of the task, and ``wall_s`` (seconds of training so far, across resumptions). An RL run's
  records (one every ``record_every`` steps): ``step`` (environment steps per environment), ``return`` (mean
  return of the episodes that ended since the previous record, ``null`` if none did), ``episodes``, ``wall_s``,
  ``cos_value`` / ``cos_policy`` where the fidelity check is on, the learner's health (``rtrl.rl.loop.HEALTH``)
  and, for environments stepped on the host, where the time went (``rtrl.rl.loop.TIMINGS``);
* ``checkpoint.npz``: the whole ``TrainState`` (or ``RLState``) at the last record (parameters, optimiser state,
  carries, traces, data key or environment states, position), written atomically, as host arrays whatever
  ``devices`` the run uses; its meta: the step, ``wall_s`` and, for a task that reads files (``shd``), ``data``:
  each file by its option with its SHA-256 (``Task.fingerprints``), which a resume compares with the files as they
  stand (another file under the same name is refused, naming the option);
* ``curve.png``: the learning curves (training loss and metric, chance dashed; an RL run's mean return);
* ``.lock``: held (``filelock``) by the one process that writes the folder; a second writer is refused.

A run spanning several processes (``jax.distributed``: ``rtrl rl --distributed``, docs/devices.md) has one writer,
the first process: it makes the folder, holds the lock and writes every file; the others compute their share and
write nothing, but each calls ``checkpoint.save`` (the gather is collective) and loads the checkpoint when the run
resumes, so the folder must be on a filesystem that every process reads.

A stopped run resumes from its checkpoint and replays exactly what the uninterrupted run would have done: the
data (or the environments and the actions) is a pure function of the checkpointed keys and the step, and
everything else is in the checkpoint.

What the folder promises (docs/reliability.md lists the tests that hold each promise): every file is written
atomically except ``metrics.jsonl``, which is appended one line per evaluation before the checkpoint that
covers it, so a crash leaves at worst a torn last line past the checkpoint, which a resume drops; a run whose
history does not match its checkpoint (the checkpoint missing or unreadable, records missing) is reported,
never silently restarted; nothing is deleted or rewritten unless ``overwrite`` is asked for.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import json
import os
from pathlib import Path

import filelock

from rtrl import devices, interrupts
from rtrl.checks import first_non_finite
from rtrl.config import PLATFORM_KEYS, Config, allowed_imports
from rtrl.driver import Diverged
from rtrl.files import atomic_write_text, naming, not_plain, parse_json
from rtrl.provenance import platform
from rtrl.run import checkpoint, loggers
from rtrl.run.plot import Curve, plot_curves

CONFIG, METRICS, CHECKPOINT, CURVE, LOCK = "config.json", "metrics.jsonl", "checkpoint.npz", "curve.png", ".lock"
FILES = (CONFIG, METRICS, CHECKPOINT, CURVE)
PLATFORM = PLATFORM_KEYS  # config.json's keys besides the options: where the run last computed (platform())


class RunError(ValueError):
    """A run folder that cannot be used as asked (damaged, in use, another run); the message names the file."""


KINDS: dict[str, type[Run]] = {}  # name -> the kind's run class (``register``), in the order registered


def register(kind: type[Run]) -> type[Run]:
    """Add a kind of run (a subclass of ``Run`` naming its ``name``, ``config_class`` and ``assemble``)."""
    KINDS[kind.name] = kind
    return kind


def kind_of(config: Config) -> type[Run]:
    """The kind of run whose configuration class ``config`` is."""
    for kind in KINDS.values():
        if type(config) is kind.config_class:
            return kind
    names = ", ".join(k.config_class.__name__ for k in KINDS.values())
    raise TypeError(f"config must be the configuration of a kind of run ({names}), got {type(config).__name__}")


def kind_of_data(data) -> type[Run]:
    """The kind of run that JSON-like ``data`` (a ``config.json``) configures: the kind with the fewest options
    that it lacks, the first registered on a tie (a file without a kind of its own says what it is by its
    options)."""
    keys = set(data) if isinstance(data, dict) else set()
    return min(KINDS.values(), key=lambda kind: len(keys - {f.name for f in dataclasses.fields(kind.config_class)}))


def chosen(name: str, method) -> str:
    """What a run's header adds after the method it was given by ``name``: ``" (closed_form)"`` where ``auto``
    chose the bound ``method``, else nothing."""
    resolved = getattr(method, "name", None)
    return f" ({resolved})" if resolved and resolved != name else ""


def computed_on() -> str:
    """``"backend cpu, device cpu"``: where this process computes (``rtrl.provenance.platform``), as a run's header
    and summary end."""
    where = platform()
    return f"backend {where['backend']}, device {where['device']}"


def fmt(value) -> str:
    return "-" if value is None else f"{value:.4g}"


def check_own_files(path: str | os.PathLike) -> None:
    """``RunError`` unless each file of the run folder ``path`` that exists is a regular file of its own: a symbolic
    link (into another run, whose history a resume would append to) or a named pipe (which blocks whoever opens it)
    is refused before anything is opened."""
    for name in (*FILES, LOCK):
        file = Path(path) / name
        why = not_plain(file)  # the rule of every file rtrl writes (rtrl.files)
        if why:
            raise RunError(f"{file} {why}; a run folder's files must be regular files of its own, so nothing was "
                           "read or changed (put the file itself there)")


def run_file_of(path: str | os.PathLike) -> Path | None:
    """The file of a run folder that ``path`` names or lies under, as written or once its links are resolved: one
    of the run's own (``FILES``, the lock), a logger's (TensorBoard's event files, the ``wandb`` folder); ``None``
    if it names none. What another command's output must never be (``check_output_folder``)."""
    path = Path(path)
    for where in (Path(os.path.abspath(path)), path.resolve()):
        for p in (where, *where.parents):
            own = p.name in (*FILES, LOCK, loggers.WANDB) or fnmatch.fnmatch(p.name, loggers.EVENTS)
            if own and (p.parent / CONFIG).is_file():
                return p
    return None


def check_output_folder(folder: str | os.PathLike, option: str) -> Path:
    """``folder`` as a ``Path`` if a command may write its own files into it (``option`` names it in errors): not an
    existing file; neither naming nor lying under one of a run folder's files (``run_file_of``); and,
    inside a run folder, not leading out of it through a symbolic link. ``ValueError`` otherwise; nothing is
    made."""
    if not isinstance(folder, str | os.PathLike) or not str(folder):
        raise ValueError(f"{option} must be a path to a folder, got {folder!r}")
    folder = Path(folder)
    lexical, resolved = Path(os.path.abspath(folder)), folder.resolve()
    own = run_file_of(folder)
    if own is not None:
        raise ValueError(f"{option} {folder} names {own}, a file of the run folder {own.parent}; choose a folder of "
                         "its own")
    dangling(folder, option)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{option} {folder} is a file, not a folder")
    for run in (p for p in lexical.parents if (p / CONFIG).is_file()):
        if not resolved.is_relative_to(run.resolve()):
            raise ValueError(f"{option} {folder} lies in the run folder {run} but leads out of it (to {resolved}) "
                             "through a symbolic link; choose a folder of its own")
    return folder


def dangling(folder: Path, option: str) -> None:
    """``ValueError`` where ``folder`` is a symbolic link to nothing: a folder made there would be made elsewhere."""
    if folder.is_symlink() and not folder.exists():
        raise ValueError(f"{option} {folder} is a symbolic link to {os.readlink(folder)}, which does not exist; name "
                         "an existing folder, or one to make")


def read_config(path: str | os.PathLike, imports: bool = True) -> Config:
    """The configuration of the run in ``path`` (either kind); ``RunError`` naming the file if it is missing or
    damaged, or if it names code the user did not allow (``rtrl.config.check_allowed``). ``imports=False``: the
    configuration is only read, never assembled (``rtrl plot``), so nothing it names will be imported and the rule
    does not apply."""
    file = Path(path) / CONFIG
    check_own_files(path)
    if not file.is_file():
        raise RunError(f"{path} holds no run (no {CONFIG})")
    try:
        data = parse_json(file.read_text())
    except (ValueError, UnicodeDecodeError) as e:
        raise RunError(f"{file} is not valid JSON ({e})") from None
    if isinstance(data, dict):  # where the run computed is no option of it (a folder of before it: none said)
        data = {k: v for k, v in data.items() if k not in PLATFORM}
    try:
        return kind_of_data(data).config_class.from_dict(data, where=str(file), complete=True, trusted=not imports)
    except ValueError as e:
        raise RunError(str(e)) from None


def read_metrics(path: str | os.PathLike) -> list[dict]:
    """The records of ``metrics.jsonl`` (none if it does not exist). A torn last line (what a crash while
    appending leaves; past the checkpoint, so a resume writes it again) is left out; any other line that is not
    a record (``check_record``: a strict-JSON object whose ``step`` is a whole number past the line before's, every
    other value a number or null) is a ``RunError`` naming the file and line."""
    check_own_files(path)
    file = Path(path) / METRICS
    if not file.is_file():
        return []
    text = file.read_text(errors="replace")
    lines = text.split("\n")
    records = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = check_record(parse_json(line), records[-1]["step"] if records else None)
        except ValueError as e:
            if i == len(lines) - 1:  # no newline after it: the write was cut short
                break
            raise RunError(f"{file} line {i + 1} is damaged ({e}); restore it, or start again with --overwrite") \
                from None
        records.append(record)
    return records


PER_SEED = "_per_seed"  # metrics holding one value per seed of a run of several (``rtrl rl --seeds``)


def check_record(record, before: int | None) -> dict:
    """``record`` if it is one a run writes: an object whose ``step`` is a whole number (not ``true``), not negative,
    and past ``before`` (the step of the record before it: none is repeated or out of order), every other value a
    finite number or null; else a ``ValueError`` saying what is wrong."""
    if not isinstance(record, dict):
        raise ValueError(f"not a record: a {type(record).__name__}, not an object")
    step = record.get("step")
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise ValueError(f"its step is {step!r}, not a whole number of steps")
    if before is not None and step <= before:
        raise ValueError(f"its step {step} does not come after step {before} of the record before it")
    for key, value in record.items():
        if key.endswith(PER_SEED):  # ``rtrl rl --seeds``: one value per seed beside the mean
            if not isinstance(value, list) or not value or not all(number_or_null(v) for v in value):
                raise ValueError(f"its {key} is {value!r}, not a list of numbers or nulls, one per seed")
        elif not number_or_null(value):
            raise ValueError(f"its {key} is {value!r}, not a number or null")
    return record


def number_or_null(value) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def read_curve(path: str | os.PathLike, label: str | None = None) -> Curve:
    """The learning curve of the run in ``path`` from its files alone (``rtrl plot``): its configuration is read,
    never assembled, so nothing it names is built or imported; ``RunError`` naming the file that is wrong."""
    config = read_config(path, imports=False)
    records = read_metrics(path)
    if not records:
        raise RunError(f"{path} has no metrics yet ({Path(path) / METRICS} holds no record)")
    try:
        return kind_of(config).curve_of(config, records, label)
    except ValueError as e:  # what the file names cannot be read (a task option it does not have, ...)
        raise RunError(f"{Path(path) / CONFIG}: {e}") from None


def evaluation_options(episodes, seed, default_episodes: int, default_seed: int) -> tuple[int, int]:
    """``(episodes, seed)`` of an evaluation (``Run.evaluate``), ``None`` taking the default; ``ValueError`` naming
    ``episodes`` (a positive integer) or ``seed`` (an integer from 0 to 2**32 - 1)."""
    episodes = default_episodes if episodes is None else episodes
    seed = default_seed if seed is None else seed
    if not isinstance(episodes, int) or isinstance(episodes, bool) or episodes < 1:
        raise ValueError(f"episodes must be a positive integer, got {episodes!r}")
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**32:
        raise ValueError(f"seed must be an integer from 0 to 2**32 - 1, got {seed!r}")
    return episodes, seed


def check_devices(config: Config) -> None:
    """``RunError`` unless this machine has the devices ``config`` splits its streams (or environments, or seeds)
    over (that they divide them, the configuration checks itself)."""
    try:
        devices.check_available(config.devices)
    except ValueError as e:
        raise RunError(f"{e} (or run it on fewer: --devices)") from None


def read_platform(path: str | os.PathLike) -> dict:
    """What ``config.json`` in ``path`` says of where the run last computed (``PLATFORM``: ``backend``, ``device``;
    ``None`` for what it does not say, as in a folder written before it was recorded)."""
    try:
        data = parse_json((Path(path) / CONFIG).read_text())
    except (OSError, ValueError):
        data = {}
    return {k: data.get(k) for k in PLATFORM} if isinstance(data, dict) else dict.fromkeys(PLATFORM)


def write_config(path: Path, config: Config) -> None:
    """``config.json``: the configuration's options (``Config.stored``: those its run reads), and the backend and
    device of this process (``PLATFORM``)."""
    try:
        text = json.dumps({**config.stored(), **platform()}, indent=2, allow_nan=False)
    except TypeError as e:  # a cell or method given as an object (from Python), not by name
        raise RunError(f"a run folder's config.json needs every option as a name or a number: {e}") from None
    atomic_write_text(path / CONFIG, text + "\n")


def made_folders(path: Path) -> list[Path]:
    """Make ``path`` and its missing parents, one ``mkdir`` each; the folders this process made, outermost first
    (``Run.create`` records them in ``run.made``).
    A folder that exists already, or that another process makes first (``mkdir`` is atomic), is not ours: only
    ours may be removed again."""
    missing = []
    while not path.exists() and path.parent != path:
        missing.append(path)
        path = path.parent
    made = []
    try:
        for folder in reversed(missing):
            with contextlib.suppress(FileExistsError):
                folder.mkdir()
                made.append(folder)
    except BaseException:
        remove_folders(made)
        raise
    return made


def remove_folders(made: list[Path]) -> None:
    """Remove the folders of ``made_folders`` again, innermost first, each only if empty but for its lock (held
    by the caller, so no other process uses it)."""
    for folder in reversed(made):
        with contextlib.suppress(OSError):
            if {p.name for p in folder.iterdir()} <= {LOCK}:
                (folder / LOCK).unlink(missing_ok=True)
            folder.rmdir()


def is_writers(name: str) -> bool:
    """A file that a writer of run folders keeps there besides the run: the lock, or a temporary file of an atomic
    write under way (or orphaned by a kill)."""
    return name == LOCK or (name.startswith(".") and name.endswith(".tmp"))


def check_target(path: Path, config: Config, overwrite: bool) -> None:
    """``RunError`` unless ``path`` can hold the run of ``config``: missing, empty, or holding the same run (budget
    aside), or anything there with ``overwrite``."""
    if path.exists() and not path.is_dir():
        raise RunError(f"{path} is a file, not a run folder; choose another --out")
    try:
        dangling(path, "--out")
    except ValueError as e:
        raise RunError(str(e)) from None
    if (path / CONFIG).exists() and not overwrite:
        with allowed_imports(config.imports()):  # the code the caller names now may be read back, no other
            diff = read_config(path).differences(config)
        if diff:
            raise RunError(
                f"{path} holds a different run (differs in {', '.join(diff)}); choose another --out, "
                "continue that run with `rtrl resume`, or replace it with --overwrite"
            )
    elif path.is_dir() and not overwrite and not all(is_writers(p.name) for p in path.iterdir()):
        raise RunError(f"{path} exists and is not a run folder; choose another --out")


def non_finite(state) -> tuple[str, float] | None:
    """The tree path and value of the first NaN or infinity among ``state``'s leaves; None if there is none."""
    return first_non_finite((name, devices.gathered(leaf)) for name, leaf in checkpoint.named_leaves(state)
                            if not checkpoint.is_key(leaf))


def check_finite(file: Path, state, use: str) -> None:
    """``RunError`` where the checkpoint ``file``'s ``state`` holds a NaN or an infinity (written by an older version,
    which did not check before writing, or edited): a diverged run cannot be ``use`` (``"continued"``,
    ``"loaded"``): its figures would be a NaN policy's or readout's, not the run's."""
    bad = non_finite(state)
    if bad:
        raise RunError(f"{file} holds {bad[1]} in {bad[0]}: the run had diverged and cannot be {use}; nothing was "
                       "changed (start again with --overwrite, e.g. with a smaller --lr)")


def checked_meta(file: Path, state, meta: dict) -> dict:
    """``meta`` of the checkpoint ``file`` if it agrees with itself and with ``state`` (a whole step count, the
    state's own ``step`` leaf, a finite wall time), else ``RunError``: a checkpoint at odds with itself is damaged."""
    step, wall_s = meta.get("step"), meta.get("wall_s")
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise RunError(f"{file} is damaged: its meta step is {step!r}, not a whole number of steps")
    if not isinstance(wall_s, (int, float)) or isinstance(wall_s, bool) or not 0 <= wall_s < float("inf"):
        raise RunError(f"{file} is damaged: its meta wall_s is {wall_s!r}, not a time in seconds")
    leaf = int(state.step)
    if leaf != step:
        raise RunError(f"{file} is damaged: its state stands at step {leaf} but its meta says step {step}; "
                       "nothing was changed (restore it, or start again with --overwrite)")
    return meta


class Run:
    """A run folder and its configuration: ``Run.create(path, config)`` or ``Run.open(path)``, then ``train()``;
    both return the kind of run the configuration asks for (a subclass registered in ``KINDS``). The parts are
    assembled once (``assembly``, e.g. by the command line before anything is written); the compiled pieces
    (``trainer``) are built on first use.

    A kind names ``name``, ``config_class``, ``assemble`` (config -> its parts, ``.config`` the resolved
    configuration), and says how it ``build``s, starts (``fresh``)
    and advances (``fit``), and how its records read."""

    name: str
    config_class: type[Config]

    def __init__(self, path: str | os.PathLike, assembly, trainer=None):
        self.path = Path(path)
        self.assembly = assembly
        self.config = assembly.config
        self._trainer = trainer  # None: built from the assembly on first use
        self.lock = filelock.FileLock(str(self.path / LOCK), timeout=0)
        self.made: list[Path] = []  # the folders ``create`` made (only these may be removed again)
        self.data: dict = {}  # the data files' fingerprints, read when training starts (``fingerprints``)

    @property
    def trainer(self):
        if self._trainer is None:
            self._trainer = self.build()
        return self._trainer

    # -- what differs between the kinds ---------------------------------------------------------------
    @staticmethod
    def assemble(config: Config):
        """The parts of ``config`` (``ValueError`` naming an option)."""
        raise NotImplementedError

    def build(self):
        """The compiled pieces of the run."""
        raise NotImplementedError

    def fresh(self):
        """The state at step 0 (the template a checkpoint is loaded into)."""
        raise NotImplementedError

    def fit(self, state, wall_s: float, on_record, on_chunk):
        """Continue ``state`` to ``config.steps``, ``on_record(state, record)`` after each record."""
        raise NotImplementedError

    def fingerprints(self) -> dict:
        """The files the run reads (its task's: ``Task.fingerprints``) as they stand now; ``{}``: none."""
        return {}

    def trained(self, params) -> tuple:
        """``(cell, cell_params)``: the cell of the run and its share of the model's ``params`` (``rtrl.load``)."""
        raise NotImplementedError

    def one_seed(self, state, seed: int | None):
        """``(state, seed)``: of a run of several seeds, ``state``'s share of the one asked for (``rtrl.load``'s
        ``seed``); a run of one seed has only its own (``seed`` must be ``None`` or that one: ``ValueError``
        otherwise)."""
        if seed is not None and not (isinstance(seed, int) and not isinstance(seed, bool) and seed == self.config.seed):
            raise ValueError(f"seed applies to a run of several seeds (rtrl rl --seeds); {self.path} is one run, of "
                             f"seed {self.config.seed}, got seed={seed!r}")
        return state, self.config.seed

    def evaluate(self, state, episodes: int | None, seed: int | None, **options) -> dict:
        """``state`` scored on fresh episodes (``rtrl eval``, ``Trained.evaluate``): ``metric`` (its name),
        ``value``, ``episodes``, ``seed``, and what the kind adds; ``options``: the kind's own (an RL run's
        ``greedy`` and ``video``)."""
        raise NotImplementedError

    @staticmethod
    def curve_of(config: Config, records: list[dict], label: str | None = None) -> Curve:
        """The learning curve of ``records`` under ``config`` (``label``: the legend's, default the config's);
        built from the configuration alone, importing nothing it names."""
        raise NotImplementedError

    def curve(self, label: str | None = None) -> Curve:
        return self.curve_of(self.config, read_metrics(self.path), label or self.config.label(self.method_name()))

    def method_name(self) -> str:
        """The name of the method the run computes with (what ``auto`` chose)."""
        raise NotImplementedError

    def title(self) -> str:
        raise NotImplementedError

    def describe(self) -> str:
        """One line: what the run trains."""
        raise NotImplementedError

    def status(self, record: dict) -> str:
        """A record in a few words (the progress bar's)."""
        raise NotImplementedError

    def summary(self) -> str:
        """Where the run started and where it stands."""
        raise NotImplementedError

    def resume_note(self) -> str:
        """One line printed under the header when the folder holds a checkpoint short of the budget: ``"resuming at
        step N (its checkpoint), to step S"``, and anything a resumed run does differently from the uninterrupted
        one (a kind says so); ``""`` for a run starting afresh or already finished."""
        step = self.last_checkpoint_step()
        if not isinstance(step, int) or isinstance(step, bool) or not 0 < step < self.config.steps:
            return ""  # a fresh run, a finished one, or a damaged meta step (which loading the run refuses)
        return f"resuming at step {step} (its checkpoint), to step {self.config.steps}"

    @contextlib.contextmanager
    def locked(self):
        """Hold the folder's lock (re-entrant within this object); a ``RunError`` if another process holds it.
        Temporary files that a killed writer left behind are removed once the lock is ours. Of a run spanning
        several processes, only the first holds it (the others write nothing)."""
        if not devices.first_process():
            yield
            return
        try:
            with self.lock:
                if self.lock.lock_counter == 1:
                    for orphan in self.path.glob(".*.tmp"):
                        orphan.unlink(missing_ok=True)
                yield
        except filelock.Timeout:
            raise RunError(
                f"{self.path} is in use by another process (it holds {self.path / LOCK}); wait for it to finish"
            ) from None

    @classmethod
    def create(cls, path: str | os.PathLike, config: Config | dict, overwrite: bool = False, trainer=None,
               assembly=None) -> Run:
        """A new run in ``path``; if it already holds the same run (budget aside), that run, to be continued.
        A different run there is an error unless ``overwrite``, which removes the run's files and what its loggers
        wrote (``rtrl.run.loggers.remove_logged``) first. Nothing is created when the configuration is invalid or
        ``path`` cannot hold a run. ``assembly``: ``config``'s parts, already assembled (else they are here);
        ``trainer``: one already built from the same configuration, to reuse its compiled functions."""
        if not isinstance(config, Config):
            config = kind_of_data(config).config_class.from_dict(config)
        kind = kind_of(config)
        assembly = assembly if assembly is not None else kind.assemble(config)
        config = assembly.config
        check_devices(config)
        path = Path(path)
        if not devices.first_process():  # of a run spanning several processes: the first makes the folder
            return kind(path, assembly, trainer)
        check_target(path, config, overwrite)  # before anything is made; again below, under the lock
        made = made_folders(path)
        run = kind(path, assembly, trainer)
        with run.locked():  # another process holding it: refused, and nothing of its removed
            try:
                check_target(path, config, overwrite)  # what is there now (another writer may have come first)
                if overwrite:
                    for name in FILES:
                        (path / name).unlink(missing_ok=True)
                    loggers.remove_logged(path)  # an old run's event files would read as the new run's
                write_config(path, config)
            except BaseException:
                remove_folders(made)  # leave nothing half-created; only what this process made
                raise
        run.made = made
        return run

    @classmethod
    def open(cls, path: str | os.PathLike, steps: int | None = None, trainer=None, devices: int | None = None) -> Run:
        """An existing run, with its step budget changed to ``steps`` and its device count to ``devices`` if given
        (``trainer`` as in ``create``); the checkpoint of a run on any number of devices resumes on any other."""
        config = read_config(path)
        kind = kind_of(config)
        changes = {name: value for name, value in (("steps", steps), ("devices", devices)) if value is not None}
        try:
            config = config.replace(**changes)
        except ValueError as e:
            raise RunError(str(e)) from None
        try:
            run = kind(path, kind.assemble(config), trainer)
        except ValueError as e:  # what the file names cannot be built (an option a task does not have, ...)
            raise RunError(f"{Path(path) / CONFIG}: {e}") from None
        check_devices(run.config)
        if steps is not None:
            run.check_budget(steps)
        return run

    def check_budget(self, steps: int) -> None:
        """``RunError`` if the checkpoint stands past ``steps``: a run does not go back, and its files stay."""
        file = self.path / CHECKPOINT
        done = checkpoint.read_meta(file).get("step") if file.is_file() else None
        if isinstance(done, int) and steps < done:
            raise RunError(f"--steps {steps} is below step {done}, where {file} stands; a run cannot go back, "
                           f"so nothing was changed (a budget of at least {done}, or a new run with --out)")

    # -- state on disk ----------------------------------------------------------------------------------
    def load(self) -> tuple[object, float]:
        """The checkpointed state and wall time; a fresh state if there is no checkpoint yet. Records past
        the checkpoint (written before a crash) are dropped, as the resumed run writes them again. A history
        that the checkpoint does not account for is a ``RunError``: nothing is restarted or rewritten."""
        records = read_metrics(self.path)
        file = self.path / CHECKPOINT
        if not file.exists():
            # Each record is written before its checkpoint, so a crash can leave the run's first record (step 0,
            # or an RL run's first at record_every) without a checkpoint: it is written again. More than one
            # means the checkpoint was lost.
            if len(records) > 1:
                raise RunError(
                    f"{file} is missing but {self.path / METRICS} goes to step {records[-1]['step']}; nothing was "
                    "changed (restore the checkpoint, or start again with `rtrl train ... --overwrite`)"
                )
            if records or self.torn():
                self.rewrite_metrics([])
            return self.fresh(), 0.0
        state, meta = checkpoint.load(file, self.fresh())
        step = checked_meta(file, state, meta)["step"]
        kept = [r for r in records if r["step"] <= step]
        if not kept or kept[-1]["step"] != step:
            raise RunError(
                f"{self.path / METRICS} has no record of step {step}, where {file} stands: the history "
                "was truncated; nothing was changed (restore it, or start again with --overwrite)"
            )
        check_finite(file, state, "continued")
        if step == 0:  # a run killed before its first interval: it starts again, and records step 0 again
            kept = []
        if len(kept) < len(records) or self.torn():
            self.rewrite_metrics(kept)
        return state, meta["wall_s"]

    def check_data(self) -> None:
        """``RunError`` naming the option when a file the checkpoint's run was trained on (its meta's ``data``) is
        not the file under that name now (``self.data``); a checkpoint without ``data`` (a task of no files, or
        written before it was recorded) says nothing to compare."""
        file = self.path / CHECKPOINT
        recorded = checkpoint.read_meta(file).get("data") if file.is_file() else None
        if not isinstance(recorded, dict):
            return
        for option, was in recorded.items():
            now = self.data.get(option)
            if now != was:
                name = next((d["file"] for d in (now, was) if isinstance(d, dict) and "file" in d), None)
                raise RunError(f"{option}: {name!r} is not the file this run was trained on (its SHA-256 differs "
                               f"from the one {file} records); nothing was changed (put that file back, or start "
                               "again with --overwrite)")

    def torn(self) -> bool:
        file = self.path / METRICS
        return file.exists() and file.stat().st_size > 0 and not file.read_bytes().endswith(b"\n")

    def rewrite_metrics(self, records: list[dict]) -> None:
        if devices.first_process():
            atomic_write_text(self.path / METRICS, "".join(json.dumps(r, allow_nan=False) + "\n" for r in records))

    def record(self, state, record: dict) -> None:
        """After an evaluation: append the metrics line (one write; the first process's, of several), then
        checkpoint (every process: ``checkpoint.save``), so a checkpoint never runs ahead of the records it comes
        with; ``Diverged`` instead, writing nothing, if the state is not all finite (so the checkpoint kept is always
        a good one)."""
        bad = non_finite(state)
        if bad:  # the parameters are checked as the run goes; the rest of the state (traces, moments) here
            raise Diverged(record["step"], bad[1], f"the state's {bad[0]}")
        if devices.first_process():
            line = json.dumps(record, allow_nan=False) + "\n"
            with naming(self.path / METRICS), open(self.path / METRICS, "a") as f:
                f.write(line)
                f.flush()
                os.fsync(f.fileno())
        meta = {"step": record["step"], "wall_s": record["wall_s"], **({"data": self.data} if self.data else {})}
        checkpoint.save(self.path / CHECKPOINT, state, meta)

    def plot(self) -> Path:
        plot_curves([self.curve()], self.path / CURVE, self.title())
        return self.path / CURVE

    # -- training ---------------------------------------------------------------------------------------
    def train(self, on_eval=None, on_chunk=None):
        """Continue from the checkpoint up to ``config.steps``, holding the folder's lock; writes metrics,
        checkpoints and the plot. On ``Diverged`` the last checkpoint (all of whose records are finite) stays,
        and the plot shows the run up to it."""
        with self.locked(), interrupts.deferred():  # a Ctrl-C stops at the next safe point (rtrl.interrupts)
            self.data = self.fingerprints()
            self.check_data()  # before anything is rewritten: another data file under the same name is refused
            state, wall_s = self.load()
            self.check_budget(self.config.steps)  # checked on open too; here against the checkpoint as loaded
            with allowed_imports(self.config.imports()):  # this run's own code, already built (trusted or allowed)
                changed = read_config(self.path) != self.config or read_platform(self.path) != platform()
            if changed and devices.first_process():  # a new budget or device, once the run is known to continue
                write_config(self.path, self.config)

            def record(state, rec):
                self.record(state, rec)
                if on_eval is not None:
                    on_eval(state, rec)
                interrupts.poll()

            def chunk(state, n):
                if on_chunk is not None:
                    on_chunk(state, n)
                interrupts.poll()

            try:
                interrupts.poll()
                state = self.fit(state, wall_s, record, chunk)
            finally:
                if devices.first_process() and read_metrics(self.path):
                    self.plot()
        return state

    def last_checkpoint_step(self) -> int | None:
        file = self.path / CHECKPOINT
        return checkpoint.read_meta(file)["step"] if file.is_file() else None


__all__ = ["CHECKPOINT", "CONFIG", "CURVE", "KINDS", "METRICS", "Diverged", "Run", "RunError", "kind_of",
           "kind_of_data", "read_config", "read_curve", "read_metrics", "register"]
