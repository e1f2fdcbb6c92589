"""Architecture rules, checked on the source tree (parsed, not grepped), each with a test proving
its checker can fail:

(a) no source file (*.py, *.rs, *.c, *.h under python/, crates/, shim/, tools/, tests/) is over
    1000 lines;
(b) a CLI module (python/pcstream/cli/*.py but the __init__ that assembles the verbs) imports only
    ``pcstream.cli._common`` from the CLI package, never another verb; the library never imports
    the CLI;
(c) only python/pcstream/api.py imports or calls the engine (``pcstream._engine``, ``api.engine()``);
    errors.py may only name it to find its exception classes in ``sys.modules``;
(d) no comment, docstring or other string of the sources, no Makefile comment and no page of docs/
    cites a document that is not in the repository (``NAME.md`` must exist beside the citing
    file, at the top or in docs/): the project stands alone;
(e) the page size is defined once in Python (units.py); each trace footer key is spelled once, in
    the engine (crates/pcstream-trace/src/parquet/keys.rs), and Python takes them from it;
(f) docs/ARCHITECTURE.md names every folder and every source file of 300 lines or more.
"""

from __future__ import annotations

import ast
import io
import os
import re
import tokenize
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from support import ROOT

PACKAGE = ROOT / "python" / "pcstream"
CLI = PACKAGE / "cli"
SKIP_DIRS = frozenset({"target", "__pycache__", "node_modules"})


def rel(path: Path) -> str:
    """``path`` relative to the repository (as is when it lies outside)."""
    return path.relative_to(ROOT).as_posix() if ROOT in path.parents else str(path)


def files_under(top: Path, suffixes: tuple[str, ...]) -> list[Path]:
    """Files ending in ``suffixes`` under ``top``, without build outputs and hidden directories."""
    if top.is_file():
        return [top]
    found = []
    for root, dirs, names in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        found += [Path(root) / name for name in sorted(names) if name.endswith(suffixes)]
    return found


def parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def module_name(path: Path) -> str:
    """``python/pcstream/cli/map.py`` → ``pcstream.cli.map``; a package's ``__init__`` → the package."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


# --------------------------------------------------------------------------- (a) file length

MAX_LINES = 1000
SOURCE_SUFFIXES = (".py", ".rs", ".c", ".h")
SOURCE_TOPS = ("python", "crates", "shim", "tools", "tests")


def long_files(paths: Iterable[Path], limit: int = MAX_LINES) -> list[str]:
    out = []
    for path in paths:
        with open(path, "rb") as handle:
            lines = sum(1 for _ in handle)
        if lines > limit:
            out.append(f"{rel(path)}: {lines} lines")
    return out


@pytest.mark.parametrize("top", SOURCE_TOPS)
def test_no_source_file_over_1000_lines(top: str) -> None:
    paths = files_under(ROOT / top, SOURCE_SUFFIXES)
    assert paths, f"no sources found under {top}/"
    found = long_files(paths)
    assert not found, f"split these files (at most {MAX_LINES} lines each):\n" + "\n".join(found)


# --------------------------------------------------------------------------- (b) CLI layering


def imported(tree: ast.Module, package: str) -> Iterator[tuple[int, str]]:
    """(line, dotted name) of everything an import binds, resolved against ``package``:
    ``import a.b`` → a.b; ``from a import b`` → a.b; ``from . import b`` → PACKAGE.b;
    ``importlib.import_module("a.b")`` → a.b."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")
                parent = parent[: len(parent) - (node.level - 1)]
                base = ".".join([*parent, *([base] if base else [])])
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}"
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("import_module", "__import__") and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    yield node.lineno, first.value


def cli_violations(tree: ast.Module, package: str = "pcstream.cli") -> list[str]:
    """Imports of the CLI package other than ``pcstream.cli._common`` (a verb, or the assembled group)."""
    out = []
    for line, name in imported(tree, package):
        if name == "pcstream.cli" or (name.startswith("pcstream.cli.") and name.split(".")[2] != "_common"):
            out.append(f"line {line}: imports {name}")
    return out


def cli_modules() -> list[Path]:
    return [p for p in sorted(CLI.glob("*.py")) if p.name != "__init__.py"]


@pytest.mark.parametrize("path", cli_modules(), ids=lambda p: p.name)
def test_a_cli_module_imports_no_other_verb(path: Path) -> None:
    found = cli_violations(parse(path), module_name(path))
    assert not found, f"{rel(path)} may import only pcstream.cli._common of the CLI:\n" + "\n".join(found)


