"""`triage catalog`: browse the shipped hardware, models and workloads; import a Hugging Face config.json."""

from __future__ import annotations

from pathlib import Path

import click
import yaml

from ..errors import escape
from ..inputs.catalog import resolve
from ..inputs.hfconfig import load_model, read_config, to_entry
from ..report.catalog_view import ROWS, render
from .common import FILE, catalog_option, deliver, force_option, guard


@click.group(name="catalog")
def command() -> None:
    """Browse the shipped hardware, models and workloads; import a Hugging Face config.json.

    \b
    Example:
      triage catalog hardware
      triage catalog models --format json
      triage catalog import ./Meta-Llama-3-8B/config.json --name llama-3-8b-local
    """


def _section(section: str) -> click.Command:
    @click.command(name=section, help=(f"The {section} of the shipped catalog (merged with --catalog or "
                                       f"$TRIAGE_CATALOG), with derived figures and sources.\n\n\b\n"
                                       f"Example:\n  triage catalog {section}\n"
                                       f"  triage catalog {section} --format json"))
    @click.option("--format", "-f", "fmt", type=click.Choice(["md", "json"]), default="md",
                  help="md (a table) or json.")
    @catalog_option
    @guard
    def show(fmt: str, catalog_file: Path | None) -> None:
        click.echo(render(section, fmt, resolve(catalog_file)), nl=False)

    return show


for _name in ROWS:
    command.add_command(_section(_name))


@command.command(name="import")
@click.argument("config", type=FILE)
@click.option("--name", "key", required=True, help="The model's name in the catalog.")
@click.option("--output", "-o", type=FILE, help="Write a workload file holding the entry (atomically) instead of "
                                                 "printing it.")
@force_option
@guard
def import_config(config: Path, key: str, output: Path | None, force: bool) -> None:
    """Turn a local Hugging Face config.json into a catalog model entry (YAML).

    \b
    Example:
      triage catalog import ./Mixtral-8x7B-v0.1/config.json --name mixtral
      triage catalog import config.json --name mine -o my-models.yaml
    """
    entry = to_entry(read_config(config), str(config))
    model = load_model(config, key=key)          # validates it as the catalog would
    header = (f"# triage workload file: model {key!r} from {escape(str(config))}\n"   # a name's line break escaped
              f"# {model.params:,.0f} parameters, {model.kv_elements_per_token:,.0f} KV elements per token\n")
    text = header + yaml.safe_dump({"models": {key: entry}}, sort_keys=False, allow_unicode=True, width=100)
    deliver(text, output, (config,), force)
