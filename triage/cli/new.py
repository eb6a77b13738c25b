"""`triage new`: write a commented claim card for one direction; never overwrites, writes atomically
through the guard and writer of `run -o`."""

from __future__ import annotations

import os
import re
from pathlib import Path

import click

from ..errors import Problem, UserError
from ..inputs.cards import PLACEHOLDER
from ..io.files import write_atomic_all
from ..io.resources import resource_dir
from ..report.scaffold import card_text
from .common import FILE, guard, info


def _schema_prefix(card: Path) -> str:
    """Relative path from a new card to this checkout's schemas/, else the installed copy."""
    schemas = resource_dir("schemas").resolve()
    try:
        return os.path.relpath(schemas, card.resolve().parent) + "/"
    except ValueError:
        return schemas.as_uri() + "/"


@click.command(name="new")
@click.option("--direction", "-d", required=True,
              type=click.Choice(["attention", "cache", "weights", "decoding", "system"]),
              help="Which of the five directions the paper moves (attention, cache, weights, decoding, system: the "
                   "course page, module 12.4, the source of the method).")
@click.option("--id", "card_id", required=True, help="The card's id, lowercase (also its file name).")
@click.option("--output", "-o", type=FILE, help="Where to write it (default: claims/ID.yaml).")
@guard
def command(direction: str, card_id: str, output: Path | None) -> None:
    """Write a commented claim card for a paper; never overwrites.

    \b
    Example:
      triage new --direction cache --id kivi
      triage new -d weights --id awq -o cards/awq.yaml
    """
    if not re.fullmatch(r"[a-z0-9][a-z0-9._+-]*", card_id):
        raise UserError([Problem("--id", path="", message=(
            f"{card_id!r} is not a card id: lowercase letters, digits, '.', '_', '+', '-'"))])
    target = output or Path("claims") / f"{card_id}.yaml"
    if os.path.lexists(target):          # even a card triage wrote: it is the user's once written
        raise UserError([Problem(str(target), path="", message="exists: triage new never overwrites a card")])
    # run -o's guard and atomic writer (it makes missing folders): a full disk leaves no empty card, nor the
    # folders it made, behind to block the rerun
    write_atomic_all([(target, card_text(card_id, direction).replace("../schemas/", _schema_prefix(target)))])
    info(f"wrote {target}: replace each {PLACEHOLDER} with the paper's value, then `triage validate {target}`")
