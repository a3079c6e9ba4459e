"""Reading the text files users supply (ratings, triples, edge lists,
census rows): one reader every loader goes through, so each refuses the
same bad input the same way, in time linear in the file, and every error
names the file and the line and quotes at most a short excerpt of it.

* Only regular files are read: a FIFO would block forever, ``/dev/zero``
  would be read until memory ran out, a directory is not data.  The file
  is opened without blocking and checked with ``fstat`` before a byte is
  read (no window between a check and the open).
* Lines are read with a bound (:data:`MAX_LINE` bytes): a longer line is
  refused at once instead of being split, copied or quoted whole (a 16 MB
  line of a mistaken file used to end up inside an error message).
* Binary content (a NUL byte) and bytes that are not UTF-8 are refused
  with a short message naming the line and column, never mojibake.
"""
from __future__ import annotations

import os
import stat
from collections.abc import Iterator

__all__ = ["MAX_LINE", "excerpt", "text_lines", "check_text_path"]

MAX_LINE = 1 << 16           # bytes; Cora's cora.content, the longest line we know of, is ~3 KB
_EXCERPT = 80


def excerpt(text: str | bytes, n: int = _EXCERPT) -> str:
    """At most ``n`` characters of ``text``, quoted (``repr``), with "..."
    when it was longer: what an error message may show of a line."""
    if isinstance(text, bytes):
        text = text[:4 * n].decode("utf-8", "backslashreplace")
    return repr(text[:n]) + ("..." if len(text) > n else "")


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def check_text_path(path: object, what: str = "file") -> str:
    """``path`` as a str if it is a path (TypeError naming ``what``
    otherwise).  Nothing is opened."""
    if isinstance(path, bytes):
        return os.fsdecode(path)
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{what} path must be a file path, got {type(path).__name__}")
    return os.fspath(path)


def text_lines(path: str | os.PathLike[str], what: str = "file", max_line: int = MAX_LINE) -> Iterator[tuple[int, str]]:
    """(line number from 1, line without its end) of the UTF-8 text file
    ``path``; ValueError naming the file (and the line) for a missing or
    non-regular file, a line over ``max_line`` bytes, binary content or
    bytes that are not UTF-8.  ``what`` names the file's role in errors
    ("ratings file")."""
    p = check_text_path(path, what)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise ValueError(f"no such {what}: {p}") from None
    except OSError as exc:
        raise ValueError(f"{p}: cannot open the {what} ({exc.strerror or exc})") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ValueError(f"{p}: {_kind(mode)}, not a regular file; the {what} must be a text file")
        os.set_blocking(fd, True)
        f = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with f:
        k = 0
        while True:
            raw = f.readline(max_line + 1)
            if not raw:
                return
            k += 1
            if len(raw) > max_line and not raw.endswith(b"\n"):
                raise ValueError(f"{p}:{k}: line longer than {max_line} bytes (starts {excerpt(raw)}); "
                                 f"is this the {what}?")
            nul = raw.find(b"\0")
            if nul >= 0:
                raise ValueError(f"{p}:{k}: binary content (a NUL byte at column {nul + 1}); "
                                 f"the {what} must be text")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(f"{p}:{k}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at column "
                                 f"{exc.start + 1}); the {what} must be text") from None
            yield k, text.rstrip("\r\n")
