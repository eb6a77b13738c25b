"""Writing outputs: atomically, never onto an input, never over a file triage did not write."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import Problem, UserError

_SIGNATURES = ("<!-- triage ", '{\n  "version":', '{\n  "claims":', "# triage workload file",
               '<svg xmlns="http://www.w3.org/2000/svg"')


def _ours(path: Path) -> bool:
    try:
        with path.open("r", encoding="utf-8", errors="replace") as fh:
            head = fh.read(64)
    except OSError:
        return False
    return head.startswith(_SIGNATURES)


def write_atomic(path: Path | str, text: str, inputs: tuple[Path | str, ...] = (), force: bool = False) -> None:
    """Write ``text`` to ``path`` via a temporary file and a rename: readers see the old or the new file."""
    target = Path(path)
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
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)            # mkstemp makes 0600; an output is an ordinary file
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
