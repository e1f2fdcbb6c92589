"""Contracts of the house that check themselves, each with a test proving its checker can fail:

(g) every line count docs/ARCHITECTURE.md gives (```name` (N lines``) is within 20 % of the file's;
(h) the page names every folder of the repository, hidden ones (``.ci/``) included;
(i) a source path cited in a comment or string of the sources (``src/record/shimlog.rs``) exists,
    resolved from the repository root, from a folder above the citing file, or from a crate;
(j) no import circles: between Python modules, between Rust files of a crate (``use crate::…``,
    ``super::…``), between C files of the shim (a call of a function another file alone defines);
(k) every function over 80 lines outside tests is on the page's list of kept ones, and every listed
    one still is;
(l) a ``Requires:`` precondition in a Rust doc comment is asserted in the function it documents;
(m) the shim's file formats are defined in its contract header: every 8-byte magic (``PCSHIM01``,
    ``PCHINTS1``) is a ``#define`` of ``shim/include/pcshim.h`` and no other C file spells it out;
(n) no pyarrow trace writer in the package: the engine writes every trace (``NOT_TRACES`` lists
    the Parquet files that are not traces).
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

import test_architecture as ta
from support import ROOT

ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"
FUNCTION_LIMIT = 80
# Folders the page need not name: build outputs and caches inside the tree (ignored by git).
UNNAMED_DIRS = frozenset({"target", "__pycache__", "node_modules", ".git", ".venv", "_shim", "_bpf"})


def rel(path: Path) -> str:
    return ta.rel(path)


# --------------------------------------------------------------------------- source scanning


def mask(text: str) -> str:
    """C or Rust ``text`` with comments and string/char literals blanked (newlines kept), so braces
    and names can be counted on code alone."""
    out = list(text)

    def blank(a: int, b: int) -> None:
        for k in range(a, min(b, len(out))):
            if out[k] != "\n":
                out[k] = " "

    i, n = 0, len(text)
    while i < n:
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
        elif (raw := re.match(r'b?r(#*)"', text[i : i + 260])) and not (
            i and (text[i - 1].isalnum() or text[i - 1] == "_")
        ):
            close = '"' + raw.group(1)
            end = text.find(close, i + raw.end())
            end = n if end < 0 else end + len(close)
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            end = j + 1
        elif text[i] == "'" and (char := re.match(r"'(\\.[^']*|[^\\'])'", text[i : i + 12])):
            end = i + char.end()
        else:
            i += 1
            continue
        blank(i, end)
        i = end
    return "".join(out)


def closing_brace(code: str, opening: int) -> int:
    depth = 0
    for k in range(opening, len(code)):
        if code[k] == "{":
            depth += 1
        elif code[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return len(code) - 1


def line_of(code: str, offset: int) -> int:
    return code.count("\n", 0, offset) + 1


def test_module_spans(code: str) -> list[tuple[int, int]]:
    """Offsets of ``#[cfg(test)] mod … { … }`` bodies: code that is a test."""
    spans = []
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub(?:\([\w:]+\))?\s+)?mod\s+\w+\s*\{", code):
        spans.append((m.start(), closing_brace(code, m.end() - 1)))
    return spans


test_module_spans.__test__ = False  # type: ignore[attr-defined]  # a helper, not a test


def rust_functions(text: str) -> Iterator[tuple[str, int, int, int]]:
    """(name, first line, lines, body offset) of every Rust function with a body outside test modules."""
    code = mask(text)
    tests = test_module_spans(code)
    for m in re.finditer(r"\bfn\s+(\w+)", code):
        if any(a <= m.start() <= b for a, b in tests):
            continue
        j, depth = m.end(), 0
        while j < len(code):
            c = code[j]
            if c in "(<[":
                depth += 1
            elif c in ")>]" and not (c == ">" and code[j - 1] == "-"):
                depth -= 1
            elif c == ";" and depth <= 0:
                break
            elif c == "{" and depth <= 0:
                end = closing_brace(code, j)
                yield (
                    m.group(1),
                    line_of(code, m.start()),
                    line_of(code, end) - line_of(code, m.start()) + 1,
                    j,
                )
                break
            j += 1


def c_functions(text: str) -> Iterator[tuple[str, int, int, int]]:
    """(name, first line, lines, body offset) of every C function definition."""
    code = mask(text)
    depth, last, k = 0, 0, 0
    while k < len(code):
        c = code[k]
        if c == "#" and depth == 0 and (k == 0 or code[k - 1] == "\n"):
            end = code.find("\n", k)
            while end > 0 and code[end - 1] == "\\":
                end = code.find("\n", end + 1)
            k = last = len(code) if end < 0 else end
            continue
        if c == "{":
            head = code[last:k]
            sig = re.search(r"(\w+)\s*\([^;{}]*\)\s*$", head)
            if (
                depth == 0
                and sig
                and "=" not in head
                and not re.search(r"\b(struct|enum|union)\b[^()]*$", head)
            ):
                end = closing_brace(code, k)
                first = line_of(code, last + sig.start())
                yield sig.group(1), first, line_of(code, end) - first + 1, k
                k = last = end + 1
                continue
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                last = k + 1
        elif c == ";" and depth == 0:
            last = k + 1
        k += 1


def python_functions(text: str) -> Iterator[tuple[str, int, int, int]]:
    """(name, first line, lines, 0): from the ``def`` line to the last line of the body."""
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            end = node.end_lineno or node.lineno
            yield node.name, node.lineno, end - node.lineno + 1, 0


FUNCTION_FINDERS = {".rs": rust_functions, ".c": c_functions, ".h": c_functions, ".py": python_functions}
# Where functions count: everything but tests (test folders, fixtures, `#[cfg(test)]` modules).
FUNCTION_TOPS = ("crates", "python", "shim", "bpf", "tools", "fuzz")


def non_test_sources(tops: Iterable[str] = FUNCTION_TOPS) -> list[Path]:
    found = []
    for top in tops:
        for root, dirs, names in os.walk(ROOT / top):
            dirs[:] = sorted(d for d in dirs if d not in UNNAMED_DIRS | {"tests"} and not d.startswith("."))
            found += [Path(root) / n for n in sorted(names) if Path(n).suffix in FUNCTION_FINDERS]
    return found


def long_functions(paths: Iterable[Path], limit: int = FUNCTION_LIMIT) -> dict[str, int]:
    """``path:name`` → lines of every function longer than ``limit``."""
    out = {}
    for path in paths:
        for name, _, lines, _ in FUNCTION_FINDERS[path.suffix](path.read_text(encoding="utf-8")):
            if lines > limit:
                out[f"{rel(path)}:{name}"] = lines
    return out


# --------------------------------------------------------------------------- (g) line counts

COUNT = re.compile(r"`([\w./-]+\.(?:rs|py|pyi|c|h))`\s*\((\d[\d,]*)\s+lines")
ANY_COUNT = re.compile(r"\b(\d[\d,]*)\s+lines\b")


def resolve_name(name: str, files: list[Path]) -> list[Path]:
    """Files of the tree whose path ends with ``name`` (``map/mod.rs``, ``shim.h``)."""
    return [p for p in files if rel(p) == name or rel(p).endswith("/" + name)]


def stale_counts(doc: str, files: list[Path], tolerance: float = 0.2) -> list[str]:
    out = []
    tied = set()
    for m in COUNT.finditer(doc):
        tied.add(m.start(2))
        name, stated = m.group(1), int(m.group(2).replace(",", ""))
        found = resolve_name(name, files)
        if len(found) != 1:
            out.append(f"`{name}` ({stated} lines): names {len(found)} files; write more of its path")
            continue
        actual = sum(1 for _ in found[0].open("rb"))
        if abs(actual - stated) > tolerance * actual:
            out.append(f"`{name}` ({stated} lines): it has {actual}")
    for m in ANY_COUNT.finditer(doc):
        if m.start(1) not in tied and re.search(r"\(\s*$", doc[max(0, m.start() - 3) : m.start()]):
            out.append(f"a count ({m.group(0)}) not written as `name` (N lines")
    return out


def tree_files() -> list[Path]:
    return [
        p
        for top in ta.SOURCE_TOPS + ("bpf", "fuzz")
        for p in ta.files_under(ROOT / top, (".py", ".pyi", ".rs", ".c", ".h"))
    ]


def test_the_architecture_page_gives_line_counts_that_hold() -> None:
    found = stale_counts(ARCHITECTURE.read_text(encoding="utf-8"), tree_files())
    assert not found, "docs/ARCHITECTURE.md: update these counts (or drop them):\n" + "\n".join(found)


# --------------------------------------------------------------------------- (h) every folder


def repository_dirs() -> list[Path]:
    out = []
    for root, dirs, _ in os.walk(ROOT):
        dirs[:] = sorted(
            d for d in dirs if d not in UNNAMED_DIRS and not (Path(root) / d / "pyvenv.cfg").exists()
        )
        if Path(root) != ROOT:
            out.append(Path(root))
    return [d for d in out if ta.files_under(d, ("",))]  # folders holding files only


def unnamed_dirs(doc: str, dirs: Iterable[Path]) -> list[str]:
    return [f"folder {rel(d)}/" for d in dirs if f"{d.name}/" not in doc]


def test_the_architecture_page_names_every_folder_hidden_ones_too() -> None:
    tracked = {p.split("/")[0] for p in os.popen(f"git -C {ROOT} ls-files").read().split()}
    dirs = [d for d in repository_dirs() if rel(d).split("/")[0] in tracked]
    found = unnamed_dirs(ARCHITECTURE.read_text(encoding="utf-8"), dirs)
    assert not found, "docs/ARCHITECTURE.md does not name:\n" + "\n".join(found)


# --------------------------------------------------------------------------- (i) cited paths

CITED_PATH = re.compile(r"(?<![\w./$-])((?:[\w.-]+/)+[\w.-]+\.(?:rs|py|pyi|c|h))\b")
CITING = (".py", ".pyi", ".rs", ".c", ".h")
SYSTEM_HEADER_DIRS = frozenset({"sys", "linux", "asm", "bits", "net", "netinet", "arpa", "bpf"})
CRATES = [c for c in sorted((ROOT / "crates").iterdir()) if (c / "Cargo.toml").is_file()]


def path_roots(path: Path) -> list[Path]:
    """Where a path cited in ``path`` may be resolved: the repository, every folder above the
    citing file, and every crate (its folder and its ``src/``)."""
    return [ROOT, *path.parents, *CRATES, *(c / "src" for c in CRATES), ROOT / "fuzz"]


def missing_citations(path: Path, chunks: Iterable[tuple[int, str]]) -> list[str]:
    out = []
    roots = [r for r in path_roots(path) if ROOT == r or ROOT in r.parents]
    for line, chunk in chunks:
        for m in CITED_PATH.finditer(chunk):
            cited = m.group(1)
            first = cited.split("/")[0]
            if first.isupper() or first in SYSTEM_HEADER_DIRS:
                continue  # a placeholder (PWD/…) or a system header (sys/stat.h)
            if not any((r / cited).exists() for r in roots):
                out.append(f"{rel(path)}:{line}: cites {cited}, which does not exist")
    return out


def citing_sources() -> list[Path]:
    here = Path(__file__).resolve()
    own = {here, ROOT / "tests" / "python" / "test_architecture.py"}  # fixtures of the checks' own tests
    tops = ("python", "crates", "shim", "bpf", "tools", "tests", "fuzz")
    return [p for top in tops for p in ta.files_under(ROOT / top, CITING) if p.resolve() not in own]


def test_a_source_path_cited_in_a_comment_exists() -> None:
    found = [bad for p in citing_sources() for bad in missing_citations(p, ta.prose(p))]
    assert not found, "fix these paths (they moved, or never existed):\n" + "\n".join(found)


# --------------------------------------------------------------------------- (j) circles


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def python_graph() -> dict[str, set[str]]:
    """Module → the package's modules it imports (``from a import b`` counts b when b is a module)."""
    files = ta.files_under(ta.PACKAGE, (".py",))
    modules = {ta.module_name(p) for p in files}
    graph: dict[str, set[str]] = {}
    for path in files:
        me = ta.module_name(path)
        deps = set()
        for _, name in ta.imported(
            ta.parse(path), me if path.name == "__init__.py" else me.rsplit(".", 1)[0]
        ):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != me and not me.startswith(name + "."):
                deps.add(name)  # importing one's own package (its face) is not a dependency
        graph[me] = deps
    return graph


def rust_module_files(src: Path) -> dict[str, Path]:
    """``a::b`` → its file, for every module file of a crate's ``src``."""
    out = {}
    for path in ta.files_under(src, (".rs",)):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] in ("mod", "lib", "main"):
            parts = parts[:-1]
        out["::".join(parts)] = path
    return out


