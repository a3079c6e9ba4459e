"""The layout rules of docs/ARCHITECTURE.md, checked on the source tree:
no module imports a private name of another module, the package's imports
have no cycle, a private module is imported only inside its package,
drivers sit above the protocols (no protocol or kernel
imports a driver), a file over ~600 lines says at its top why it is long,
and nothing points outside the repository."""
import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PKG = ROOT / "secea_fast"
if not (ROOT / "csrc").is_dir():
    pytest.skip("source-tree checks need a checkout (csrc/ is absent)", allow_module_level=True)


def _modules():
    mods = {}
    for p in PKG.rglob("*.py"):
        name = ".".join(p.relative_to(ROOT).with_suffix("").parts)
        mods[name[:-9] if name.endswith(".__init__") else name] = p
    return mods


MODS = _modules()


def _target(mod, path, node):
    if node.level == 0:
        return node.module or ""
    base = mod.split(".")
    if path.name != "__init__.py":
        base = base[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports():
    """(module, imported module, name or None, bound name) for every import."""
    out = []
    for mod, path in MODS.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                tgt = _target(mod, path, node)
                if tgt.startswith("secea_fast"):
                    out += [(mod, tgt, a.name, a.asname or a.name) for a in node.names]
            elif isinstance(node, ast.Import):
                out += [(mod, a.name, None, a.asname or a.name) for a in node.names
                        if a.name.startswith("secea_fast")]
    return out


def test_no_module_imports_a_private_name_of_another():
    bad, bound = [], {}
    for mod, tgt, name, local in _imports():
        full = f"{tgt}.{name}" if name else tgt
        if full in MODS:
            bound[mod, local] = full
        elif name and name.startswith("_"):
            bad.append(f"{mod}: from {tgt} import {name}")
    for mod, path in MODS.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.attr.startswith("_") and not node.attr.startswith("__")
                    and (mod, node.value.id) in bound):
                tgt = bound[mod, node.value.id]
                if not tgt.startswith(mod + ".") and f"{tgt}.{node.attr}" not in MODS:
                    bad.append(f"{mod}: {node.value.id}.{node.attr}")
    assert not bad, "private names used across modules:\n" + "\n".join(sorted(set(bad)))


def test_imports_have_no_cycle():
    graph = {m: set() for m in MODS}
    for mod, tgt, name, _ in _imports():
        dst = f"{tgt}.{name}" if name and f"{tgt}.{name}" in MODS else tgt
        # a package and its own submodules (re-exports) are one unit
        if dst in MODS and not (dst.startswith(mod + ".") or mod.startswith(dst + ".")):
            graph[mod].add(dst)
    state, stack = {}, []

    def visit(v):
        state[v] = 1
        stack.append(v)
        for w in graph[v]:
            if state.get(w) == 1:
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(w):] + [w]))
            if w not in state:
                visit(w)
        stack.pop()
        state[v] = 2

    for v in graph:
        if v not in state:
            visit(v)


def _private_module_violations(imports):
    """(importer, imported) for every import of a private module (a ``_name`` component) from outside the
    package that holds it: ``secea_fast.protocols._secea_local`` is for ``secea_fast.protocols.*`` only."""
    bad = set()
    for mod, tgt, name, _ in imports:
        dst = f"{tgt}.{name}" if name and f"{tgt}.{name}" in MODS else tgt
        parts = dst.split(".")
        for i, part in enumerate(parts):
            if part.startswith("_") and not part.startswith("__"):
                owner = ".".join(parts[:i])
                if not (mod == owner or mod.startswith(owner + ".")):
                    bad.add((mod, dst))
                break
    return sorted(bad)


def test_private_modules_stay_in_their_package():
    """A helper shared inside a package is a private module of that package, imported from nowhere else
    (so the public surface, the ``__all__`` of public modules, need not carry it)."""
    bad = _private_module_violations(_imports())
    assert not bad, "private modules imported from outside their package:\n" + "\n".join(
        f"{a} imports {b}" for a, b in bad)


def test_the_private_module_rule_has_power():
    fake = [("secea_fast.studies.framework", "secea_fast.protocols._secea_local", "make_parties", "make_parties"),
            ("secea_fast.protocols.secea_phe.round", "secea_fast.protocols._secea_local", "union_and_share",
             "union_and_share"),
            ("secea_fast.flower.demo", "secea_fast._checks", "check_int", "check_int")]
    assert _private_module_violations(fake) == [("secea_fast.studies.framework",
                                                  "secea_fast.protocols._secea_local")]


# The driver layer (docs/ARCHITECTURE.md): what runs the protocols for a user -- the command line and
# its jobs, the benchmarks, the studies, the Flower deployment, the data.  A module is a driver when
# its dotted name is one of these or starts with one and a dot.
DRIVERS = ("secea_fast.__main__", "secea_fast.cli", "secea_fast._cli_checks", "secea_fast._data_cli",
           "secea_fast._progress", "secea_fast.jobs", "secea_fast.datasets", "secea_fast.workloads",
           "secea_fast.bench", "secea_fast.studies", "secea_fast.flower")


def _is_driver(mod):
    return any(mod == d or mod.startswith(d + ".") for d in DRIVERS)


def _layer_violations(imports):
    """(importer, imported) for every import of a driver by a module that is not one."""
    bad = set()
    for mod, tgt, name, _ in imports:
        dst = f"{tgt}.{name}" if name and f"{tgt}.{name}" in MODS else tgt
        if _is_driver(dst) and not _is_driver(mod):
            bad.add((mod, dst))
    return sorted(bad)


def test_drivers_are_listed_modules():
    missing = [d for d in DRIVERS if d not in MODS]
    assert not missing, f"DRIVERS names modules that do not exist: {missing}"


def test_no_protocol_or_kernel_imports_a_driver():
    """Protocols and kernels never import the CLI, jobs, bench, studies, Flower or data modules
    (lazily inside a function included: ast.walk sees every import)."""
    bad = _layer_violations(_imports())
    assert not bad, "drivers imported from below:\n" + "\n".join(f"{a} imports {b}" for a, b in bad)


def test_the_layer_rule_has_power():
    """A protocol importing a workload, or a kernel importing the CLI, is found."""
    fake = [("secea_fast.protocols.secea.round", "secea_fast", "workloads", "workloads"),
            ("secea_fast.field", "secea_fast.cli", "main", "main"),
            ("secea_fast.studies.recsys", "secea_fast.protocols", "secea", "secea")]  # downward: fine
    assert _layer_violations(fake) == [("secea_fast.field", "secea_fast.cli"),
                                       ("secea_fast.protocols.secea.round", "secea_fast.workloads")]


SOURCES = sorted([*PKG.rglob("*.py"), *(ROOT / "csrc").rglob("*.[ch]"), *(ROOT / "bench").rglob("*.py"),
                  *(ROOT / "tests").glob("*.py")])


@pytest.mark.parametrize("path", [p for p in SOURCES if p.parent.name != "tests"],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_long_files_say_why(path):
    text = path.read_text()
    if len(text.splitlines()) > 650:
        assert "Length (" in text[:6000], f"{path.name}: over ~600 lines and no reason at its top"


def test_nothing_points_outside_the_repository():
    pattern = re.compile(r"\.\./shared|\bseed 00\d|\bissues? #?\d+\b|\bARCHITECTURE\.md habit")
    docs = [*(ROOT / "docs").glob("*.md"), ROOT / "README.md"]
    bad = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in SOURCES + docs if p != pathlib.Path(__file__).resolve()
           for m in pattern.finditer(p.read_text())]
    assert not bad, "\n".join(bad)
