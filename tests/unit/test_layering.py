"""Which module may import which, read from the source: storage never reaches up to what
starts processes, a part never imports the one that wires it, no module imports itself back
through others, the ground floor (`base/`) stands on the standard library, and the lookups
every command shares are written once."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import sidecar

PACKAGE = Path(sidecar.__file__).parent


def source(module: str) -> Path:
    """The file of a module of the package (a folder's __init__.py)."""
    path = PACKAGE.joinpath(*module.split(".")[1:])
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def imported(module: str, runtime: bool = False) -> set[str]:
    """What `module` imports (`from m import n`: m and m.n). With `runtime`, the sidecar modules
    it imports when it runs, at its top or in a function (those under `if TYPE_CHECKING:` are
    only read by the type checker)."""
    tree = ast.parse(source(module).read_text())
    skipped = {id(n) for node in ast.walk(tree) if runtime and isinstance(node, ast.If)
               and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
               for stmt in node.body for n in ast.walk(stmt)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    if runtime:  # (a relative import names no "sidecar." module: none is left out unseen)
        return {name for name in found if name.startswith("sidecar.") and source(name).is_file()}
    return found


def test_the_queue_never_imports_what_starts_processes():
    names = imported("sidecar.followups.queue")
    assert not [n for n in names if n.startswith("sidecar.followups.run")]


def test_the_host_watch_does_not_import_the_workspace_that_uses_it():
    assert "sidecar.daemon.workspace" not in imported("sidecar.daemon.hostwatch")


def test_config_and_the_environment_file_read_only_the_ground_floor():
    for module in ("sidecar.config", "sidecar.envfile", "sidecar.hosts.registry"):
        names = imported(module)
        assert "tomlkit" not in names
        assert not [n for n in names if n.startswith(("sidecar.install", "sidecar.hosts.files",
                                                      "sidecar.cli"))]


def circles(package: str) -> list[list[str]]:
    """The modules of `package` that import one another in a circle, each group sorted (the
    strongly connected components of the import graph with more than one module)."""
    folder = PACKAGE.joinpath(*package.split(".")[1:])
    modules = sorted(
        ".".join(("sidecar", *p.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(
            ".__init__") for p in folder.rglob("*.py"))
    edges = {m: imported(m, runtime=True) & set(modules) for m in modules}

    def reaches(start: str) -> set[str]:
        seen, todo = {start}, [start]
        while todo:
            for nxt in edges[todo.pop()] - seen:
                seen.add(nxt)
                todo.append(nxt)
        return seen

    reached = {m: reaches(m) for m in modules}
    groups = {tuple(sorted(m2 for m2 in reached[m] if m in reached[m2])) for m in modules}
    return sorted(list(g) for g in groups if len(g) > 1)


def test_no_module_imports_itself_through_others():
    """Lazy imports count (they make the circle at the first call instead); imports read only
    by the type checker do not."""
    assert circles("sidecar") == []


def test_the_circle_finder_finds_a_circle(tmp_path, monkeypatch):
    for name, imports in (("a", "from sidecar.pkg import b"), ("b", "import sidecar.pkg.c"),
                          ("c", "def late():\n    from sidecar.pkg.a import x"), ("d", "")):
        (tmp_path / "pkg").mkdir(exist_ok=True)
        (tmp_path / "pkg" / f"{name}.py").write_text(imports + "\n")
    (tmp_path / "pkg" / "__init__.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import sidecar.pkg.d\n")
    (tmp_path / "pkg" / "d.py").write_text("import sidecar.pkg\n")
    monkeypatch.setitem(globals(), "PACKAGE", tmp_path)
    assert circles("sidecar.pkg") == [["sidecar.pkg.a", "sidecar.pkg.b", "sidecar.pkg.c"]]


def test_the_top_level_holds_at_most_sixteen_modules():
    """The package's top level is its floor for the typed code and the commands' entries; the
    rest lives in folders named for their job (no `quick*` twin of anything)."""
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(top) <= 16, top
    assert not [name for name in top if name.startswith("quick")]


def test_the_ground_floor_stands_on_the_standard_library_alone():
    """`base/` is what `emit`, the status line, `status` and the typed code all import: it
    imports the standard library and itself, lazily too, never a part above it or an
    installed package."""
    for path in (PACKAGE / "base").glob("*.py"):
        module = f"sidecar.base.{path.stem}"
        outside = {name for name in imported(module) if not name.startswith("sidecar.base")
                   and name.split(".")[0] not in sys.stdlib_module_names
                   and not name.startswith("_")}  # (the interpreter's own C parts: _sha2)
        assert not outside, (module, outside)


def test_the_lookups_every_command_shares_are_written_once():
    """The registry and /proc are read in one module each (base/paths.py, base/proc.py): a
    second copy is where two commands start to disagree."""
    owners = {'"workspaces.json"': {"base/paths.py"},  # (as code, not as words)
              '/stat"': {"base/proc.py"}, 'boot_id"': {"base/proc.py"}}
    for text, allowed in owners.items():
        holders = {str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
                   if text in path.read_text()}
        assert holders == allowed, text