def rust_graph(src: Path) -> dict[str, set[str]]:
    """Module file → the module files of the same crate whose items it names (``crate::a::b::X``,
    ``super::X``, ``self::x::Y``). A parent naming its own child or a child its parent's items is
    an arrow like any other."""
    files = rust_module_files(src)
    graph: dict[str, set[str]] = {}
    for me, path in files.items():
        here = me.split("::") if me else []
        code = mask(path.read_text(encoding="utf-8"))
        for a, b in test_module_spans(code):
            code = code[:a] + " " * (b - a) + code[b:]
        deps = set()
        for m in re.finditer(r"\b(crate|super|self)((?:::\w+)+)", code):
            head, tail = m.group(1), m.group(2).split("::")[1:]
            base = {"crate": [], "super": here[:-1], "self": here}[head]
            while tail and tail[0] == "super":
                base, tail = base[:-1], tail[1:]
            # The longest prefix that is a module file is the file named.
            for k in range(len(tail), -1, -1):
                name = "::".join(base + tail[:k])
                if name in files:
                    if name != me:
                        deps.add(name)
                    break
        graph[me] = deps
    return graph


def c_graph(paths: list[Path]) -> dict[str, set[str]]:
    """C file → the C files that alone define a function it calls (shared state declared in a
    header is not an arrow: the header is the contract both sides include)."""
    defines: dict[str, set[str]] = {}
    codes = {}
    for path in paths:
        text = path.read_text(encoding="utf-8")
        codes[path.name] = mask(text)
        for name, *_ in c_functions(text):
            defines.setdefault(name, set()).add(path.name)
    graph: dict[str, set[str]] = {}
    for me, code in codes.items():
        called = set(re.findall(r"\b(\w+)\s*\(", code))
        graph[me] = {next(iter(f)) for n, f in defines.items() if n in called and len(f) == 1 and me not in f}
    return graph


