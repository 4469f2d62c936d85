"""The protocol cards of the RL results pages (``rtrl.reports.cards``): every table of runs opens with a card that
its comment generates, the comment names the rows and seeds the table shows, and a card's spec that is wrong is
refused by name."""

from __future__ import annotations

import pathlib
import re

import pytest

from rtrl.reports import cards

DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs"
PAGES = [DOCS / "rl-results.md", DOCS / "rl-control.md"]


def sections(text: str):
    """``(heading, body)`` of each ``###`` section of a page."""
    parts = re.split(r"^(### .*)$", text, flags=re.MULTILINE)
    return list(zip(parts[1::2], parts[2::2], strict=True))


def ran(body: str) -> tuple[list[str], set[int]]:
    """The rows of a preset table (``| `preset` | method | ...``) that ran, and the seed counts its ``k/n`` cells
    show."""
    rows, seeds = [], set()
    for line in body.splitlines():
        cells = [c.strip() for c in line.split("|")[1:-1]]
        if len(cells) > 2 and cells[0].startswith("`") and "not run" not in cells:
            rows += [] if cells[1] in rows else [cells[1]]
            seeds |= {int(m.group(2)) for c in cells[3:6] for m in [re.search(r"\b(\d+)/(\d+)\b", c)] if m}
    return rows, seeds


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_card_is_what_its_comment_generates(page):
    text = page.read_text()
    assert text.count("<!-- card: ") >= 6
    assert cards.refresh(text) == text, f"run python -m rtrl.reports.cards docs/{page.name}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_table_of_runs_opens_with_a_card_naming_its_rows_and_seeds(page):
    """A section whose table shows runs has a card before that table, and its comment names the rows that ran;
    where the table counts seeds (``k/n``), the same count. [A card with a row left out, or 3 seeds where the table
    ran 5, fails here.]"""
    checked = 0
    for heading, body in sections(page.read_text()):
        table = body.find("\n|")
        if table < 0:
            continue
        rows, seeds = ran(body)
        if not rows and "IQM [95% CI]" not in body:  # a table of rows not run, or of readings
            continue
        spec = re.search(r"<!-- card: ([^\n]*) -->", body[:table])
        assert spec, f"{page.name}: {heading} has no card before its table"
        words = dict(w.split("=", 1) for w in spec.group(1).split()[1:])
        if rows:
            assert words["rows"].split(",") == rows, heading
        if len(seeds) == 1 and "seeds 0-4" not in body:
            assert int(words["seeds"]) == seeds.pop(), heading
        checked += 1
    assert checked >= 6


def test_a_card_says_the_runs_options_and_an_option_given_overrides_the_preset():
    """The card of memory-chain-16's exact row over 5 seeds, counted by hand from the preset (20,000 steps x 16
    environments, gamma 0.9, no extra inputs); given ``extra_inputs=time``, the card says so."""
    card = cards.card("memory-chain-16 rows=rtrl seeds=5")
    for line in ("- inputs: observation\n", "- frames: 320,000 per seed (20,000 steps x 16 environments)\n",
                 "- seeds: 5\n", "- discount: 0.9\n", "- environment: memory-chain (rtrl's own), memory_length=16\n"):
        assert line in card
    assert "- inputs: observation + time\n" in cards.card("memory-chain-16 rows=rtrl seeds=5 extra_inputs=time")
    suite = cards.card("popgym-suite rows=rtrl seeds=2 steps=100,Concentration:20 extra_inputs=action,reward,time")
    assert "- frames: 1,600 per seed (100 steps x 16 environments); 320 per seed (20 steps x 16 environments)" in suite
    assert "previous reward + time (anchor: observation + previous action + previous reward)" in suite


def test_the_anchor_agents_card_names_its_two_networks_and_the_runs_unsigned_statistics():
    """The -anchor-agent preset as it runs now: the agent an actor's and a critic's network with the entropy term
    signed in its step statistics too and the TD error's values at the current parameters (as the anchor's),
    nothing left that no option matches; with ``entropy_sign=td`` or ``td_refresh=false`` (the runs before the preset
    took them) the agent is a difference, the anchor's shown beside it, and with ``critic_network=false`` too (the
    runs before that) the same count."""
    card = cards.card("hopper-p-anchor-agent rows=rtrl seeds=2")
    assert ("- agent: an actor's and a critic's network, each rtu 384 (concatenated output) behind 2 blocks of 128, "
            "linear heads (sparse at the start), the spread softplus of a head, entropy 0.01 signed by the TD error, "
            "in the step statistics too, intentional 0.05 (critic 0.5), the TD error's two values at the current "
            "parameters\n") in card
    assert "what no option matches" not in card and "- differences from the anchor: 1 (seeds)\n" in card
    unsigned = cards.card("hopper-p-anchor-agent rows=rtrl seeds=2 entropy_sign=td")
    assert "entropy 0.01 signed by the TD error, intentional 0.05 (critic 0.5), the TD error's" in unsigned
    assert "- differences from the anchor: 2 (seeds, agent)\n" in unsigned
    stale = cards.card("hopper-p-anchor-agent rows=rtrl seeds=2 td_refresh=false")
    assert "in the step statistics too, intentional 0.05 (critic 0.5) (anchor: " in stale
    assert "- differences from the anchor: 2 (seeds, agent)\n" in stale
    before = cards.card("hopper-p-anchor-agent rows=rtrl seeds=2 critic_network=false entropy_sign=td")
    assert "- agent: rtu 384" in before and "what no option matches" not in before
    assert "- differences from the anchor: 2 (seeds, agent)\n" in before


@pytest.mark.parametrize("spec, said", [
    ("memory-chain-99 rows=rtrl seeds=5", "a card names a results table"),
    ("memory-chain-16 rows=rtrl", "needs seeds="),
    ("memory-chain-16 rows=rtrl seeds=5 extra", "must be KEY=VALUE, got 'extra'"),
    ("memory-chain-16 rows=rtrl,snap1 seeds=5", "names rows ['snap1'] it does not have"),
    ("hopper-p-anchor-agent rows=rtrl seeds=2 critic_network=False", "critic_network must be true or false, got "
     "'False'"),
    ("memory-chain-16 rows=rtrl seeds=5 hiden=4", "has unknown options ['hiden']"),
])
def test_a_wrong_spec_is_refused_naming_what_is_wrong(spec, said):
    with pytest.raises(ValueError, match=re.escape(said)):
        cards.card(spec)


def test_check_names_a_stale_page_and_writing_makes_it_current(tmp_path, capsys):
    page = tmp_path / "page.md"
    page.write_text("# A\n\n<!-- card: memory-chain-16 rows=rtrl seeds=5 -->\n\n| a |\n|---|\n")
    assert cards.main([str(page), "--check"]) == 1 and "stale protocol cards in" in capsys.readouterr().err
    assert cards.main([str(page)]) == 0 and cards.main([str(page), "--check"]) == 0
    card = page.read_text().split("\n")[2]
    assert card.startswith("<!-- card: memory-chain-16 rows=rtrl seeds=5 --> **Protocol** (generated from the ")
    assert " · seeds: 5 · " in card and card.endswith("the undiscounted return of an episode")
    assert page.read_text().endswith("episode\n\n| a |\n|---|\n")
