"""The user's private triage folder ($XDG_CACHE_HOME/triage when that is an absolute path, as the XDG Base
Directory spec asks; else ~/.cache/triage): used only when it is provably the user's own — a real folder (no
symlink), owned by the user, mode 0700 (a folder of the user's that others could enter is closed first) — else
not at all. It holds data, never code, and a file in it is believed only where its stamp (``stamp``: inode and
ctime, which no user can set) matches one triage recorded when it wrote it: a folder checked out of a
repository (a checkout as $HOME) can hold files of the user's, mode 0600, that triage never wrote."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def private_folder(name: str) -> Path | None:
    """``<cache>/triage/<name>``, created 0700 if needed; None unless it and its parent are ours alone."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache") / "triage"   # a relative one: ignored
    folder = base / name
    try:
        for path in (base, folder):
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
            st = os.lstat(path)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
                return None
            if st.st_mode & 0o077:                # ours but open to others (an older triage made it): close it
                os.chmod(path, 0o700)
                if os.lstat(path).st_mode & 0o077:
                    return None
    except (OSError, RuntimeError):          # RuntimeError: no home directory
        return None
    return folder


def stamp(st: os.stat_result) -> str:
    """What identifies one written version of a file: device, inode, size, mtime and ctime (ctime cannot be
    set by a user, so a file changed, replaced or checked out after triage wrote it no longer matches)."""
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def owned_file(path: Path, max_bytes: int) -> bytes | None:
    """The bytes of a regular file of ours that no one else can write, at most ``max_bytes``; else None."""
    try:
        st = os.lstat(path)
        if (not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022
                or st.st_size > max_bytes):
            return None
        return path.read_bytes()
    except OSError:
        return None


def write_owned(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` in a private folder atomically (a temporary file, then a rename); False on any
    failure (a full or read-only disk), leaving nothing behind: a cache write is never worth an error."""
    tmp = None
    try:
        import tempfile  # loads when a file is written, not on every start
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
        return True
    except OSError:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        return False