def test_no_python_module_circles() -> None:
    found = cycles(python_graph())
    assert not found, "Python modules that import each other:\n" + "\n".join(map(str, found))


@pytest.mark.parametrize("crate", sorted(p.name for p in (ROOT / "crates").iterdir() if (p / "src").is_dir()))
def test_no_rust_file_circles(crate: str) -> None:
    found = cycles(rust_graph(ROOT / "crates" / crate / "src"))
    assert not found, f"{crate}: module files that use each other:\n" + "\n".join(map(str, found))


def test_no_shim_file_circles() -> None:
    found = cycles(c_graph(sorted((ROOT / "shim" / "src").glob("*.c"))))
    assert not found, "shim files that call each other:\n" + "\n".join(map(str, found))


# --------------------------------------------------------------------------- (k) long functions

KEPT_HEADING = "## Functions kept over 80 lines"
KEPT_ENTRY = re.compile(r"^- `([^`]+)` `(\w+)`", re.M)


def kept_functions(doc: str) -> set[str]:
    """``path:name`` of each entry of the page's list of kept long functions."""
    start = doc.find(KEPT_HEADING)
    if start < 0:
        return set()
    end = doc.find("\n## ", start + len(KEPT_HEADING))
    section = doc[start : end if end >= 0 else len(doc)]
    return {f"{m.group(1)}:{m.group(2)}" for m in KEPT_ENTRY.finditer(section)}


