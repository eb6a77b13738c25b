"""What every command shares: the error handler, output delivery, progress lines, and the common options.

Exit codes: 0 ok, 1 bad input (a user error, printed without a traceback),
2 bad usage (click), 3 an internal error (a bug: rerun with --traceback).
Colour only on a terminal and never with NO_COLOR set (https://no-color.org).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import io
import os
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

from ..defaults import LIMITS
from ..errors import Problem, UserError, escape
from ..inputs import oneoff
from ..io.files import Content, check_target, write_atomic_all
from ..io.run import new_run

EXIT_USER, EXIT_INTERNAL = 1, 3


@contextlib.contextmanager
def collector_off() -> Iterator[None]:
    """The garbage collector paused while a command's modules load: importing makes many objects and no
    garbage, so a collection meanwhile is wasted work (about 6 ms of `triage run`'s start-up)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _color() -> bool | None:
    """False under NO_COLOR; otherwise click decides (colour only on a terminal)."""
    return False if os.environ.get("NO_COLOR") else None


def error(message: str) -> None:
    click.echo(click.style("error:", fg="red", bold=True) + f" {message}", err=True, color=_color())


def warning(message: str) -> None:
    """A warning on stderr: printed even under --quiet, and the exit status is unchanged."""
    click.echo(click.style("warning:", fg="yellow", bold=True) + f" {escape(message)}", err=True, color=_color())


def info(message: str) -> None:
    """A progress line on stderr, unless --quiet."""
    if not click.get_current_context().find_root().params.get("quiet"):
        click.echo(escape(message), err=True)


def verbose(message: str) -> None:
    if click.get_current_context().find_root().params.get("verbose"):
        click.echo(escape(message), err=True)


def output_format(fmt: str | None, output: Path | None) -> str:
    """The --format given, else json for a .json output, else md."""
    return fmt or ("json" if output is not None and output.suffix == ".json" else "md")


def deliver(content: Content, output: Path | None, inputs: tuple[Path | None, ...], force: bool, note: str = "",
            beside: list[tuple[Path, Content]] | None = None) -> None:
    """Standard output, or atomic writes of the output and the files ``beside`` it (figures), all or none,
    never onto an input."""
    output = output_path(output)
    if output is None:
        if isinstance(content, str):
            click.echo(content, nl=False)
        else:
            content(sys.stdout.buffer)
        return
    extra = beside or []
    write_atomic_all([*extra, (output, content)], inputs=tuple(p for p in inputs if p is not None), force=force)
    for path, _ in extra:
        info(f"wrote {path}")
    info(f"wrote {output}{note}")


def report(problems: list[Any]) -> None:
    """Print problems, one line each, at most LIMITS.problems_shown of them, then how many more."""
    shown = problems[:LIMITS.problems_shown]
    for problem in shown:
        error(str(problem))
    if len(problems) > len(shown):
        error(f"and {len(problems) - len(shown):,} more problems (limit problems_shown)")


def check_output(output: Path | None, inputs: tuple[Path | None, ...], force: bool) -> None:
    """Refuse an impossible -o before any work (a device, a pipe, a foreign file, an input): the same checks
    ``deliver`` repeats when it writes, with the files the run read by then."""
    if output is not None:
        check_target(output, tuple(p for p in inputs if p is not None), force)


def output_path(output: Path | None) -> Path | None:
    """The -o path: None for standard output (no -o, or '-'); a name that is no file name is a user error."""
    if output is None or str(output) == "-":
        return None
    if not output.name or output.name in (".", ".."):
        raise UserError([Problem(escape(str(output)) or "''", path="", message="not a file name")])
    return output


def guard(fn: Callable[..., None]) -> Callable[..., None]:
    """The one top-level handler: user errors as addressed lines, bugs with a hint."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        ctx = click.get_current_context()
        new_run(command=True)
        for stream in (sys.stdout, sys.stderr):       # never a traceback for a character the terminal lacks
            if isinstance(stream, io.TextIOWrapper):
                stream.reconfigure(errors="backslashreplace")
        previous = _on_signals()
        try:
            fn(*args, **kwargs)
        except UserError as err:
            report(err.problems)
            ctx.exit(EXIT_USER)
        except BrokenPipeError:
            sys.stderr.close()                            # a reader that left (| head) is not an error
            ctx.exit(0)
        except OSError as exc:                            # the environment, not triage: a full disk, a closed stream
            where = f"{exc.filename}: " if exc.filename else ""
            error(f"{escape(where)}{exc.strerror or exc}")
            ctx.exit(EXIT_USER)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except KeyboardInterrupt as stop:                 # Ctrl-C, or SIGTERM / SIGHUP (_Signalled)
            click.echo("interrupted", err=True)
            ctx.exit(128 + getattr(stop, "signum", signal.SIGINT))
        except Exception as exc:  # noqa: BLE001 - the last line of defence
            if ctx.find_root().params.get("show_traceback"):
                import traceback  # only for --traceback: not on every run's start-up

                traceback.print_exc()
            else:
                click.echo(f"internal error: {type(exc).__name__}: {exc}\n"
                           "This is a bug in triage; rerun with --traceback and report it.", err=True)
            ctx.exit(EXIT_INTERNAL)
        finally:
            new_run()                                     # the command is over: later API calls start afresh
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    return wrapper


class _Signalled(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the command is, so it unwinds as Ctrl-C does: a write in progress removes
    its temporary files (io/files.py), nothing half-written is left."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _on_signals() -> dict[int, Any]:
    """SIGTERM and SIGHUP handled like Ctrl-C for the command; the handlers they had, to restore after it (none
    outside the main thread, where Python cannot set them)."""
    def stop(signum: int, _frame: Any) -> None:
        raise _Signalled(signum)

    previous: dict[int, Any] = {}
    for name in ("SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is None:
            continue
        try:
            previous[signum] = signal.signal(signum, stop)
        except ValueError:                                # not the main thread
            break
    return previous


FILE = click.Path(dir_okay=False, path_type=Path)

workloads_option = click.option(
    "--workloads", "-w", "workloads", type=FILE,
    help="Workload matrix file (default: the shipped chat-4k / docqa-128k / chat-4k-b16 / prefill-2k / serve-conv).")
model_option = click.option(
    "--model", "-m", "model", metavar="NAME|CONFIG.json",
    help="Replace every workload's model: a catalog name or a local Hugging Face config.json; with the matrix "
         "flags, the models of that matrix (comma-separated).")
catalog_option = click.option(
    "--catalog", "catalog_file", type=FILE,
    help="A user catalog (hardware: and models: entries, the workload file's format) merged over the shipped one; "
         "default: the file $TRIAGE_CATALOG names.")


_AXIS_HELP = {
    "hardware": ("NAME[,NAME…]", "Build the matrix from flags, no workload file: the chips (catalog names or "
                                 "--catalog entries; default: the shipped matrix's)."),
    "context": ("TOKENS[,…]", "The contexts of a matrix from flags, in tokens (required with the other axis "
                              "flags): 4096, 32k or 128k as the memo prints them (k = 1,024), or a doubling "
                              "range 4k..128k; several values and several flags make a grid."),
    "batch": ("N[,N…]", "The batch sizes of a matrix from flags (default 1), or a doubling range: 1..64 is 1, "
                        "2, 4, …, 64."),
    "phase": ("decode|prefill[,…]", "The phases of a matrix from flags (default decode)."),
    "engine": ("NAME|FILE.yaml", "The engine profile of a matrix from flags (triage catalog engines)."),
}


def _axis_options(fn: Callable[..., None]) -> Callable[..., None]:
    """The one-off flags (inputs/oneoff.py), packed into one ``axes`` argument: the command resolves them
    inside its guard, where a bad value is an addressed error."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        fn(*args, axes={k: kwargs.pop(k) for k in _AXIS_HELP}, **kwargs)
    for key, (metavar, text) in reversed(_AXIS_HELP.items()):
        wrapper = click.option(f"--{key}", key, metavar=metavar, help=text)(wrapper)
    return wrapper


def matrix_source(workloads: Path | None, model: str | None, axes: dict[str, str | None]) -> tuple[Any, str | None]:
    """What to price over and the model to put in it: the flags' own matrix (its model inside it), else the
    workload file (or the shipped default) with --model replacing every workload's model."""
    doc = oneoff.matrix(model, **axes)
    if doc is None:
        return workloads, model
    if workloads is not None:
        raise click.UsageError("-w FILE and the matrix flags (--hardware, --context, --batch, --phase) both name a "
                               "matrix: give one")
    return doc, None


def matrix_options(fn: Callable[..., None]) -> Callable[..., None]:
    """--workloads, --model, --catalog and the one-off axis flags: what a command prices the claim over (run,
    compare, sweep); the command calls matrix_source with them."""
    return workloads_option(model_option(catalog_option(_axis_options(fn))))


output_option = click.option("--output", "-o", type=FILE, help="Write here (atomically) instead of standard output.")
force_option = click.option("--force", is_flag=True, help="Overwrite an output file triage did not write.")
