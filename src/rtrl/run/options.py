"""The options of ``rtrl train`` and ``rtrl rl``, built from the fields of their configuration (``RunConfig``,
``rtrl.rl.RLConfig``: one spelling of each schema), and the assembly of the configuration they give.

Each field ``name`` becomes ``--name`` (underscores as dashes) with the field's help and default; an options field
``X_args`` becomes a repeatable ``--X-arg KEY=VALUE``; a flag field a switch and its ``--no-NAME`` (so a preset's
switch can be turned off); an optional field with a default (``clip``) also gets ``--no-NAME``. The argument
types call the field's own check, so the CLI refuses exactly what the configuration refuses, with the same words.
``--preset NAME`` starts from a named configuration's options. ``options_table(cls)`` is the Markdown reference in
docs/cli.md. Defaults are read from the fields (``rtrl.config.defaults``): no configuration is built to make a
parser; ``assembled(assemble, config)`` turns the assembly's errors into usage errors naming the flag.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json

from rtrl.config import Config, Invalid, OptionError, Preset, defaults, flag, key_values, pairs, says_what_unread_does
from rtrl.run.usage import Once, UsageError
from rtrl.training.config import RunConfig
from rtrl.training.presets import PRESETS

UNSET = object()  # an option not given on the command line: the preset's value, else the configuration's default


def parse_value(text: str):
    """``KEY=VALUE`` values: JSON when they parse as JSON (numbers, true/false), else the string itself."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_options(pairs: list[str] | None, flag_name: str) -> dict:
    result, given = {}, {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"{flag_name} expects KEY=VALUE, got {pair!r}")
        if key in given:  # which one was meant? (the later one silently winning would hide a typo)
            raise UsageError(f"{flag_name} gives {key} twice ({given[key]} and {pair}); give it once")
        result[key], given[key] = parse_value(value), pair
    return result


def is_options(field: dataclasses.Field) -> bool:
    return field.metadata["check"] in (key_values, pairs)


def switch(field: dataclasses.Field) -> bool:
    """Whether the option is given as a switch: a flag, or a field whose check names the value of its flag given
    alone (``bare``: ``--extra-inputs`` for all the extras, ``--extra-inputs time`` for one)."""
    return field.metadata["check"] is flag or hasattr(field.metadata["check"], "bare")


def negated(field: dataclasses.Field) -> bool:
    """Whether the field also gets ``--no-NAME``: any optional one or switch, since a preset may set what is unset
    or off by default (``--preset popgym-repeat-first --no-extra-inputs``, ``--preset hopper-p --no-critic-lr``)."""
    return switch(field) or field.type.endswith("| None")


def flag_of(field: dataclasses.Field) -> str:
    if is_options(field):
        return "--" + field.name.removesuffix("s").replace("_", "-")
    return "--" + field.name.replace("_", "-")


def argument_type(field: dataclasses.Field):
    """Text -> value through the field's check; argparse reports ``argument --X: must be ..., got ...``."""
    check = field.metadata["check"]

    def parse(text: str):
        value = parse_value(text)
        value = None if text.lower() in ("none", "null") else value
        try:
            return check(value)
        except Invalid as e:
            raise argparse.ArgumentTypeError(f"must be {e}, got {text!r}") from None

    parse.__name__ = field.name  # argparse names the type in some messages
    return parse


