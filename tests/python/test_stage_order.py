"""The pipeline's stage order in python/pcstream, checked on the parsed sources.

The stages run record < map < simulate < compare < report; live hints (a learned PC table applied
to a real run) sit beside record, after it: they use its runner and read the table format, and
record never needs them. Every module belongs to one stage (:data:`STAGE_OF`, by package or by
module), and no module imports one of a later stage, at the top of the file or inside a function.
The command line (``pcstream.cli``) and the one composing module it names (``pcstream.compose``)
come last: they are where stages are put together. (That no modules import each other in a
circle is checked for all three languages by test_architecture_contracts.py.)
Each rule has a test proving its checker can fail.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

from support import ROOT

PACKAGE = ROOT / "python" / "pcstream"

STAGES = ("base", "record", "live", "map", "simulate", "compare", "report", "cli")

# A package's entry covers its modules; a module's own entry wins over its package's.
STAGE_OF: dict[str, str] = {
    # what every stage stands on: the engine's API, errors, units, output files, trace footers,
    # the PC and file tables a trace carries, the aging shared by record --block and map
    "pcstream": "base",
    "pcstream.api": "base",
    "pcstream.errors": "base",
    "pcstream.units": "base",
    "pcstream.outputs": "base",
    "pcstream.tracemeta": "base",
    "pcstream.pcfiles": "base",
    "pcstream.pclabels": "base",
    "pcstream.aging": "base",
    # the options of each verb, declared once, and the CLI built from them
    "pcstream.options": "base",
    # a program's writes under the shim, and a real ext4's block I/O for the same run
    "pcstream.record": "record",
    "pcstream.groundtruth": "record",
    "pcstream.live": "live",
    "pcstream.mapstage": "map",
    # public trace sets split into one block trace per volume (import --split-volumes)
    "pcstream.splitvolumes": "map",
    # the bundled suite: its programs, recorded and mapped into its block traces
    "pcstream.workloads": "map",
    # notes on a simulation's result
    "pcstream.diagnose": "simulate",
    "pcstream.compare": "compare",
    # the ext4 model mapped, simulated and compared with the real block trace
    "pcstream.groundtruth.validation": "compare",
    "pcstream.report": "report",
    "pcstream.cli": "cli",
    "pcstream.__main__": "cli",
    "pcstream.compose": "cli",
}

# (importer, imported, why) imports allowed against the order; empty: the order holds as stated.
ALLOWED: tuple[tuple[str, str, str], ...] = ()


def module_name(path: Path, package: Path = PACKAGE) -> str:
    """``python/pcstream/cli/map.py`` → ``pcstream.cli.map``; a package's ``__init__`` → the package."""
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    """Every Python module of the package by name."""
    return {module_name(p, package): p for p in sorted(package.rglob("*.py")) if "__pycache__" not in p.parts}


def stage_of(module: str) -> str | None:
    """The stage of ``module``: its own entry, else its closest package's (the top package
    ``pcstream`` covers only its own ``__init__``); None when it has none."""
    if module in STAGE_OF:
        return STAGE_OF[module]
    parts = module.split(".")
    for n in range(len(parts) - 1, 1, -1):
        stage = STAGE_OF.get(".".join(parts[:n]))
        if stage is not None:
            return stage
    return None


def resolve(name: str, known: Iterable[str]) -> str | None:
    """The known module ``name`` is or lies in (``pcstream.api.simulate`` → ``pcstream.api``;
    ``pcstream._engine``, compiled, → ``pcstream``); None outside pcstream."""
    known = set(known)
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        candidate = ".".join(parts[:n])
        if candidate in known:
            return candidate
    return None


def imports(path: Path, module: str, known: Iterable[str]) -> set[str]:
    """The pcstream modules ``module`` (the file ``path``) imports, anywhere in the file."""
    known = set(known)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            # ``from pcstream import api`` imports the module pcstream.api
            names = [f"{base}.{a.name}" for a in node.names] or [base]
        for name in names:
            target = resolve(name, known)
            if target is not None and target != module:
                found.add(target)
    return found


def graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module → the pcstream modules it imports."""
    found = modules(package)
    return {name: imports(path, name, found) for name, path in found.items()}


def violations(
    edges: Mapping[str, Iterable[str]], allowed: Iterable[tuple[str, str, str]] = ALLOWED
) -> list[str]:
    """Each import of a module of a later stage, as ``importer (stage) -> imported (stage)``."""
    ok = {(a, b) for a, b, _why in allowed}
    out = []
    for importer, targets in sorted(edges.items()):
        mine = stage_of(importer)
        for target in sorted(targets):
            theirs = stage_of(target)
            if mine is None or theirs is None or (importer, target) in ok:
                continue
            if STAGES.index(theirs) > STAGES.index(mine):
                out.append(f"{importer} ({mine}) -> {target} ({theirs})")
    return out


# --------------------------------------------------------------------------- the rules


def test_every_module_has_a_stage() -> None:
    assert set(STAGE_OF.values()) <= set(STAGES)
    missing = [m for m in modules() if stage_of(m) is None]
    assert not missing, f"modules without a stage (add them to STAGE_OF): {missing}"


def test_no_module_imports_a_later_stage() -> None:
    found = violations(graph())
    assert not found, "imports of a later stage:\n" + "\n".join(found)


def test_every_allowed_exception_is_still_needed_and_says_why() -> None:
    edges = graph()
    for importer, imported, why in ALLOWED:
        assert why.strip(), f"{importer} -> {imported}: say why it is allowed"
        assert imported in edges.get(importer, set()), f"{importer} no longer imports {imported}"


# --------------------------------------------------------------------------- the checkers can fail


def test_the_checker_finds_a_made_up_module_that_imports_a_later_stage(tmp_path: Path) -> None:
    fake = tmp_path / "pcstream" / "record"
    fake.mkdir(parents=True)
    for init in (tmp_path / "pcstream" / "__init__.py", fake / "__init__.py"):
        init.write_text("")
    (tmp_path / "pcstream" / "mapstage.py").write_text("")
    (tmp_path / "pcstream" / "live.py").write_text("")
    (fake / "forward.py").write_text(
        "from pcstream import mapstage\n\n\ndef hints():\n    from pcstream.live import resolve\n"
    )
    edges = graph(tmp_path / "pcstream")
    assert edges["pcstream.record.forward"] == {"pcstream.mapstage", "pcstream.live"}
    assert violations(edges) == [
        "pcstream.record.forward (record) -> pcstream.live (live)",
        "pcstream.record.forward (record) -> pcstream.mapstage (map)",
    ]
    allowed = [("pcstream.record.forward", "pcstream.live", "a reason")]
    assert violations(edges, allowed) == ["pcstream.record.forward (record) -> pcstream.mapstage (map)"]
    # the other way round is the order
    assert violations({"pcstream.live": {"pcstream.record.runner"}}) == []


def test_the_checker_finds_a_module_without_a_stage() -> None:
    assert stage_of("pcstream.made_up") is None
    assert stage_of("pcstream.record.made_up") == "record"
    assert stage_of("pcstream.groundtruth.validation") == "compare"
