"""The package's import graph: layers only import downwards, and nothing imports in a cycle.

Every ``import`` statement of ``streamflow`` counts, including the ones inside
functions (lazy) and under ``if TYPE_CHECKING:``: a lazy import that dodges a
cycle at run time is still a cycle in the design. The layers, bottom to top,
are listed in ``LAYERS`` (``docs/architecture.md`` draws the same picture).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "streamflow"

#: module prefix -> layer; a module may import its own layer or lower ones.
LAYERS: dict[str, int] = {
    # foundation: plain data types and facts, numpy at most
    "streamflow.types": 0,
    "streamflow.errors": 0,
    "streamflow.rng": 0,
    "streamflow.backend": 0,
    "streamflow.distributed": 0,
    "streamflow.sharding": 0,
    "streamflow.tensor": 0,
    "streamflow.tensors": 0,  # DALI's nvidia.dali.tensors (isinstance checks)
    "streamflow.stats": 0,
    "streamflow._native": 0,
    "streamflow.tfrecord": 0,
    # the operator contract and the traced graph; storage and codecs
    "streamflow.operator": 1,
    "streamflow.expressions": 1,
    "streamflow.subscript": 1,
    "streamflow.expression_kernels": 1,
    "streamflow.graph": 1,
    "streamflow.io": 1,
    "streamflow.codecs": 1,
    # operators (builder, spec, CPU code) and the fn namespaces over them
    "streamflow.ops": 2,
    "streamflow.fn": 3,
    "streamflow.math": 3,
    "streamflow.autograph": 3,
    "streamflow.auto_aug": 3,
    # the engine
    "streamflow.runtime": 4,
    # GPU execution: implements the engine's stage interface
    "streamflow.gpu": 5,
    # the user-facing pipeline and what is built on it
    "streamflow.pipeline": 6,
    # dynamic mode: operators run at once on real data; pipeline_def(debug=True) runs on it
    "streamflow.dynamic": 6,
    "streamflow.experimental": 7,  # DALI's spelling: streamflow.experimental.dynamic
    "streamflow.plugin": 7,
    "streamflow.serve": 7,
    "streamflow.profile": 7,
    "streamflow.info": 7,
    "streamflow.cli": 8,
    "streamflow.demo": 8,
    "streamflow.tools": 8,
    "streamflow": 9,  # the package's own __init__ re-exports the public API
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def _layer(module: str) -> int:
    best = ""
    for prefix in LAYERS:
        if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
            best = prefix
    assert best, f"{module} is in no layer: add it to LAYERS (and to docs/architecture.md)"
    return LAYERS[best]


def _resolve(module: str, level: int, target: str | None) -> str:
    """The absolute name of a (possibly relative) import made in ``module``."""
    if level == 0:
        return target or ""
    base = module.split(".") if _is_package(module) else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _imports(module: str) -> list[tuple[str, str | None, int]]:
    """(imported module, imported name or None, line) for every import statement."""
    tree = ast.parse(MODULES[module].read_text(), str(MODULES[module]))
    found: list[tuple[str, str | None, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, None, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            source = _resolve(module, node.level, node.module)
            for alias in node.names:
                found.append((source, alias.name, node.lineno))
    return [f for f in found if f[0] == "streamflow" or f[0].startswith("streamflow.")]


def _edges() -> dict[str, set[str]]:
    """module -> the streamflow modules it imports (a name that is a submodule counts as it)."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module in MODULES:
        for source, name, _ in _imports(module):
            target = f"{source}.{name}" if name and f"{source}.{name}" in MODULES else source
            while target not in MODULES:  # "streamflow._native._imgproc" is a C extension
                target = target.rsplit(".", 1)[0]
            if target != module:
                graph[module].add(target)
    return graph


def test_every_package_has_an_init() -> None:
    for folder in [ROOT, *(p for p in ROOT.rglob("*") if p.is_dir() and p.name != "__pycache__")]:
        if any(folder.glob("*.py")):
            assert (folder / "__init__.py").exists(), f"{folder} is a namespace package: add __init__.py"


def test_every_import_names_a_real_module() -> None:
    """A lazy import of a module that was moved fails only when that code runs: catch it here."""
    bad = []
    for module in MODULES:
        for source, name, line in _imports(module):
            if source in MODULES or source.startswith("streamflow._native._"):
                continue
            bad.append(f"{module}:{line} imports {source}, which does not exist")
    assert not bad, "imports of missing modules:\n" + "\n".join(bad)


def test_nothing_imports_upwards() -> None:
    bad = []
    for module in MODULES:
        for source, name, line in _imports(module):
            target = f"{source}.{name}" if name and f"{source}.{name}" in MODULES else source
            if module == "streamflow" or target == "streamflow":
                continue  # the package's __init__ is the top; importing `streamflow` itself is a re-export
            if _layer(target) > _layer(module):
                bad.append(f"{module}:{line} imports {target} (layer {_layer(target)} > {_layer(module)})")
    assert not bad, "upward imports:\n" + "\n".join(bad)


def test_no_import_cycles() -> None:
    graph = _edges()
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycles.append(" -> ".join([*stack[stack.index(n):], n]))
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    # A package __init__ importing its own submodules is how re-exports work;
    # a submodule importing its package's __init__ back is the cycle to catch.
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_no_private_names_across_modules() -> None:
    bad = []
    for module in MODULES:
        for source, name, line in _imports(module):
            if name is None or not name.startswith("_") or name.startswith("__"):
                continue
            if f"{source}.{name}" in MODULES or source.startswith("streamflow._native"):
                continue  # a private module, imported inside its own package
            bad.append(f"{module}:{line} imports private {name} from {source}")
    assert not bad, "private names used across modules:\n" + "\n".join(bad)


def test_no_private_attributes_of_other_modules() -> None:
    """``npy._open(...)`` on an imported streamflow module is a private import too."""
    bad = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text())
        aliases: dict[str, str] = {}  # local name -> streamflow module it stands for
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = _resolve(module, node.level, node.module)
                for alias in node.names:
                    if f"{source}.{alias.name}" in MODULES:
                        aliases[alias.asname or alias.name] = f"{source}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in MODULES and alias.asname:
                        aliases[alias.asname] = alias.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                bad.append(f"{module}:{node.lineno} uses {aliases[node.value.id]}.{node.attr}")
    assert not bad, "private attributes of other modules used:\n" + "\n".join(bad)


@pytest.mark.parametrize("banned", ["cupy", "kvikio", "torch", "jax", "nvidia.nvimgcodec"])
def test_optional_packages_are_imported_lazily(banned: str) -> None:
    """No module imports an optional package at its top level (``import streamflow`` stays light)."""
    bad = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text())
        for node in tree.body:  # top-level statements only
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            if any(n == banned or n.startswith(banned + ".") for n in names):
                bad.append(f"{module}:{node.lineno}")
    assert not bad, f"{banned} imported at module level in: {bad}"
