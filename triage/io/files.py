"""Files in and out: bounded UTF-8 reads; atomic writes that never land on an input or a foreign file."""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, TypeAlias

from ..defaults import LIMITS
from ..errors import Problem, UserError
from .private import owned_file, private_folder, stamp, write_owned
from .run import current

MAX_BYTES = LIMITS.file_bytes

_SYSTEM = ("/proc", "/sys", "/dev")


def _record_path(target: Path) -> Path | None:
    folder = private_folder("outputs")
    if folder is None:
        return None
    return folder / hashlib.sha256(os.path.realpath(target).encode("utf-8", "surrogateescape")).hexdigest()


def written_by_triage(target: Path) -> bool:
    """Whether ``target`` is, unchanged, a file triage wrote (recorded in the user's private folder)."""
    record = _record_path(target)
    data = owned_file(record, 256) if record is not None else None
    try:
        return data is not None and data.decode() == stamp(os.lstat(target))
    except (OSError, UnicodeDecodeError):
        return False


def remember_written(target: Path) -> None:
    """Record that triage wrote ``target`` as it is now (best effort: without a private folder, a later
    run needs --force to replace it)."""
    record = _record_path(target)
    if record is None:
        return
    with contextlib.suppress(OSError):                        # a target gone meanwhile: nothing to record
        write_owned(record, stamp(os.lstat(target)).encode())      # atomic; a failure leaves nothing


def check_target(target: Path, inputs: tuple[Path | str, ...], force: bool) -> None:
    """Refuse a target that is not (or would not be) a regular file, an input of the run, a foreign file
    (without force), or under a file (missing folders are fine: the writer makes them). Devices, pipes,
    sockets, symbolic links and /proc, /sys, /dev paths (as written or as resolved: /dev/shm is refused
    wherever it points) are refused even with --force."""
    label = str(target)
    if not label or label == "-":
        raise UserError([Problem(label or "''", path="", message="not a file name (leave -o out for stdout)")])
    paths = (os.path.abspath(target), os.path.realpath(target))
    if any(p == "/" or p == root or p.startswith(root + "/") for p in paths for root in _SYSTEM):
        raise UserError([Problem(label, path="", message="is a system path; triage writes only regular files")])
    real = paths[1]
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise UserError([Problem(label, path="", message=f"cannot write: {exc.strerror}")]) from None
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            raise UserError([Problem(label, path="", message="is a symbolic link; triage replaces only regular "
                                                             "files (give the path it points to)")])
        if stat.S_ISDIR(st.st_mode):
            raise UserError([Problem(label, path="", message="is a directory")])
        if not stat.S_ISREG(st.st_mode):
            kind = _KINDS.get(stat.S_IFMT(st.st_mode), "is not a regular file")
            raise UserError([Problem(label, path="", message=f"{kind}; triage writes only regular files")])
        if real in {os.path.realpath(src) for src in inputs} | current().reads.files:
            raise UserError([Problem(label, path="", message="refusing to write the output onto an input file")])
        if not force and not written_by_triage(target):
            raise UserError([Problem(label, path="", message=(
                "exists and was not written by triage (or changed since); pass --force to overwrite it"))])
    directory = target.parent if str(target.parent) else Path(".")
    existing = next(d for d in (directory, *directory.parents, Path(".")) if d.exists())
    if not existing.is_dir():
        raise UserError([Problem(label, path="", message=f"{existing} is not a directory")])


def room(target: Path, need: float, what: str) -> None:
    """Refuse, before any work, an output the disk under ``target`` has no room for (``need`` bytes, projected)."""
    import shutil

    directory = target.parent if str(target.parent) else Path(".")
    existing = next(d for d in (directory, *directory.parents, Path(".")) if d.exists())
    try:
        free = shutil.disk_usage(existing).free
    except OSError:
        return                                            # unknown: the write itself reports a full disk
    if need > free:
        raise UserError([Problem(str(target), path="", message=(
            f"{what} take about {_si_bytes(need)} and the disk holding {existing} has {_si_bytes(free)} free "
            f"(SI units: 1 MB = 1e6 B): a smaller grid, Parquet, or another disk"))])


