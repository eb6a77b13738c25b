"""The `triage` command: a thin shell over the core, one module per command (cli/<command>.py).

Each command's module is imported when that command runs, so `triage run` does not pay for calibrate's or
compare's imports (start-up is part of what a user waits for).
"""

from __future__ import annotations

import gc
import importlib
import sys
from typing import Any

import click

from .. import __version__

COMMANDS = {"run": "run", "compare": "compare", "sweep": "sweep", "validate": "validate",
            "calibrate": "calibrate", "schema": "schema", "new": "new", "catalog": "catalog"}


class LazyGroup(click.Group):
    """A group whose subcommands live in triage.cli.<module>.command, imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """click's entry point, with what happens outside any command (--help, --version, a usage error) held to
        the guard's rules: a full disk or a closed stream is one line and exit 1, a reader that left exit 0."""
        try:
            return super().main(*args, **kwargs)
        except BrokenPipeError:
            sys.stderr.close()
            sys.exit(0)
        except OSError as exc:
            sys.stderr.write(f"error: {exc.strerror or type(exc).__name__}\n")
            sys.exit(1)
        finally:
            if not args and "args" not in kwargs and kwargs.get("standalone_mode", True):
                # the console script's process ends with the command: what it made lives until then, so the
                # interpreter's last collection need not walk it (gc.freeze: ~13 ms of every `triage run`'s
                # exit). Not when called in-process with arguments or standalone_mode=False (click's
                # CliRunner, a program embedding triage that goes on after the command).
                gc.freeze()

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module = importlib.import_module(f"{__name__}.{COMMANDS[name]}")
        command: click.Command = module.command
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version=__version__, prog_name="triage")   # the distribution is llm-triage
@click.option("--traceback", "show_traceback", is_flag=True, help="Show the traceback of an internal error.")
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but the output and errors.")
@click.option("--verbose", "-v", is_flag=True, help="Also print what was read and how long each stage took.")
def main(show_traceback: bool, quiet: bool, verbose: bool) -> None:
    """Turn an LLM-inference paper's claim into workload-aware GO / NO-GO verdicts.

    \b
    Example:
      triage run claims/kv2x.yaml
      triage run claims/kv2x.yaml --workloads my-matrix.yaml -o memo.md
      triage sweep claims/kv2x.yaml -w grid.yaml -o cells.csv
      triage validate claims/*.yaml
      triage new --direction cache --id my-paper
      triage catalog models

    Exit codes: 0 ok, 1 bad input, 2 bad usage, 3 internal error.
    """


def __getattr__(name: str) -> Any:
    """triage.cli.<command> as a module attribute, imported on first use (tests patch through it)."""
    if name in COMMANDS:
        return importlib.import_module(f"{__name__}.{COMMANDS[name]}")
    raise AttributeError(name)
