"""``rtrl train``'s options, built from the fields of ``RunConfig`` (one spelling of the schema).

Each field ``name`` becomes ``--name`` (underscores as dashes) with the field's help and default; a dict field
``X_args`` becomes a repeatable ``--X-arg KEY=VALUE``; a flag field a switch; an optional field with a default
(``clip``) also gets ``--no-NAME``. The argument types call the field's own check, so the CLI refuses exactly
what ``RunConfig`` refuses, with the same words. ``options_table()`` is the Markdown reference in docs/cli.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json

from rtrl.cli.usage import UsageError
from rtrl.training.config import Invalid, RunConfig, flag, options

DEFAULT = RunConfig()
UNSET = object()  # an option not given on the command line: the preset's value, else RunConfig's default


def parse_value(text: str):
    """``KEY=VALUE`` values: JSON when they parse as JSON (numbers, true/false), else the string itself."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_options(pairs: list[str] | None, flag_name: str) -> dict:
    result = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"{flag_name} expects KEY=VALUE, got {pair!r}")
        result[key] = parse_value(value)
    return result


def flag_of(field: dataclasses.Field) -> str:
    if field.metadata["check"] is options:
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


def add_config_arguments(p: argparse.ArgumentParser) -> None:
    from rtrl.training.presets import PRESETS

    p.add_argument("--preset", choices=sorted(PRESETS), metavar="NAME",
                   help=f"a named configuration ({', '.join(sorted(PRESETS))}; `rtrl list`); options given beside "
                        "it override its own")
    for field in dataclasses.fields(RunConfig):
        default, help_text = getattr(DEFAULT, field.name), field.metadata["help"]
        if field.metadata["check"] is options:
            p.add_argument(flag_of(field), dest=field.name, action="append", metavar=field.metadata["metavar"],
                           help=help_text)
        elif field.metadata["check"] is flag:
            p.add_argument(flag_of(field), dest=field.name, action="store_const", const=True, default=UNSET,
                           help=help_text)
        else:
            shown = "" if default is None else f" (default {default})"
            p.add_argument(flag_of(field), dest=field.name, type=argument_type(field), default=UNSET,
                           metavar=field.metadata["metavar"], help=help_text + shown)
            if default is not None and field.type.endswith("| None"):
                p.add_argument(f"--no-{field.name.replace('_', '-')}", dest=field.name, action="store_const",
                               const=None, help=f"no {field.name}")


def config_from_args(args: argparse.Namespace) -> RunConfig:
    """The ``RunConfig`` of parsed ``rtrl train`` arguments (over the preset's options, if one is named);
    ``UsageError`` naming what is wrong."""
    from rtrl.training.presets import PRESETS

    preset = PRESETS[args.preset].options if getattr(args, "preset", None) else {}
    values = {}
    for field in dataclasses.fields(RunConfig):
        value = getattr(args, field.name)
        base = preset.get(field.name, getattr(DEFAULT, field.name))
        if field.metadata["check"] is options:
            value = {**base, **parse_options(value, flag_of(field))}
        elif value is UNSET:
            value = base
        values[field.name] = value
    try:
        return RunConfig(**values)
    except ValueError as e:
        raise UsageError(str(e)) from None


def options_table() -> str:
    """The Markdown table of ``rtrl train``'s run options (docs/cli.md), from ``RunConfig``'s fields."""
    lines = ["| option | meaning | default |", "|---|---|---|"]
    for field in dataclasses.fields(RunConfig):
        default, metavar = getattr(DEFAULT, field.name), field.metadata["metavar"]
        name = f"`{flag_of(field)}" + (f" {metavar}`" if metavar else "`")
        if default is not None and field.type.endswith("| None"):
            name += f", `--no-{field.name.replace('_', '-')}`"
        shown = "automatic" if default is None else "none" if default == {} else "off" if default is False \
            else f"`{default}`"
        lines.append(f"| {name} | {field.metadata['help']} | {shown} |")
    return "\n".join(lines) + "\n"