def _si_bytes(n: float) -> str:
    """Bytes in SI units, three significant digits."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


Content: TypeAlias = "str | Callable[[BinaryIO], None]"


def write_atomic_all(outputs: list[tuple[Path, Content]], inputs: tuple[Path | str, ...] = (),
                     force: bool = False) -> None:
    """Write several outputs together: every target is checked first, missing folders are made, each is
    written to a temporary file beside it, and only when all are written are they renamed into place (a
    failure leaves none behind, nor the folders it made).

    ``content`` is text, or a function that streams bytes into a file.
    """
    targets = [Path(p) for p, _ in outputs]
    for target in targets:
        check_target(target, inputs, force)
    staged: list[tuple[str, Path]] = []
    made: list[Path] = []
    try:
        for target, (_, content) in zip(targets, outputs, strict=True):
            directory = target.parent if str(target.parent) else Path(".")
            made += _make_folders(directory)
            import tempfile  # loads when a file is written, not on every start
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
        if not force:                       # minutes may have passed: what appeared meanwhile is the user's
            for _, target in staged:
                if os.path.lexists(target) and not written_by_triage(target):
                    raise UserError([Problem(str(target), path="", message=(
                        "appeared or changed while triage was writing; kept as it is (pass --force to "
                        "overwrite it)"))])
        for tmp, target in staged:
            _place(tmp, target, force)
            remember_written(target)
    except OSError as exc:
        _undo(staged, made)
        raise UserError([Problem(str(targets[len(staged) - 1] if staged else targets[0]), path="",
                                 message=f"cannot write: {exc.strerror or exc}")]) from None
    except BaseException:
        _undo(staged, made)
        raise


def _place(tmp: str, target: Path, force: bool) -> None:
    """Rename ``tmp`` onto ``target``. Without --force a new target is linked, not renamed, so a file that
    appears in the last instant is never replaced (link fails where a name exists); a target triage wrote
    is replaced as it was checked."""
    if force or os.path.lexists(target):
        os.replace(tmp, target)
        return
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise UserError([Problem(str(target), path="", message=(
            "appeared while triage was writing; kept as it is (pass --force to overwrite it)"))]) from None
    except OSError:                                       # a file system without hard links
        os.replace(tmp, target)
        return
    os.unlink(tmp)


def _make_folders(directory: Path) -> list[Path]:
    """Make ``directory`` and its missing parents (``-o out/memos/kv2x.md``); the ones made, outermost first."""
    missing = [d for d in (directory, *directory.parents) if not d.exists()][::-1]
    for d in missing:
        d.mkdir()
    return missing


def _undo(staged: list[tuple[str, Path]], made: list[Path]) -> None:
    """Remove the temporary files of a failed write, then the folders it made (innermost first)."""
    for tmp, _ in staged:
        Path(tmp).unlink(missing_ok=True)
    for d in reversed(made):
        with contextlib.suppress(OSError):
            d.rmdir()


_KINDS = {stat.S_IFDIR: "is a directory", stat.S_IFCHR: "is a device", stat.S_IFBLK: "is a device",
          stat.S_IFIFO: "is a pipe (FIFO)", stat.S_IFSOCK: "is a socket"}


def read_bytes(path: Path | str, label: str | None = None, record: bool = True) -> bytes:
    """At most MAX_BYTES of a regular file, counted as they are read (a device or /proc file's size says
    nothing); devices, pipes, sockets and directories are refused without reading, so nothing blocks."""
    label = label or str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise UserError([Problem(label, path="", message="no such file")]) from None
    except IsADirectoryError:
        raise UserError([Problem(label, path="", message="is a directory, expected a file")]) from None
    except OSError as exc:
        raise UserError([Problem(label, path="", message=f"cannot read: {exc.strerror}")]) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = _KINDS.get(stat.S_IFMT(mode), "is not a regular file")
            raise UserError([Problem(label, path="", message=f"{kind}, expected a regular file")])
        chunks, size = [], 0
        while size <= MAX_BYTES:
            chunk = os.read(fd, min(1 << 16, MAX_BYTES + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise UserError([Problem(label, path="", message=f"cannot read: {exc.strerror}")]) from None
    finally:
        os.close(fd)
    if size > MAX_BYTES:
        raise UserError([Problem(label, path="", message=f"file is over the {MAX_BYTES // 1024} KiB limit")])
    if record:                                  # the package's own data files do not count against a run
        current().reads.record(str(path), size, label)
    return b"".join(chunks)


def read_text(path: Path | str, label: str | None = None, record: bool = True) -> str:
    """A UTF-8 text file of at most MAX_BYTES (read_bytes), or UserError naming it; contents never echoed."""
    label = label or str(path)
    raw = read_bytes(path, label, record)
    if b"\x00" in raw:
        raise UserError([Problem(label, path="", message="binary data (NUL bytes), expected text")])
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError([Problem(label, path="", message=(
            f"not UTF-8 text (bad byte at offset {exc.start})"))]) from None
