"""The protocol cards of the results pages' tables, each generated from the configurations that ran and written in
one paragraph after a comment that says which::

    <!-- card: TABLE rows=ROW,ROW seeds=N [OPTION=VALUE ...] --> **Protocol** (...): inputs: ... · frames: ...

``TABLE`` is a results table (``rtrl.rl.presets.TABLES``: the card reads its rows' presets) or ``popgym-suite`` (the
suite's agent on each of its tasks, ``rtrl.reports.popgym.options``); ``seeds`` the seeds each row ran.
``OPTION=VALUE`` is an option the runs had where the preset now has another (the table predates a change of the
preset, e.g. ``extra_inputs=action,reward,time``): ``VALUE`` read as JSON where it parses, else as a string;
``steps=S,TASK:S`` gives the suite's steps, and a task's own. The card is ``rtrl.reports.protocol``'s, its items
on one line (``one_line``), so that a page of many tables stays short.

``refresh(text)`` writes every card of a page anew under its comment; ``python -m rtrl.reports.cards PAGE ...``
rewrites the pages, ``--check`` only names those whose cards are not what their comments generate (exit 1).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from rtrl.files import atomic_write_text
from rtrl.reports import popgym, protocol, rl
from rtrl.rl.config import RLConfig
from rtrl.rl.presets import TABLES

SUITE = "popgym-suite"
# the comment, then on its line the card it generates (or nothing yet)
CARD = re.compile(r"^<!-- card: (?P<spec>.*?) -->[^\n]*$", re.MULTILINE)


def parsed(spec: str) -> tuple[str, dict[str, str]]:
    """``spec``'s table and its ``KEY=VALUE`` words; ``ValueError`` naming a word that is not one, a table that does
    not exist, or a missing ``rows`` or ``seeds``."""
    table, *words = spec.split()
    pairs = {}
    for word in words:
        key, sep, value = word.partition("=")
        if not sep or not key or not value:
            raise ValueError(f"a card's words after its table must be KEY=VALUE, got {word!r} in {spec!r}")
        pairs[key] = value
    if table != SUITE and table not in TABLES:
        raise ValueError(f"a card names a results table (rtrl list presets) or {SUITE}, got {table!r}")
    missing = [key for key in ("rows", "seeds") if key not in pairs]
    if missing:
        raise ValueError(f"the card of {table} needs {' and '.join(missing)}=..., got {spec!r}")
    return table, pairs


def value(text: str):
    """An option's value as a card's comment writes it: JSON where it parses, a comma-separated list of names
    where it has a comma, else the string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text.split(",") if "," in text else text


def checked(configs: list[dict], spec: str) -> list[dict]:
    """``configs``, each read as a run folder's ``config.json`` is (``RLConfig.from_dict``), so that an option the
    comment gives a value of the wrong kind (``critic_network=False``, not JSON's ``false``) is refused, naming it
    and the card, rather than shown as the string it parsed to."""
    for config in configs:
        RLConfig.from_dict({**config, "seed": 0}, where=f"the card {spec!r}")
    return configs


def card(spec: str) -> str:
    """The protocol card ``spec`` (the comment's words) generates."""
    table, pairs = parsed(spec)
    rows, seeds = pairs.pop("rows").split(","), int(pairs.pop("seeds"))
    steps = pairs.pop("steps") if table == SUITE else None  # the suite's own word, not an option over the preset's
    changes = {key: value(text) for key, text in pairs.items()}
    if table == SUITE:
        steps = dict(part.split(":") if ":" in part else ("", part) for part in steps.split(","))
        configs = [{**popgym.options(task, row, int(steps.get(task, steps[""])), 0, seeds), **changes, "seeds": seeds}
                   for task in popgym.TASKS for row in rows]
        return protocol.protocol_card(checked(configs, spec), protocol.ANCHORS["popgym"], popgym.SCORE)
    unknown = [row for row in rows if row not in TABLES[table].methods]
    if unknown:
        raise ValueError(f"the card of {table} names rows {unknown} it does not have; its rows are "
                         f"{list(TABLES[table].methods)}")
    configs = [{**rl.options(table, row), **changes, "seeds": seeds} for row in rows]
    return protocol.protocol_card(checked(configs, spec), rl.anchor_of(configs[0]))


def one_line(text: str) -> str:
    """A card (``protocol.protocol_card``'s title line, a blank line, its items) as one paragraph: the title, a
    colon, the items apart by middle dots."""
    title, _, *items = text.strip().split("\n")
    return f"{title}: {' · '.join(item.removeprefix('- ') for item in items)}"


def refresh(text: str) -> str:
    """``text`` with each card written anew after its comment."""
    return CARD.sub(lambda m: f"<!-- card: {m['spec']} --> {one_line(card(m['spec']))}", text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rtrl.reports.cards", description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="+", type=Path, help="Markdown pages whose cards to write")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 naming the stale pages")
    args = parser.parse_args(argv)
    stale = []
    for page in args.pages:
        text = page.read_text()
        fresh = refresh(text)
        if fresh != text:
            stale.append(str(page))
            if not args.check:
                atomic_write_text(page, fresh)
    if args.check and stale:
        print(f"stale protocol cards in {', '.join(stale)}: run python -m rtrl.reports.cards {' '.join(stale)}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