def test_the_library_never_imports_the_cli() -> None:
    found = []
    for path in files_under(PACKAGE, (".py",)):
        if CLI in path.parents or path.name == "__main__.py":
            continue
        for line, name in imported(parse(path), module_name(path)):
            if name == "pcstream.cli" or name.startswith("pcstream.cli."):
                found.append(f"{rel(path)}:{line}: imports {name}")
    assert not found, "the library must not depend on the CLI:\n" + "\n".join(found)


# --------------------------------------------------------------------------- (c) engine access

ENGINE = "pcstream._engine"
# Who may reach the engine, and how: "import" (import or api.engine()), "name" (its module name
# as a string, e.g. a sys.modules lookup).
ENGINE_ALLOWED: dict[str, frozenset[str]] = {
    "python/pcstream/api.py": frozenset({"import", "name"}),
    "python/pcstream/errors.py": frozenset({"name"}),
    # The subject of this test is the binding module itself: its exception classes pickle.
    "tests/python/test_engine_exceptions.py": frozenset({"import", "name"}),
    # This file names the module to look for it.
    "tests/python/test_architecture.py": frozenset({"name"}),
}


def engine_uses(tree: ast.Module, package: str) -> list[tuple[int, str, str]]:
    """(line, kind, what) for every way ``tree`` reaches the engine, by line: an import of
    ``pcstream._engine``, a call of ``api.engine()`` (or of ``engine`` imported from pcstream.api)
    — kind "import" — or the module's name as a string — kind "name"."""
    out: list[tuple[int, str, str]] = []
    engine_names = set()
    for line, name in imported(tree, package):
        if name == ENGINE or name.startswith(ENGINE + "."):
            out.append((line, "import", f"imports {name}"))
        if name == "pcstream.api.engine":
            engine_names.add("engine")
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            via_api = (
                isinstance(func, ast.Attribute)
                and func.attr == "engine"
                and (
                    (isinstance(func.value, ast.Name) and func.value.id == "api")
                    or (isinstance(func.value, ast.Attribute) and func.value.attr == "api")
                )
            )
            if via_api or (isinstance(func, ast.Name) and func.id in engine_names):
                out.append((node.lineno, "import", "calls api.engine()"))
        elif isinstance(node, ast.Constant) and node.value == ENGINE:
            out.append((node.lineno, "name", f"names {ENGINE}"))
    return sorted(out)


def python_sources() -> list[Path]:
    return [*files_under(PACKAGE, (".py",)), *files_under(ROOT / "tools", (".py",)),
            *files_under(ROOT / "tests" / "python", (".py",))]  # fmt: skip


def test_only_api_reaches_the_engine() -> None:
    found = []
    for path in python_sources():
        package = module_name(path) if PACKAGE in path.parents else ""
        allowed = ENGINE_ALLOWED.get(rel(path), frozenset())
        uses = engine_uses(parse(path), package)
        found += [f"{rel(path)}:{line}: {what}" for line, kind, what in uses if kind not in allowed]
    assert not found, "call the engine through pcstream.api:\n" + "\n".join(found)


# --------------------------------------------------------------------------- (d) citations

CITATION = re.compile(r"[\w./-]*\w\.md\b")
CITING_SUFFIXES = (".py", ".pyi", ".rs", ".c", ".h", ".toml")
CITING_TOPS = ("python", "crates", "shim", "tools", "tests", "Makefile", "docs")


def python_prose(text: str) -> Iterator[tuple[int, str]]:
    """Comments and string literals (docstrings, help texts, messages) of Python source."""
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in (tokenize.COMMENT, tokenize.STRING):
            yield tok.start[0], tok.string


def c_like_prose(text: str) -> Iterator[tuple[int, str]]:
    """Comments and string literals of C or Rust source (raw strings ``r#"…"#`` included; a quote
    that does not close within a character or an escape is a Rust lifetime, not a literal)."""
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            yield line, text[i:end]
            i = end
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            yield line, text[i:end]
        elif raw := re.match(r'b?r(#*)"', text[i : i + 260]):
            close = '"' + raw.group(1)
            end = text.find(close, i + raw.end())
            end = n if end < 0 else end + len(close)
            yield line, text[i:end]
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            end = min(j + 1, n)
            yield line, text[i:end]
        elif c == "'" and (char := re.match(r"'(\\.[^']*|[^\\'])'", text[i : i + 12])):
            end = i + char.end()
        else:
            i += 1
            if c == "\n":
                line += 1
            continue
        line += text.count("\n", i, end)
        i = end


def hash_comments(text: str) -> Iterator[tuple[int, str]]:
    """``# …`` comments (Makefile, TOML) with their line numbers."""
    for number, line in enumerate(text.splitlines(), 1):
        if "#" in line:
            yield number, line[line.index("#") :]


