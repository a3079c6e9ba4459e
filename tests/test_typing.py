"""The public API is fully annotated (docs/API.md): every function in the
``__all__`` of a public module, and every public method of a public class,
annotates each parameter (but self / cls) and its return, and
``typing.get_type_hints`` resolves those annotations (no dangling forward
reference).  mypy checks the annotations against the code: ``bash .ci/typecheck``."""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import typing

import pytest

# the public modules of docs/API.md; their public submodules are found below
PUBLIC = ["secea_fast", "secea_fast.field", "secea_fast.linalg", "secea_fast.prg", "secea_fast.fixedpoint",
          "secea_fast.poly", "secea_fast.dpf", "secea_fast.paillier", "secea_fast.nt", "secea_fast.executor",
          "secea_fast.protocols", "secea_fast.flower", "secea_fast.studies", "secea_fast.galois",
          "secea_fast.numba"]
# modules that need an optional dependency: skipped when it is absent
NEEDS = {"secea_fast.flower": "flwr", "secea_fast.galois": "galois", "secea_fast.numba": "numba"}


def _public(name: str) -> bool:
    return not any(part.startswith("_") for part in name.split("."))


def _needs(name: str) -> str | None:
    for prefix, dep in NEEDS.items():
        if name == prefix or name.startswith(prefix + "."):
            return dep
    return None


def _discover() -> list[str]:
    names = set(PUBLIC)
    for root in PUBLIC:
        spec = importlib.util.find_spec(root)
        if spec is None or not spec.submodule_search_locations:
            continue
        for info in pkgutil.walk_packages(spec.submodule_search_locations, root + ".",
                                          onerror=lambda _name: None):
            if _public(info.name):
                names.add(info.name)
    return sorted(names)


def _import(name: str):
    dep = _needs(name)
    if dep is not None:
        pytest.importorskip(dep)
    return importlib.import_module(name)


def _generated(func) -> bool:
    """Methods that dataclasses / NamedTuple write (exec'd source, no file)."""
    code = getattr(func, "__code__", None)
    return code is not None and not code.co_filename.endswith(".py")


def _check_function(func, qualname: str, skip_first: bool, out: list[str]) -> None:
    func = inspect.unwrap(func)
    if not inspect.isfunction(func) or _generated(func):
        return
    try:
        params = list(inspect.signature(func, follow_wrapped=False).parameters.values())
    except (TypeError, ValueError):
        return
    if skip_first and params:
        params = params[1:]
    missing = [p.name for p in params if p.annotation is inspect.Parameter.empty]
    if missing:
        out.append(f"{qualname}: parameters without annotation: {', '.join(missing)}")
    if "return" not in func.__annotations__:
        out.append(f"{qualname}: return not annotated")
    try:
        typing.get_type_hints(func)
    except Exception as exc:  # noqa: BLE001 - any failure to resolve is the finding
        out.append(f"{qualname}: annotations do not resolve: {type(exc).__name__}: {exc}")


def _own_package(obj) -> bool:
    return (getattr(obj, "__module__", None) or "").split(".")[0] == "secea_fast"


def _check_class(cls: type, qualname: str, out: list[str]) -> None:
    try:
        typing.get_type_hints(cls)
    except Exception as exc:  # noqa: BLE001
        out.append(f"{qualname}: class annotations do not resolve: {type(exc).__name__}: {exc}")
    seen: set[str] = set()
    for klass in cls.__mro__:
        if not _own_package(klass):
            continue
        fields = {f.name for f in dataclasses.fields(klass)} if dataclasses.is_dataclass(klass) else set()
        for name, attr in vars(klass).items():
            if name in seen or (name.startswith("_") and name != "__init__") or name in fields:
                continue
            seen.add(name)
            where = f"{qualname}.{name}"
            if isinstance(attr, staticmethod):
                _check_function(attr.__func__, where, False, out)
            elif isinstance(attr, classmethod):
                _check_function(attr.__func__, where, True, out)
            elif isinstance(attr, property):
                for accessor in (attr.fget, attr.fset):
                    if accessor is not None:
                        _check_function(accessor, where, True, out)
            elif inspect.isfunction(attr) and attr.__module__ != "typing":   # typing.Protocol's own __init__
                _check_function(attr, where, True, out)


def unannotated(module) -> list[str]:
    """What the public names of ``module`` leave unannotated (empty: nothing)."""
    out: list[str] = []
    for name in getattr(module, "__all__", ()):
        obj = getattr(module, name)
        where = f"{module.__name__}.{name}"
        if inspect.ismodule(obj) or not _own_package(obj):
            continue
        if inspect.isclass(obj):
            _check_class(obj, where, out)
        elif inspect.isfunction(inspect.unwrap(obj)):                # lru_cache, contextmanager
            _check_function(obj, where, False, out)
        elif inspect.isfunction(getattr(obj, "py_func", None)):      # numba dispatchers
            _check_function(obj.py_func, where, False, out)
    return out


