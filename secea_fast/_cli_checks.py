"""What the command line checks before it starts a run, and how it writes
results after one.

* Errors of the parser itself (an unknown option, ``-N abc``) are one line
  too (:class:`OneLineParser`).
* Option values: :func:`option_problem` checks each option against its
  range and names the option as the user typed it (``--precision must be in
  [0, 18], got 30``), instead of the library's argument names (``digits``).
* Output paths (``run --json FILE``, ``study --out DIR``): checked before
  the run (:func:`output_file_problem`, :func:`output_dir_problem`: the
  directory exists, or can be made, and a file can be created in it; the
  check creates and removes a probe file, so read-only mounts and
  pseudo-filesystems such as /proc are found), so a typo does not cost a
  whole run.  If writing still fails after the run (the disk filled, the
  directory was removed), :func:`save_text` writes the result beside --
  the current directory, else the temporary directory -- and says where on
  stderr; the verdict is printed either way.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NoReturn

__all__ = ["OneLineParser", "option_problem", "output_file_problem", "output_dir_problem", "save_text", "save_result"]


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line on stderr (exit
    status 2): the message, which names the option, and where the usage
    is; not the usage block of a dozen lines above it."""

    def error(self, message: str) -> NoReturn:
        """Print ``prog: error: message (--help: usage)`` and exit 2."""
        self.exit(2, f"{self.prog}: error: {message} (--help: usage)\n")


def option_problem(checks: Iterable[tuple[str, object, float | None, float | None]]) -> str | None:
    """The first ``(option, value, low, high)`` whose value (or, for a list,
    one of its values) is outside [low, high] (None: unbounded), as a
    sentence naming the option; None if every value is in range (None
    values, options not given, are skipped)."""
    for flag, value, lo, hi in checks:
        if value is None:
            continue
        for v in (value if isinstance(value, (list, tuple)) else [value]):
            if isinstance(v, float) and not math.isfinite(v):
                return f"{flag} must be a finite number, got {v}"
            if (lo is not None and v < lo) or (hi is not None and v > hi):  # type: ignore[operator]
                if lo is not None and hi is not None:
                    rng = f"in [{lo:g}, {hi:g}]"
                elif lo is not None:
                    rng = f">= {lo:g}"
                else:
                    rng = f"<= {hi:g}"
                return f"{flag} must be {rng}, got {v}"
    return None


def _probe(directory: Path) -> str | None:
    try:
        fd, name = tempfile.mkstemp(prefix=".secea-fast-probe-", dir=directory)
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    os.close(fd)
    os.unlink(name)
    return None


def output_file_problem(path: str | os.PathLike[str], option: str) -> str | None:
    """Why ``path`` cannot be written as the output of ``option`` (one
    sentence naming the option), or None."""
    p = Path(path)
    if p.is_dir():
        return f"{option} {str(path)!r} is a directory; give a file name"
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.exists():
        return f"{option} {str(path)!r}: directory {str(parent)!r} does not exist"
    if not parent.is_dir():
        return f"{option} {str(path)!r}: {str(parent)!r} is not a directory"
    why = _probe(parent)
    if why:
        return f"{option} {str(path)!r}: cannot create a file in {str(parent)!r} ({why})"
    if p.exists() and not os.access(p, os.W_OK):
        return f"{option} {str(path)!r}: the file exists and is not writable"
    return None


def output_dir_problem(path: str | os.PathLike[str], option: str) -> str | None:
    """Why ``path`` cannot be (made and) written as the output directory
    of ``option``, or None.  Nothing is created but a probe file, removed
    again: the directory itself is made when the results are written."""
    p = Path(path)
    if p.exists():
        if not p.is_dir():
            return f"{option} {str(path)!r} exists and is not a directory"
        why = _probe(p)
        return f"{option} {str(path)!r}: cannot create files in it ({why})" if why else None
    anc = p.absolute().parent
    while not anc.exists():
        anc = anc.parent
    if not anc.is_dir():
        return f"{option} {str(path)!r}: {str(anc)!r} is not a directory"
    why = _probe(anc)
    return f"{option} {str(path)!r}: cannot create it in {str(anc)!r} ({why})" if why else None


def save_text(text: str, path: str | os.PathLike[str], option: str) -> Path:
    """Write ``text`` to ``path`` (its directory made if missing).  If that
    fails, write it to the same file name in the current directory, else in
    the temporary directory, and say so on stderr (naming ``option``).
    Returns the path written; OSError only if every place failed."""
    p = Path(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        return p
    except OSError as exc:
        first = exc
    for d in (Path.cwd(), Path(tempfile.gettempdir())):
        alt = d / (p.name or "secea-fast-result")
        if alt.resolve() == p.resolve():
            continue
        try:
            with open(alt, "x") as f:        # never overwrite another file
                f.write(text)
        except OSError:
            try:
                fd, name = tempfile.mkstemp(prefix=p.stem + "-", suffix=p.suffix, dir=d)
                with os.fdopen(fd, "w") as f:
                    f.write(text)
                alt = Path(name)
            except OSError:
                continue
        print(f"secea-fast: could not write {option} {str(path)!r} ({first.strerror or first}); "
              f"saved the result to {alt} instead", file=sys.stderr)
        return alt
    raise first


def save_result(text: str, path: str | os.PathLike[str], option: str, plot: Callable[[Path], Any], prog: str) -> int:
    """A study's JSON ``text`` saved as :func:`save_text` saves it, then
    ``plot(png_path)`` beside it (a missing matplotlib or an unwritable plot
    is said on stderr, the JSON kept); says what was written; exit status 0."""
    written = save_text(text, path, option)
    png = written.with_suffix(".png")
    try:
        plot(png)
    except ImportError:
        print('(matplotlib absent: no plot; pip install -e ".[studies]")', file=sys.stderr)
    except OSError as exc:
        print(f"{prog}: could not write the plot {png} ({exc.strerror or exc})", file=sys.stderr)
    else:
        print(f"\nwrote {written} and {png}")
        return 0
    print(f"\nwrote {written}")
    return 0