def long_function_mismatch(long: dict[str, int], kept: set[str]) -> list[str]:
    out = [
        f"{fn} ({n} lines): split it, or list it with why it is one step"
        for fn, n in sorted(long.items())
        if fn not in kept
    ]
    out += [
        f"{fn}: listed as kept, but it is not over {FUNCTION_LIMIT} lines (or is gone)"
        for fn in sorted(kept - set(long))
    ]
    return out


def test_every_long_function_is_on_the_kept_list() -> None:
    found = long_function_mismatch(
        long_functions(non_test_sources()), kept_functions(ARCHITECTURE.read_text(encoding="utf-8"))
    )
    assert not found, f"docs/ARCHITECTURE.md, '{KEPT_HEADING}':\n" + "\n".join(found)


# --------------------------------------------------------------------------- (l) preconditions


def unasserted_requirements(text: str) -> list[int]:
    """Lines of ``/// … Requires:`` doc comments whose function has no assertion in its body."""
    out = []
    functions = list(rust_functions(text))
    code = mask(text)
    for m in re.finditer(r"^\s*///[^\n]*\bRequires:", text, re.M):
        following = [f for f in functions if f[3] > m.start()]
        if not following:
            continue
        name, first, lines, body = min(following, key=lambda f: f[3])
        doc_gap = text[m.end() : body]
        if re.search(r"\n\s*\n", doc_gap.split("fn ", 1)[0]):
            continue  # the comment documents something else (a field, a type)
        end = closing_brace(code, body)
        if not re.search(r"\b(debug_)?assert(_eq|_ne)?!", code[body:end]):
            out.append(line_of(text, m.start()))
    return out


