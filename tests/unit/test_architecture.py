"""ARCHITECTURE.md matches the code: its module map names every module (and only modules that
exist), in the row of its package, and imports go the one way it states."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).parents[2]
PACKAGE = ROOT / "kafkasql_magic"


def mapped() -> set[str]:
    text = (ROOT / "ARCHITECTURE.md").read_text()
    table = text[text.index("## Module map"):text.index("## Where each decision lives")]
    return {name for row in table.splitlines() if row.startswith("| `")
            for name in re.findall(r"`([\w/.]+)`", row.split("|")[1])}


def test_every_mapped_module_exists():
    missing = [n for n in mapped() if not (PACKAGE / n.rstrip("/")).exists()]
    assert missing == []


def test_every_module_and_package_is_mapped():
    names = mapped()
    top = {p.name + ("/" if p.is_dir() else "") for p in PACKAGE.iterdir()
           if (p.suffix == ".py" or (p / "__init__.py").exists()) and p.name != "__pycache__"}
    assert sorted(top - names) == []


# ---------------------------------------------------------------- import direction
#: ARCHITECTURE.md: "Imports go one way: `sql` ← `dialects` ← `engine.analysis` ← `engine.build`
#: ← `runtime` ← `sinks` ← `statements` ← `session` ← `magic`" (a layer imports only those before it).
LAYERS = ("sql", "dialects", "engine.analysis", "engine.tree", "engine.build", "engine.api", "runtime", "sinks", "statements", "session", "magic")


def _layer(module: str) -> int | None:
    return next((i for i, layer in enumerate(LAYERS) if module == layer or module.startswith(layer + ".")), None)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports() -> list[tuple[str, str, bool]]:
    """(importing module, imported module, inside a function body) for every import of one of
    our modules (`from x import y` counts as importing x and x.y: y may be a module)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        me = _module_name(path)
        package = me.split(".") if path.name == "__init__.py" else me.split(".")[:-1]
        tree = ast.parse(path.read_text())
        in_function = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                       for n in ast.walk(f)}
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
                elif node.module and node.module.split(".")[0] == PACKAGE.name:
                    base = node.module.partition(".")[2]
                else:
                    continue
                targets = [base] + [f"{base}.{a.name}".lstrip(".") for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name.partition(".")[2] for a in node.names if a.name.split(".")[0] == PACKAGE.name]
            found += [(me, t, id(node) in in_function) for t in targets if t]
    return found


def test_imports_go_one_way():
    """The one exception: the dialect's function hooks (`Dialect.function`, `text_cast`,
    `untyped_functions`) read engine/build's function tables inside the hook, so importing
    `dialects` never imports the build."""
    backwards = [(me, target) for me, target, lazy in imports()
                 if _layer(me) is not None and _layer(target) is not None and _layer(target) > _layer(me)
                 and not (lazy and _layer(me) == LAYERS.index("dialects") and _layer(target) == LAYERS.index("engine.build"))]
    assert backwards == []


def test_imports_that_the_module_map_rules_out():
    found = imports()
    assert [(me, t) for me, t, _ in found if me == "kafka.admin" and t.startswith("kafka.offsets")] == []
    assert [(me, t) for me, t, _ in found if t.startswith("local.__main__") and me != "local.__main__"] == []
    ipython = [_module_name(p) for p in PACKAGE.rglob("*.py")
               if re.search(r"^\s*(from|import) IPython\b", p.read_text(), re.MULTILINE)]
    assert ipython == ["magic"]


# ---------------------------------------------------------------- modules inside packages
def rows() -> dict[str, str]:
    """Module map rows: the first column's name -> the job column's text."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    table = text[text.index("## Module map"):text.index("## Where each decision lives")]
    found = {}
    for row in table.splitlines():
        if row.startswith("| `"):
            cells = row.split("|")
            found[re.findall(r"`([\w/.]+)`", cells[1])[0]] = cells[2]
    return found


def _row_of(relative: str, table: dict[str, str]) -> str:
    """The row a module is described in: its own, else its innermost package's."""
    if relative in table:
        return relative
    packages = [name for name in table if name.endswith("/") and relative.startswith(name)]
    return max(packages, key=len)


def _named(stem: str, text: str) -> bool:
    return re.search(rf"`[^`]*(?<!\w){re.escape(stem)}(\.py|\.lark|/)?(?!\w)[^`]*`", text) is not None


def test_every_module_is_named_in_its_packages_row():
    table = rows()
    unnamed = []
    for path in sorted(PACKAGE.rglob("*")):
        relative = path.relative_to(PACKAGE).as_posix()
        if "__pycache__" in relative or path.name in ("__init__.py", "__main__.py") or "/" not in relative \
                or path.suffix not in (".py", ".lark"):
            continue
        row = _row_of(relative, table)
        if row != relative and not _named(path.stem, table[row]):
            unnamed.append(relative)
    assert unnamed == []


def test_every_file_a_row_names_exists():
    missing = []
    for name, text in rows().items():
        base = PACKAGE / name if name.endswith("/") else PACKAGE
        for file in re.findall(r"`([\w/]+\.(?:py|lark))`", text):
            if not ((PACKAGE / file).exists() or any(base.rglob(Path(file).name))):
                missing.append((name, file))
    assert missing == []


# ---------------------------------------------------------------- Spark only in *spark* files
#: engine/ modules that import pyspark without "spark" in their names: the phase-organised steps
#: from before operator families (ARCHITECTURE.md, "The engine in five minutes"). The list may
#: only shrink: a new module that needs pyspark is a family's `*spark*` file.
PHASE_MODULES_WITH_SPARK: set[str] = set()


def test_only_spark_files_import_pyspark_inside_the_engine():
    importing = {str(p.relative_to(PACKAGE)) for p in (PACKAGE / "engine").rglob("*.py")
                 if re.search(r"^\s*(from|import) pyspark\b", p.read_text(), re.MULTILINE)}
    assert sorted(p for p in importing if "spark" not in Path(p).name and p not in PHASE_MODULES_WITH_SPARK) == []
    assert sorted(PHASE_MODULES_WITH_SPARK - importing) == []  # one that no longer does leaves the list