def add_config_arguments(p: argparse.ArgumentParser, cls: type[Config] = RunConfig,
                         presets: dict[str, Preset] = PRESETS) -> None:
    """An option per field of ``cls``, and ``--preset`` naming one of ``presets``."""
    p.add_argument("--preset", choices=sorted(presets), metavar="NAME", action=Once,
                   help=f"a named configuration, one of {len(presets)}: `rtrl list presets` names them, `rtrl list "
                        "presets NAME` shows every option NAME sets; options given beside it override its own")
    default = defaults(cls)
    parser = p
    for field in dataclasses.fields(cls):
        value, help_text = default[field.name], field.metadata["help"]
        # A value and its --no-NAME contradict each other (`--clip 0.5 --no-clip` would drop the value given):
        # argparse refuses the pair. A switch and its negation keep the usual rule, the last one wins.
        contradicts = negated(field) and not switch(field)
        p = parser.add_mutually_exclusive_group() if contradicts else parser
        if is_options(field):
            p.add_argument(flag_of(field), dest=field.name, action="append", metavar=field.metadata["metavar"],
                           help=help_text)
        elif field.metadata["check"] is flag:
            p.add_argument(flag_of(field), dest=field.name, action="store_const", const=True, default=UNSET,
                           help=help_text)
        elif switch(field):
            p.add_argument(flag_of(field), dest=field.name, nargs="?", const=field.metadata["check"].bare,
                           type=argument_type(field), default=UNSET, metavar=field.metadata["metavar"],
                           help=help_text)
        else:
            shown = "" if value is None else f" (default {value})"
            p.add_argument(flag_of(field), dest=field.name, type=argument_type(field), default=UNSET,
                           metavar=field.metadata["metavar"], help=help_text + shown)
        if negated(field):
            p.add_argument(f"--no-{field.name.replace('_', '-')}", dest=field.name, action="store_const",
                           const=False if switch(field) else None,
                           help=negated_help(field, value))


def negated_help(field, value) -> str:
    """The help of ``--no-NAME``: a sentence saying what it turns off."""
    name = flag_of(field)
    if switch(field):
        return f"turn {name} off (it is on by default)" if value else f"turn {name} off (where a preset turns it on)"
    if value is None:
        return f"unset {name} where a preset sets it (back to its default)"
    return f"no {name} at all (instead of the default {value})"


def config_from_args(args: argparse.Namespace, cls: type[Config] = RunConfig,
                     presets: dict[str, Preset] = PRESETS) -> Config:
    """The configuration of parsed arguments (over the preset's options, if one is named); ``UsageError`` naming
    what is wrong."""
    preset = presets[args.preset].options if getattr(args, "preset", None) else {}
    default = defaults(cls)
    values = {}
    for field in dataclasses.fields(cls):
        value = getattr(args, field.name)
        base = preset.get(field.name, default[field.name])
        if is_options(field):
            value = {**dict(base), **parse_options(value, flag_of(field))}
        elif value is UNSET:
            value = base
        values[field.name] = value
    # a preset's option that the options given beside it leave unread (its --entropy under --algorithm q) is dropped
    for name in cls.unread_options(values) if preset else ():
        if name in preset and getattr(args, name) is UNSET:
            values[name] = default[name]
    with usage_errors(cls):
        config = cls(**values)
        # one given that the run never reads, even at its default (construction cannot tell it from one not given)
        for name, why in cls.never_read_options(values).items():
            if getattr(args, name) is not UNSET and not says_what_unread_does(name, values[name]):
                raise OptionError(f"{name} does nothing here: {why}; drop it", name)
    return config


@contextlib.contextmanager
def usage_errors(cls: type[Config]):
    """A ``ValueError`` in the block as a ``UsageError``; an ``OptionError`` named by its flag (``argument
    --cell-arg: cell 'x' has no option ['y']; ...``)."""
    try:
        yield
    except OptionError as e:
        fields = {f.name: f for f in dataclasses.fields(cls)}
        where = f"argument {flag_of(fields[e.option])}: " if e.option in fields else ""
        raise UsageError(f"{where}{e}") from None
    except ValueError as e:
        raise UsageError(str(e)) from None


def assembled(assemble, config: Config):
    """``assemble(config)``: the run's parts, built once, before anything is written; its errors are usage errors
    naming the option's flag."""
    with usage_errors(type(config)):
        return assemble(config)


def options_table(cls: type[Config] = RunConfig) -> str:
    """The Markdown table of a configuration's options (docs/cli.md: ``rtrl train``'s, ``rtrl rl``'s)."""
    lines = ["| option | meaning | default |", "|---|---|---|"]
    default = defaults(cls)
    for field in dataclasses.fields(cls):
        value, metavar = default[field.name], field.metadata["metavar"]
        name = f"`{flag_of(field)}" + (f" {metavar}`" if metavar else "`")
        if negated(field):
            name += f", `--no-{field.name.replace('_', '-')}`"
        shown = "automatic" if value is None else "none" if value in ({}, ()) else "off" if value is False \
            else "on" if value is True else f"`{value}`"
        lines.append(f"| {name} | {field.metadata['help']} | {shown} |")
    return "\n".join(lines) + "\n"
