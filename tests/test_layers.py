"""tidal's packages form layers: every import points down, and no files or packages import in a circle.

The import graph is read from the source with `ast` (imports at module level and inside functions,
relative and absolute); the repository root is the package `tidal`.
"""
from __future__ import annotations

import ast
import collections
import fnmatch
import functools
import pathlib
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parents[1]
SKIP_DIRS = {"tests", "perf", "perf-results", "build", "__pycache__"}  # clients of tidal, not parts of it

# The one declaration of the layering, top first. A unit is a subpackage of tidal or a root-level module
# (fnmatch patterns; "(root)" is tidal/__init__.py, the public face). A unit may import units of its own
# layer (without a circle, see test_no_cycle_between_packages) and of any layer below it, never above.
# compat is torch's namespace: every name of tidal's public face plus torch's own, so it sits on the face;
# the profiler instruments the face's functions.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("compat", "__main__", "_pytest_plugin"),
    ("(root)", "profiler"),
    ("fx", "distributed", "distributions", "nested", "utils", "func", "serialization*"),
    ("nn", "optim"),
    ("comm",),
    ("ops",),
    ("autograd",),
    ("tensor",),
    ("vm",),
)

# Imports against the layering that remain, each with why; the checks above leave them out. Shrink, never grow.
KNOWN_UPWARD: dict[tuple[str, str], str] = {
    ("fx", "compat"): "fx writes and reads graphs in torch's names (torch.ops, torch.add...), which compat's namespace "
                      "holds, while compat re-exports fx as torch.fx",
    ("serialization*", "compat"): "torch's checkpoint format names objects by their torch names: loading finds "
                                  "them under tidal.compat, saving a tidal layer names it as compat lays it out",
}

# Debt the last two checks still allow, per unit: function-level imports of tidal modules without a reason comment,
# and files caught in an import circle inside their package. Lower these as the debt goes; never raise them.
LATE_IMPORTS_LEFT: dict[str, int] = {}
FILE_CIRCLES_LEFT: dict[str, int] = {}


@dataclass(frozen=True)
class Import:
    """One import of a tidal module: where it is written and what it names."""
    source: str          # importing module, e.g. "tidal.ops.reductions"
    path: str            # its file, relative to the root
    line: int
    target: str          # the imported tidal module, e.g. "tidal.autograd.graph"
    in_function: bool
    reason: bool         # a comment on the import's line or the line above says why it is there

    def where(self) -> str:
        return f"{self.path}:{self.line} imports {self.target}"


