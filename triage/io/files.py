"""Files in and out: bounded UTF-8 reads; atomic writes that never land on an input or a foreign file."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, TypeAlias

from ..defaults import LIMITS
from ..errors import Problem, UserError

MAX_BYTES = LIMITS.file_bytes

_SIGNATURES = ("<!-- triage ", '{\n  "version":', '{\n  "claims":', "# triage workload file",
               '<svg xmlns="http://www.w3.org/2000/svg"', "workload,model,hardware,phase,context,",
               '"workload","model","hardware","phase","context",')


def _ours(path: Path) -> bool:
    try:
        with path.open("r", encoding="utf-8", errors="replace") as fh:
            head = fh.read(64)
    except OSError:
        return False
    return head.startswith(_SIGNATURES)


def _check_target(target: Path, inputs: tuple[Path | str, ...], force: bool) -> None:
    """Refuse a target that is an input, a directory, a foreign file (without force), or in no directory."""
    for src in inputs:
        if Path(src).exists() and target.exists() and target.resolve() == Path(src).resolve():
            raise UserError([Problem(str(target), path="", message="refusing to write the output onto an input file")])
    if target.exists() and not force and not _ours(target):
        raise UserError([Problem(str(target), path="", message=(
            "exists and was not written by triage; pass --force to overwrite it"))])
    if target.is_dir():
        raise UserError([Problem(str(target), path="", message="is a directory")])
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise UserError([Problem(str(target), path="", message=f"no such directory: {directory}")])


Content: TypeAlias = "str | Callable[[BinaryIO], None]"


def write_atomic_all(outputs: list[tuple[Path, Content]], inputs: tuple[Path | str, ...] = (),
                     force: bool = False) -> None:
    """Write several outputs together: every target is checked first, each is written to a temporary file
    beside it, and only when all are written are they renamed into place (a failure leaves none behind).

    ``content`` is text, or a function that streams bytes into a file.
    """
    targets = [Path(p) for p, _ in outputs]
    for target in targets:
        _check_target(target, inputs, force)
    staged: list[tuple[str, Path]] = []
    try:
        for target, (_, content) in zip(targets, outputs, strict=True):
            directory = target.parent if str(target.parent) else Path(".")
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
            staged.append((tmp, target))
            with os.fdopen(fd, "wb") as fh:
                if isinstance(content, str):
                    fh.write(content.encode("utf-8"))
                else:
                    content(fh)
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)            # mkstemp makes 0600; an output is an ordinary file
        for tmp, target in staged:
            os.replace(tmp, target)
    except BaseException:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: Path | str, content: Content, inputs: tuple[Path | str, ...] = (), force: bool = False) -> None:
    """Write one output via a temporary file and a rename: readers see the old or the new file."""
    write_atomic_all([(Path(path), content)], inputs, force)


def read_text(path: Path | str, label: str | None = None) -> str:
    """Read a UTF-8 text file of at most MAX_BYTES, or raise UserError naming it."""
    label = label or str(path)
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_BYTES:
            raise UserError([Problem(label, path="", message=(
                f"file is {size / 1e6:.1f} MB; the limit is {MAX_BYTES // 1024} KiB"))])
        raw = p.read_bytes()
    except FileNotFoundError:
        raise UserError([Problem(label, path="", message="no such file")]) from None
    except IsADirectoryError:
        raise UserError([Problem(label, path="", message="is a directory, expected a YAML file")]) from None
    except OSError as exc:
        raise UserError([Problem(label, path="", message=f"cannot read: {exc.strerror}")]) from None
    if b"\x00" in raw:
        raise UserError([Problem(label, path="", message="binary data (NUL bytes), expected YAML text")])
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError([Problem(label, path="", message=(
            f"not UTF-8 text (bad byte at offset {exc.start})"))]) from None