def test_stated_preconditions_are_asserted() -> None:
    found = []
    for path in non_test_sources(("crates",)):
        if path.suffix == ".rs":
            found += [
                f"{rel(path)}:{line}" for line in unasserted_requirements(path.read_text(encoding="utf-8"))
            ]
    assert not found, "assert these preconditions (debug_assert! on per-page paths):\n" + "\n".join(found)


# --------------------------------------------------------------------------- (m) the shim's formats

MAGIC = re.compile(r'"(PC[A-Z0-9]{6})"')
CONTRACT = ROOT / "shim" / "include" / "pcshim.h"


def magic_mismatch(contract: str, sources: dict[str, str]) -> list[str]:
    defined = set(re.findall(r'#define\s+\w+\s+"(PC[A-Z0-9]{6})"', contract))
    out = []
    for name, text in sorted(sources.items()):
        for m in MAGIC.finditer(text):
            magic = m.group(1)
            if magic not in defined:
                out.append(f"{name}: {magic} is not defined in pcshim.h")
            elif name.endswith((".c", ".h")):
                out.append(f"{name}: spells out {magic}; use pcshim.h's definition")
    return out


def test_every_shim_format_magic_is_in_the_contract_header() -> None:
    sources = {}
    for top in ("shim", "python", "crates"):
        for path in ta.files_under(ROOT / top, (".c", ".h", ".py", ".rs")):
            if path != CONTRACT:
                text = path.read_text(encoding="utf-8")
                # C: only string literals count (a comment may quote the magic it names).
                sources[rel(path)] = c_strings(text) if path.suffix in (".c", ".h") else text
    found = magic_mismatch(CONTRACT.read_text(encoding="utf-8"), sources)
    assert not found, "\n".join(found)


def c_strings(text: str) -> str:
    """The string literals of C code (comments dropped), one per line."""
    return "\n".join(chunk for _, chunk in ta.c_like_prose(text) if chunk.startswith('"'))


# --------------------------------------------------------------------------- (n) no pyarrow writer

WRITERS = frozenset({"write_table", "ParquetWriter", "write_to_dataset", "write_dataset"})
# Parquet files the package writes that are not traces, with why pyarrow writes them.
NOT_TRACES = {"python/pcstream/report/results.py": "results.parquet, a table of results for analysis"}


def pyarrow_writers(tree: ast.Module) -> list[int]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in WRITERS:
            out.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pyarrow"):
            out += [node.lineno for a in node.names if a.name in WRITERS]
    return out