@functools.lru_cache(maxsize=None)
def _module_files() -> dict[str, pathlib.Path]:
    files = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if any(part in SKIP_DIRS or part.startswith(".") or part.endswith(".egg-info") for part in rel.parts[:-1]):
            continue
        parts = ["tidal", *rel.with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        files[".".join(parts)] = path
    return files


def _comment_lines(text: str) -> tuple[set[int], set[int]]:
    """Lines that carry a comment, and lines that are only a comment."""
    with_comment, only_comment = set(), set()
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("#"):
            only_comment.add(number)
            with_comment.add(number)
        elif "#" in line:
            with_comment.add(number)  # a '#' inside a string is rare on an import line
    return with_comment, only_comment


class _Reader(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool, modules: dict, text: str, path: str):
        self.module, self.modules, self.path = module, modules, path
        self.package = module if is_package else module.rpartition(".")[0]
        self.with_comment, self.only_comment = _comment_lines(text)
        self.depth = 0
        self.found: list[Import] = []

    def _visit_function(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _visit_function

    def _add(self, node, target: str) -> None:
        if target != "tidal" and not target.startswith("tidal."):
            return
        while target not in self.modules and "." in target:  # `from tidal.x import name`: the module is tidal.x
            target = target.rpartition(".")[0]
        first = node.lineno
        reason = bool({first, node.end_lineno} & self.with_comment) or (first - 1) in self.only_comment
        self.found.append(Import(self.module, self.path, first, target, self.depth > 0, reason))

    def visit_Import(self, node):
        for alias in node.names:
            self._add(node, alias.name)

    def visit_ImportFrom(self, node):
        if node.level:
            base = self.package.split(".")[: len(self.package.split(".")) - node.level + 1]
            stem = ".".join(base + ([node.module] if node.module else []))
        else:
            stem = node.module or ""
        for alias in node.names:
            name = f"{stem}.{alias.name}"
            self._add(node, name if name in self.modules else stem)

    def visit_Call(self, node):
        # importlib.import_module("tidal.x") / import_module(".x", __name__) with a constant name
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if called == "import_module" and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            name = node.args[0].value
            if name.startswith("."):
                level = len(name) - len(name.lstrip("."))
                base = self.package.split(".")[: len(self.package.split(".")) - level + 1]
                name = ".".join(base + [name.lstrip(".")]).rstrip(".")
            self._add(node, name)
        self.generic_visit(node)


@functools.lru_cache(maxsize=None)
def read_imports() -> tuple[Import, ...]:
    """Every import of a tidal module written in tidal's source."""
    files = _module_files()
    found = []
    for module, path in files.items():
        text = path.read_text()
        reader = _Reader(module, path.name == "__init__.py", files, text, str(path.relative_to(ROOT)))
        reader.visit(ast.parse(text, str(path)))
        found.extend(reader.found)
    return tuple(found)


def unit(module: str) -> str:
    """The layer unit a module belongs to: its subpackage of tidal, its root-level module, or "(root)"."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "(root)"


def layer(name: str) -> int:
    for depth, names in enumerate(LAYERS):
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in names):
            return depth
    raise AssertionError(f"{name} is in no layer: add it to LAYERS in tests/test_layers.py")


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _cycle_report(cycles: list[list[str]], imports: list[Import], key) -> list[str]:
    lines = []
    for component in cycles:
        members = set(component)
        lines.append("circle: " + " <-> ".join(component))
        lines += ["    " + i.where() for i in imports
                  if key(i.source) in members and key(i.target) in members and key(i.source) != key(i.target)]
    return lines


def known_upward(i: Import) -> bool:
    """Whether `i` is one of the KNOWN_UPWARD imports."""
    return any(fnmatch.fnmatchcase(unit(i.source), a) and fnmatch.fnmatchcase(unit(i.target), b)
               for a, b in KNOWN_UPWARD)


def package_edges(imports: list[Import]) -> dict[tuple[str, str], list[Import]]:
    edges = collections.defaultdict(list)
    for i in imports:
        if unit(i.source) != unit(i.target) and not known_upward(i):
            edges[unit(i.source), unit(i.target)].append(i)
    return edges


def test_every_unit_has_a_layer():
    for name in {unit(m) for m in _module_files()}:
        layer(name)


def test_no_cycle_between_packages():
    imports = read_imports()
    edges = collections.defaultdict(set)
    for a, b in package_edges(imports):
        edges[a].add(b)
    report = _cycle_report(_cycles(edges), imports, unit)
    assert not report, "tidal's packages import in a circle:\n" + "\n".join(report)


def test_imports_point_down_the_layers():
    upward = [f"{i.where()}  ({unit(i.source)}, layer {layer(unit(i.source))}, sits below {unit(i.target)}, "
              f"layer {layer(unit(i.target))})"
              for i in read_imports()
              if layer(unit(i.source)) > layer(unit(i.target)) and not known_upward(i)]
    assert not upward, "imports against the layering (LAYERS, top first):\n" + "\n".join(upward)


def _ratchet(name: str, table: dict, found: dict) -> list[str]:
    """Complaints where `found` ({unit: [lines]}) exceeds `table` ({unit: count left}), or fell below it."""
    complaints = []
    for key in sorted(set(table) | set(found)):
        allowed, lines = table.get(key, 0), found.get(key, [])
        if len(lines) > allowed:
            complaints.append(f"{key}: {len(lines)}, {name} allows {allowed}:")
            complaints += ["    " + line for line in lines]
        elif len(lines) < allowed:
            complaints.append(f"{key}: {len(lines)} left: lower {name}[{key!r}] to {len(lines)}")
    return complaints


def test_function_level_imports_say_why():
    found = collections.defaultdict(list)
    for i in read_imports():
        if i.in_function and not i.reason:
            found[unit(i.source)].append(i.where())
    complaints = _ratchet("LATE_IMPORTS_LEFT", LATE_IMPORTS_LEFT, found)
    assert not complaints, ("an import of a tidal module inside a function needs a one-line comment saying why it "
                            "cannot sit at module level (moving it up is better):\n" + "\n".join(complaints))


def test_no_cycle_between_files_of_a_package():
    imports = [i for i in read_imports() if unit(i.source) == unit(i.target) and i.source != i.target]
    edges = collections.defaultdict(set)
    for i in imports:
        edges[i.source].add(i.target)
    found = collections.defaultdict(list)
    for component in _cycles(edges):
        found[unit(component[0])] += component
    complaints = _ratchet("FILE_CIRCLES_LEFT", FILE_CIRCLES_LEFT, found)
    report = _cycle_report(_cycles(edges), imports, lambda m: m)
    assert not complaints, ("files of a package import each other in a circle (counts are files caught in one):\n"
                            + "\n".join(complaints) + "\n\nthe circles:\n" + "\n".join(report))


def test_the_reader_sees_what_it_should():
    # the checks above are only as good as the reader: it must see relative, absolute, function-level and
    # import_module imports, and resolve `from pkg import submodule` to the submodule
    found = read_imports()
    by_source = collections.defaultdict(list)
    for i in found:
        by_source[i.source].append(i)
    assert any(i.target == "tidal.vm" for i in by_source["tidal"])                   # from . import vm
    assert any(i.target.startswith("tidal.tensor") for i in by_source["tidal"])      # from .tensor import ...
    assert any(i.in_function for i in found)
    assert all(unit(i.target) in {unit(m) for m in _module_files()} for i in found)
    assert {("tidal", "tidal.vm")} <= {(i.source, i.target) for i in found}
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


if __name__ == "__main__":  # print the package graph: python tests/test_layers.py
    for (a, b), found in sorted(package_edges(read_imports()).items(), key=lambda kv: (layer(kv[0][0]), kv[0])):
        print(f"{a:>16} -> {b:<16} {len(found):4d}{'' if layer(a) <= layer(b) else '  UP'}")