def prose(path: Path) -> Iterator[tuple[int, str]]:
    text = path.read_text(encoding="utf-8")
    if path.suffix in (".py", ".pyi"):
        return python_prose(text)
    if path.suffix in (".rs", ".c", ".h"):
        return c_like_prose(text)
    if path.suffix == ".md":
        return iter(enumerate(text.splitlines(), 1))
    return hash_comments(text)


def bad_citations(path: Path, chunks: Iterable[tuple[int, str]]) -> list[str]:
    """Citations of documents that are not in the repository."""
    out = []
    for line, chunk in chunks:
        for m in CITATION.finditer(chunk):
            cited = m.group(0)
            word_start = max(chunk.rfind(sep, 0, m.start()) for sep in " \t\n(<'\"`") + 1
            if "://" in chunk[word_start : m.end()]:
                continue  # a web address, not a document of this repository
            if not any(p.is_file() for p in (path.parent / cited, ROOT / cited, ROOT / "docs" / cited)):
                out.append(f"{rel(path)}:{line}: cites {cited}, which is not in the repository")
    return out


def citing_files(top: str) -> list[Path]:
    if top == "Makefile":
        return [ROOT / "Makefile"]
    if top == "docs":
        return [*files_under(ROOT / "docs", (".md",)), ROOT / "README.md"]
    # This file cites missing documents on purpose (the fixtures of the checks' own test).
    return [p for p in files_under(ROOT / top, CITING_SUFFIXES) if p != Path(__file__).resolve()]


@pytest.mark.parametrize("top", CITING_TOPS)
def test_no_citation_of_a_document_outside_the_repository(top: str) -> None:
    found = [bad for path in citing_files(top) for bad in bad_citations(path, prose(path))]
    hint = "point to a page of docs/ (docs/FORMATS.md, ...) or state the fact in the comment itself"
    assert not found, f"{hint}:\n" + "\n".join(found)


# --------------------------------------------------------------------------- (e) one definition


KEYS_RS = ROOT / "crates" / "pcstream-trace" / "src" / "parquet" / "keys.rs"


def rust_key_literals(text: str, keys: set[str]) -> list[int]:
    """Lines of Rust code outside test modules that spell a footer key as a string literal."""
    out = []
    in_tests = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("#[cfg(test)]"):
            in_tests = True  # test modules close the files that have them
        if in_tests:
            continue
        for _, chunk in c_like_prose(line):
            if chunk.startswith('"') and chunk.strip('"') in keys:
                out.append(number)
    return out


def python_key_literals(tree: ast.Module, keys: set[str]) -> list[int]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and not isinstance(node.value, bool):
            value = node.value.decode(errors="replace") if isinstance(node.value, bytes) else node.value
            if value in keys:
                out.append(node.lineno)
    return sorted(out)


def test_one_page_size_and_one_definition_of_each_footer_key() -> None:
    """The footer keys are spelled once, in the engine's parquet/keys.rs; Python takes them from
    the engine (tracemeta) and spells none; no 4096 in python/pcstream but in units.py."""
    from pcstream import tracemeta, units

    keys = {value for name, value in vars(tracemeta).items() if name.startswith("KEY_")}
    assert units.PAGE_BYTES == 4096 and tracemeta.KEY_PCS == "pcstream.pcs" and len(keys) == 11
    assert len(rust_key_literals(KEYS_RS.read_text(encoding="utf-8"), keys)) == len(keys)
    found = []
    for path in files_under(ROOT / "crates", (".rs",)):
        if path != KEYS_RS and "tests" not in path.relative_to(ROOT).parts:
            found += [
                f"{rel(path)}:{n}: a footer key (use parquet::keys)"
                for n in rust_key_literals(path.read_text(encoding="utf-8"), keys)
            ]
    for path in files_under(PACKAGE, (".py",)):
        tree = parse(path)
        found += [
            f"{rel(path)}:{n}: a footer key (use pcstream.tracemeta)" for n in python_key_literals(tree, keys)
        ]
        if path.name != "units.py":
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Constant)
                    and not isinstance(node.value, bool)
                    and node.value in (4096, "4096")
                ):
                    found.append(f"{rel(path)}:{node.lineno}: 4096 (use pcstream.units.PAGE_BYTES)")
    assert not found, "\n".join(found)


# --------------------------------------------------------------------------- (f) the map of the house

ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"
MAPPED_TOPS = ("crates", "python", "shim", "bpf", "tools", "tests", "docs", "traces", "fuzz", ".ci")
BIG_FILE_LINES = 300
# Build outputs that live inside the source tree (ignored by git).
UNMAPPED_DIRS = frozenset({"_shim", "_bpf"})