MODULES = _discover()


def test_public_modules_are_found():
    assert "secea_fast.protocols.secea" in MODULES and "secea_fast.studies.recsys" in MODULES
    assert not [m for m in MODULES if not _public(m)]


@pytest.mark.parametrize("name", MODULES)
def test_public_api_is_annotated(name):
    module = _import(name)
    missing = unannotated(module)
    assert not missing, "\n".join(missing)


# --- docs/API.md lists the public names ---------------------------------------------------------------

API_MD = __import__("pathlib").Path(__file__).resolve().parents[1] / "docs" / "API.md"
BEGIN, END = "<!-- public names: begin -->", "<!-- public names: end -->"


def public_names() -> str:
    """The list docs/API.md carries: every public module with a non-empty ``__all__``, its names sorted
    (a module whose optional dependency is absent is listed as such, unchecked)."""
    lines = []
    for name in MODULES:
        dep = _needs(name)
        try:
            module = importlib.import_module(name)
        except ImportError:
            if dep is None:
                raise
            lines.append(f"* `{name}`: (needs `{dep}`; not checked here)")
            continue
        names = sorted(getattr(module, "__all__", ()))
        if names:
            lines.append(f"* `{name}` ({len(names)}): " + ", ".join(f"`{n}`" for n in names))
    return "\n".join(lines)


def _listed() -> str:
    text = API_MD.read_text()
    return text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip()


def test_api_md_lists_the_public_names():
    """Regenerate with ``PYTHONPATH=. python3 tests/test_typing.py`` (it rewrites the list in docs/API.md).
    Modules whose optional dependency is absent here are left out of the comparison."""
    def module(line: str) -> str:
        return line.split("`")[1]

    want, got = public_names().splitlines(), _listed().splitlines()
    absent = {module(ln) for ln in want if "not checked here" in ln}
    want = [ln for ln in want if module(ln) not in absent]
    got = [ln for ln in got if module(ln) not in absent]
    assert got == want, "docs/API.md's public names are stale: run PYTHONPATH=. python3 tests/test_typing.py"


def test_the_api_list_check_has_power():
    assert "`secea_fast.protocols.secea` (" in _listed()
    assert "`union_and_share`" not in _listed()       # a helper that left the public surface


if __name__ == "__main__":                           # rewrite the list in docs/API.md
    text = API_MD.read_text()
    API_MD.write_text(text[:text.index(BEGIN) + len(BEGIN)] + "\n" + public_names() + "\n" + text[text.index(END):])
    print(f"{API_MD}: {public_names().count(chr(10)) + 1} modules listed")


# --- the check can fail -------------------------------------------------------------------------------

def _bare(x, y: int = 1):
    return x


def _typed(x: int) -> int:
    return x


def _dangling(x: NoSuchType) -> int:  # noqa: F821
    return 0


class _Dummy:
    def __init__(self, a):
        self.a = a

    @property
    def value(self):
        return self.a

    @classmethod
    def make(cls, a: int) -> _Dummy:
        return cls(a)

    @staticmethod
    def helper(b: int):
        return b


@dataclasses.dataclass
class _Record:
    x: int

    def total(self, y: int) -> int:
        return self.x + y


def test_the_check_reports_what_is_missing():
    import types
    module = types.ModuleType("secea_fast.dummy")
    for f in (_bare, _typed, _dangling, _Dummy, _Record):
        f.__module__ = "secea_fast.dummy"
        setattr(module, f.__name__, f)
    module.__all__ = ["_typed", "_Record"]
    assert unannotated(module) == []
    module.__all__ = ["_bare", "_typed", "_dangling", "_Dummy", "_Record"]
    found = unannotated(module)
    for f in (_bare, _typed, _dangling, _Dummy, _Record):
        f.__module__ = __name__
    assert found == ["secea_fast.dummy._bare: parameters without annotation: x",
                     "secea_fast.dummy._bare: return not annotated",
                     "secea_fast.dummy._dangling: annotations do not resolve: NameError: name 'NoSuchType' "
                     "is not defined",
                     "secea_fast.dummy._Dummy.__init__: parameters without annotation: a",
                     "secea_fast.dummy._Dummy.__init__: return not annotated",
                     "secea_fast.dummy._Dummy.value: return not annotated",
                     "secea_fast.dummy._Dummy.helper: return not annotated"]
