"""Documents already found valid: the SHA-256 digests of (schema, document) pairs that passed the JSON Schema,
kept in the user's private folder so that a card run again skips loading jsonschema (a quarter of `triage run`'s
start-up). Data, never code: a digest only says "this exact document passed this exact schema".

The file is trusted only as io/private.py allows (a folder of the user's alone, mode 0700, a file no one else can
write) and only while it is, unchanged, a file triage wrote (io/files.py's record of its outputs: inode and
ctime, which no user can set): a record that was planted (checked out of a repository, copied in) cannot match,
so a planted digest never lets a card through. It is bounded: at most ``MOST`` digests, the newest kept; a
digest of the wrong size, a foreign or changed file or any fault means "not known", so the document is
validated again.
"""

from __future__ import annotations

import hashlib
from typing import Any

from .files import remember_written, written_by_triage
from .private import owned_file, private_folder, write_owned

MOST = 4096                     # digests kept (128 KiB)
_SIZE = 32                      # bytes of one SHA-256 digest
_FILE = "valid-documents"


def digest(schema_text: str, instance: Any, salt: str) -> bytes:
    """The digest of a document under a schema: every value with its type (1, 1.0, '1' and True differ; a
    mapping's keys sorted by that form), so two documents share a digest only if they are the same data."""
    h = hashlib.sha256()
    h.update(salt.encode("utf-8") + b"\0" + schema_text.encode("utf-8") + b"\0")

    def feed(x: Any) -> None:
        if isinstance(x, dict):
            h.update(b"{")
            for key, value in sorted(x.items(), key=lambda item: _form(item[0])):
                h.update(_form(key) + b":")
                feed(value)
                h.update(b",")
            h.update(b"}")
        elif isinstance(x, list):
            h.update(b"[")
            for value in x:
                feed(value)
                h.update(b",")
            h.update(b"]")
        else:
            h.update(_form(x))

    feed(instance)
    return h.digest()


def _form(x: Any) -> bytes:
    return f"{type(x).__name__}:{x!r}".encode("utf-8", "backslashreplace")


def _read() -> bytes:
    """The digests, if the file is the one triage last wrote, unchanged since, else nothing."""
    folder = private_folder("validation")
    if folder is None or not written_by_triage(folder / _FILE):
        return b""
    data = owned_file(folder / _FILE, MOST * _SIZE)
    ours = written_by_triage(folder / _FILE)                  # and still: nothing replaced it while it was read
    return data if ours and data is not None and len(data) % _SIZE == 0 else b""


def known(key: bytes) -> bool:
    """Whether this document passed this schema before (False on any doubt)."""
    data = _read()
    return any(data[i:i + _SIZE] == key for i in range(0, len(data), _SIZE))


def remember(key: bytes) -> None:
    """Add a digest (the newest ``MOST`` kept) and record the file as triage's; a failure to write only costs
    the next run a validation."""
    folder = private_folder("validation")
    if folder is not None and write_owned(folder / _FILE, (_read() + key)[-MOST * _SIZE:]):
        remember_written(folder / _FILE)