def unmapped(doc: str, dirs: Iterable[Path], big: Iterable[Path]) -> list[str]:
    """Folders and big files the page does not name. A folder counts as named when the page holds
    its name followed by ``/`` (``ftl/``, ``src/ftl/``); a file when it holds its name, or — for a
    name several big files share, like ``mod.rs`` — its folder and name (``map/mod.rs``)."""
    out = [f"folder {rel(d)}/" for d in dirs if f"{d.name}/" not in doc]
    big = list(big)
    shared = {p.name for p in big if sum(q.name == p.name for q in big) > 1}
    for path in big:
        name = f"{path.parent.name}/{path.name}" if path.name in shared else path.name
        if name not in doc:
            out.append(f"file {rel(path)} (write '{name}')")
    return out


def test_the_architecture_page_names_every_folder_and_big_file() -> None:
    dirs, big = [], []
    for top in MAPPED_TOPS:
        for root, subdirs, _ in os.walk(ROOT / top):
            subdirs[:] = sorted(
                d for d in subdirs if d not in SKIP_DIRS | UNMAPPED_DIRS and not d.startswith(".")
            )
            dirs.append(Path(root))
        big += [
            p
            for p in files_under(ROOT / top, SOURCE_SUFFIXES)
            if not long_files([p], BIG_FILE_LINES - 1) == []
        ]
    found = unmapped(ARCHITECTURE.read_text(), dirs, big)
    assert not found, "docs/ARCHITECTURE.md does not name:\n" + "\n".join(found)


# --------------------------------------------------------------------------- the checks can fail


def test_the_checks_catch_what_they_forbid(tmp_path: Path) -> None:
    big = tmp_path / "big.rs"
    big.write_text("// x\n" * (MAX_LINES + 1))
    assert len(long_files([big])) == 1 and long_files([big], MAX_LINES + 1) == []

    verb = ast.parse(
        "from pcstream.cli.map import SIZE\nfrom pcstream.cli import compare\nfrom . import demo\n"
        "import pcstream.cli\nfrom pcstream.cli._common import fmt\nfrom pcstream import units\n"
    )
    assert [v.split(": ")[1] for v in cli_violations(verb)] == [
        "imports pcstream.cli.map.SIZE", "imports pcstream.cli.compare", "imports pcstream.cli.demo",
        "imports pcstream.cli",
    ]  # fmt: skip

    engine = ast.parse(
        "from pcstream import _engine\nimport pcstream._engine as e\napi.engine().map_trace()\n"
        "from pcstream.api import engine\nengine()\nsys.modules.get('pcstream._engine')\napi.map_trace()\n"
    )
    assert [(line, kind) for line, kind, _ in engine_uses(engine, "pcstream")] == [
        (1, "import"), (2, "import"), (3, "import"), (5, "import"), (6, "name"),
    ]  # fmt: skip
    assert engine_uses(ast.parse("from . import _engine\n"), "pcstream") == [
        (1, "import", f"imports {ENGINE}")
    ]

    src = ROOT / "python" / "pcstream" / "x.py"
    cites = [(1, "# see spec" + ".md §3"), (2, "# docs/NOPE.md"),
             (3, "# docs/FTL.md, FTL.md, ../README.md"), (4, "# https://example.org/CONTRIB.md")]  # fmt: skip
    assert [b.split(": ", 1)[0] for b in bad_citations(src, cites)] == [
        "python/pcstream/x.py:1", "python/pcstream/x.py:2",
    ]  # fmt: skip
    rust = (
        'let s = "not // a comment"; // see docs/NOPE.md\nfn f<\'a>(x: &\'a str) {}\n/* NOPE2.md */ r#"Q.md"#'
    )
    assert [(line, c) for line, c in c_like_prose(rust)] == [
        (1, '"not // a comment"'), (1, "// see docs/NOPE.md"), (3, "/* NOPE2.md */"), (3, 'r#"Q.md"#'),
    ]  # fmt: skip
    assert [c for _, c in python_prose("x = 1  # a.md\ny = 'b.md'\n")] == ["# a.md", "'b.md'"]

    keys = {"pcstream.pcs"}
    rust_keys = (
        'const K: &str = "pcstream.pcs";\n// "pcstream.pcs" in a comment\n'
        '#[cfg(test)]\nmod t { "pcstream.pcs" }\n'
    )
    assert rust_key_literals(rust_keys, keys) == [1]
    assert python_key_literals(
        ast.parse("K = 'pcstream.pcs'\n# 'pcstream.pcs'\nB = b'pcstream.pcs'\n"), keys
    ) == [1, 3]

    a, b = Path("crates/x/src/map/mod.rs"), Path("crates/x/src/gen/mod.rs")
    page = "`map/mod.rs`, `gen/` and `big.py`"
    assert unmapped(page, [Path("src/gen"), Path("src/ftl")], [a, b, Path("big.py")]) == [
        "folder src/ftl/", f"file {b} (write 'gen/mod.rs')",
    ]  # fmt: skip