def test_no_pyarrow_trace_writer_in_the_package() -> None:
    found = [
        f"{rel(p)}:{line}"
        for p in ta.files_under(ta.PACKAGE, (".py",))
        for line in pyarrow_writers(ta.parse(p))
    ]
    assert not found, "write traces through the engine (pcstream.api), not pyarrow:\n" + "\n".join(found)


# --------------------------------------------------------------------------- the checks can fail


def test_the_contract_checks_catch_what_they_forbid(tmp_path: Path) -> None:
    a = tmp_path / "a.rs"
    a.write_text("\n" * 99 + "x\n")  # 100 lines
    files = [a]
    assert stale_counts("`a.rs` (100 lines)", files) == []
    assert stale_counts("`a.rs` (85 lines)", files) == []
    assert len(stale_counts("`a.rs` (79 lines)", files)) == 1
    assert len(stale_counts("`b.rs` (100 lines)", files)) == 1
    assert len(stale_counts("a file (100 lines)", files)) == 1

    assert unnamed_dirs("`.ci/` and `src/`", [Path(".ci"), Path("x/src"), Path("bpf")]) == ["folder bpf/"]

    src = ROOT / "shim" / "src" / "x.c"
    cited = [(1, "/* see src/record/shimlog.rs */"), (2, "/* see include/pcshim.h */"), (3, '"sys/stat.h"'),
             (4, "/* PWD/tools/x.py */"), (5, "/* crates/pcstream-trace/src/nope.rs */")]  # fmt: skip
    assert [b.split(": ", 1)[0] for b in missing_citations(src, cited)] == [
        "shim/src/x.c:1",
        "shim/src/x.c:5",
    ]

    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    crate = tmp_path / "src"
    (crate / "m").mkdir(parents=True)
    (crate / "lib.rs").write_text("mod m;\nuse crate::m::x::Y;\n")
    (crate / "m" / "mod.rs").write_text("mod x;\n")
    (crate / "m" / "x.rs").write_text("use super::super::Z;\n#[cfg(test)]\nmod tests { use crate::m::K; }\n")
    assert cycles(rust_graph(crate)) == [["", "m::x"]]
    c1, c2 = tmp_path / "one.c", tmp_path / "two.c"
    c1.write_text("void f(void) { h(); }\n")
    c2.write_text("void h(void) { /* f() */ if (x) f(); }\n")
    assert cycles(c_graph([c1, c2])) == [["one.c", "two.c"]]
    c2.write_text("void h(void) { /* f() */ }\n")
    assert cycles(c_graph([c1, c2])) == []

    body = "fn f() {\n" + "    x();\n" * 85 + "}\n"
    assert [
        (n, lines) for n, _, lines, _ in rust_functions(body + "#[cfg(test)]\nmod t {\n" + body + "}\n")
    ] == [("f", 87)]
    assert [
        (n, lines) for n, _, lines, _ in c_functions("static int\nf(int a)\n{\n" + "  a++;\n" * 90 + "}\n")
    ] == [("f", 94)]
    long = {"x.rs:f": 87}
    assert long_function_mismatch(long, set()) and long_function_mismatch({}, {"x.rs:f"})
    assert long_function_mismatch(long, kept_functions(f"{KEPT_HEADING}\n\n- `x.rs` `f`: one step\n")) == []

    assert unasserted_requirements("/// Requires: x > 0.\nfn f(x: u32) { g(x) }\n") == [1]
    assert unasserted_requirements("/// Requires: x > 0.\nfn f(x: u32) { debug_assert!(x > 0); }\n") == []

    header = '#define PCSHIM_MAGIC "PCSHIM01"\n'
    assert magic_mismatch(header, {"a.py": 'M = b"PCSHIM01"', "b.c": '"PCHINTS1"', "c.c": '"PCSHIM01"'}) == [
        "b.c: PCHINTS1 is not defined in pcshim.h", "c.c: spells out PCSHIM01; use pcshim.h's definition",
    ]  # fmt: skip

    tree = ast.parse(
        "import pyarrow.parquet as pq\npq.write_table(t, p)\nfrom pyarrow.parquet import ParquetWriter\n"
    )
    assert pyarrow_writers(tree) == [2, 3]
