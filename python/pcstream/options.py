"""The options of each verb, declared once: :class:`SimOptions` (how a trace is simulated),
:class:`MapOptions` (how a file-level trace is mapped to blocks) and :class:`RecordOptions` (how a
program's writes are recorded).

Each field carries its type and default (the dataclass's), and in its :class:`Spec` its unit,
limits and help text. The CLI builds its options from the specs (``pcstream.cli._common``), the
library passes the objects whole (:func:`pcstream.api.simulate_json`, :func:`pcstream.api.map_trace`)
and the engine reads their attributes, so no list of these options is written twice. Specs used by
several verbs (``--ssd``, ``--seed``, the aging options) are defined once below.

Units: a page is 4 KiB; ``prefill`` is a share of the SSD's logical pages; ``warmup`` is in host
pages; ``capacity`` is in 4 KiB pages (blocks of the file system).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pcstream.aging import Aging

# The stack walks a PC signature can be made with (``record``'s ``method``).
METHODS: tuple[str, ...] = ("auto", "fp", "unwind", "scan")
# How record captures (docs/RECORD.md, "BPF capture").
VIAS: tuple[str, ...] = ("auto", "shim", "bpf")
# The largest number of return addresses hashed into a signature.
MAX_FRAMES = 64
# The SSD preset whose logical size is the default file-system size of a mapping: the default
# SSD of a simulation, so a mapped trace fits it.
DEFAULT_CAPACITY = "paper"
# The size of ``record --block``'s ext4 image when ``capacity`` is not given.
BLOCK_CAPACITY = "1GiB"
# The largest page count a SIZE may be: the engine takes pages as 64-bit numbers (and refuses
# traces beyond 2^40 pages itself, naming its limit).
MAX_SIZE_PAGES = (1 << 64) - 1
# How a SIZE value is written (parsed by pcstream.units.parse_size).
SIZE_HELP = "pages of 4 KiB (61248), bytes with a unit (16GiB, 512M, 1.5TB), or an SSD preset name (small)"


@dataclass(frozen=True)
class Spec:
    """How one field reads on the command line.

    ``unit`` is the placeholder of its value in the help (PAGES, SHARE, N, ...); ``flag`` its
    spelling when that is not ``--`` and the field's name with dashes; ``negative`` the flag that
    turns a boolean off (None: a boolean is a plain flag); ``low``/``high`` the accepted range
    (``low_open``: ``low`` itself excluded); ``choices`` the accepted words; ``kind`` a value that
    needs parsing ("size": a SIZE in pages, "dir": a directory path, "existing_dir": an existing
    directory, "pairs": KEY=VALUE); ``repeat``: the option may be given several times;
    ``cli_default``: the default as typed on the command line when the field has none (a SIZE);
    ``cli``: False for a field no option sets (it follows from another option or is the library's)."""

    help: str
    unit: str | None = None
    flag: str | None = None
    negative: str | None = None
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    choices: tuple[str, ...] | None = None
    kind: str | None = None
    repeat: bool = False
    show_default: bool = True
    cli_default: Any = None
    cli: bool = True


SPEC = "pcstream.spec"


def option(spec: Spec, default: Any = dataclasses.MISSING) -> Any:
    """A dataclass field described by ``spec`` (no ``default``: the field is required)."""
    return field(default=default, metadata={SPEC: spec})


def spec_of(f: dataclasses.Field[Any]) -> Spec:
    spec = f.metadata.get(SPEC)
    if not isinstance(spec, Spec):
        raise TypeError(f"field {f.name} carries no Spec; declare it with options.option()")
    return spec


def fields_of(cls: type) -> Iterator[tuple[dataclasses.Field[Any], Spec]]:
    """The fields of an options class with their specs, in declaration order."""
    for f in dataclasses.fields(cls):
        yield f, spec_of(f)


def flag_of(name: str, spec: Spec) -> str:
    """The command-line spelling of the field ``name``."""
    return spec.flag or "--" + name.replace("_", "-")


# --------------------------------------------------------------------------- shared specs

SSD = Spec(
    help="SSD: a preset name (see 'pcstream presets') or an SSD config TOML file.",
    unit="PRESET|FILE.toml",
)
SEED = Spec(
    help="Seed of every random choice; equal inputs and seed give identical results.", unit="N", low=0
)
WARMUP = Spec(
    help="Exclude the trace's first PAGES host pages (4 KiB) from every measured figure.",
    unit="PAGES",
    low=0,
)
TIMING = Spec(
    help="Model die timing (IOPS, latency). --no-timing is faster and leaves WAF unchanged.",
    negative="--no-timing",
)
AGE = Spec(
    help="Age the file system first: fill it with cold files (sizes of a published file-system "
    "study, spread over a directory tree) until SHARE of its blocks are in use; the program "
    "then runs in what is left. The aged state leads the trace (docs/FSMODEL.md).",
    unit="SHARE",
    low=0.0,
    high=0.99,
    low_open=True,
    show_default=False,
)
AGE_SEED = Spec(
    help="Seed of the aging's file sizes and names (same seed, same aged file system).", unit="N", low=0
)
AGE_CHURN = Spec(
    help="ROUNDS rounds that fill the file system to 98 % and delete random files back down to "
    "SHARE, so the free space is fragmented, and without discard still holds deleted data on the "
    "device, as on a used file system.",
    unit="ROUNDS",
    low=0,
)


# --------------------------------------------------------------------------- the verbs' options


@dataclass(frozen=True)
class SimOptions:
    """How one block trace is simulated (the trace and the policy are the call's own arguments)."""

    ssd: str = option(SSD, "paper")
    prefill: float = option(
        Spec(
            help="Age the SSD first: write this share of its logical pages once, sequentially, as cold data.",
            unit="SHARE",
            low=0.0,
            high=1.0,
        ),
        0.0,
    )
    warmup: int = option(WARMUP, 0)
    table: str | None = option(
        Spec(
            help="Persistent PC→stream table (JSON) for policies that keep one (e.g. pcstream): loaded "
            "at the start if FILE exists, saved at the end.",
            unit="FILE",
            show_default=False,
        ),
        None,
    )
    seed: int = option(SEED, 0)
    timing: bool = option(TIMING, True)
    # Sorted or not, later pairs win over earlier ones with the same key.
    params: tuple[tuple[str, str], ...] = option(
        Spec(
            help="Policy parameter (repeatable); see the policy's documentation.",
            unit="KEY=VALUE",
            flag="--param",
            kind="pairs",
            repeat=True,
            show_default=False,
        ),
        (),
    )
    cdf_points: int = option(
        Spec(help="Points of the latency CDF the result carries (0: none); needs timing.", low=0, cli=False),
        0,
    )


@dataclass(frozen=True)
class MapOptions:
    """How a file-level trace is mapped through the ext4 model to a block trace."""

    capacity: int = option(
        Spec(help=f"File-system size: {SIZE_HELP}.", kind="size", cli_default=DEFAULT_CAPACITY)
    )
    fs: str = option(Spec(help="File-system model.", choices=("ext4",)), "ext4")
    mount_opts: str = option(
        Spec(
            help="ext4-style mount options, comma-separated (e.g. nodiscard,commit=5).",
            unit="OPTS",
            show_default=False,
        ),
        "",
    )
    device: int | None = option(
        Spec(
            help="Model only the files of this device (st_dev as recorded); others are skipped.",
            unit="ST_DEV",
            low=0,
            show_default=False,
        ),
        None,
    )
    age: float | None = option(AGE, None)
    age_seed: int = option(AGE_SEED, 0)
    age_churn: int = option(AGE_CHURN, 0)

    def aged(self, aging: Aging | None) -> MapOptions:
        """These options on a file system aged as ``aging`` says (None: as they are)."""
        if aging is None:
            return self
        return dataclasses.replace(self, age=aging.share, age_seed=aging.seed, age_churn=aging.churn)


@dataclass(frozen=True)
class RecordOptions:
    """How a program's file writes are recorded (and, with ``block``, its block I/O captured)."""

    method: str = option(
        Spec(
            help="Stack walk for the PC signature: frame pointers, libunwind, stack scan, or auto.",
            choices=METHODS,
        ),
        "auto",
    )
    frames: int = option(Spec(help="Return addresses hashed into a signature.", low=1, high=MAX_FRAMES), 12)
    via: str = option(
        Spec(
            help="Capture with the LD_PRELOAD shim (shim), with BPF at the system-call boundary (bpf: root, "
            "sees static and Go programs), or both (auto: the shim, plus BPF for the programs the shim "
            "cannot enter; without root or BPF the shim alone, with a warning).",
            choices=VIAS,
        ),
        "auto",
    )
    keep_logs: str | None = option(
        Spec(
            help="Keep the raw shim logs in DIR (default: a temporary directory, removed).",
            unit="DIR",
            kind="dir",
            show_default=False,
        ),
        None,
    )
    symbol_dirs: tuple[str, ...] = option(
        Spec(
            help="Also look for separate debug files in DIR (by build-id, DIR/.build-id/xx/yyyy.debug, "
            "and by path, DIR/usr/lib/...) when naming frames; /usr/lib/debug is always searched. "
            "Repeatable.",
            unit="DIR",
            flag="--symbols",
            kind="existing_dir",
            repeat=True,
            show_default=False,
        ),
        (),
    )
    no_symbols: bool = option(
        Spec(help="Do not name the frames of the PC table (addr2line) after the run.", show_default=False),
        False,
    )
    coalesce: bool = option(
        Spec(
            help="Fold runs of small contiguous writes of one thread to one file (<= 50 ms, 4 MiB) into "
            "one row per stretch of pages with the same last-writing PC (what 'pcstream map' sees is "
            "the same); --no-coalesce keeps one row per call, with its own PC.",
            negative="--no-coalesce",
        ),
        True,
    )
    block: bool = option(
        Spec(
            help="Also capture the real block I/O of CMD on a fresh ext4 loop device (root only).",
            show_default=False,
        ),
        False,
    )
    capacity: int | None = option(
        Spec(
            help=f"--block: size of the ext4 image: {SIZE_HELP} (default {BLOCK_CAPACITY}).",
            kind="size",
            show_default=False,
        ),
        None,
    )
    mount_opts: str | None = option(
        Spec(
            help="--block: mount options of the ext4 (default discard,noatime, as the model assumes).",
            unit="OPTS",
            show_default=False,
        ),
        None,
    )
    table: str | None = option(
        Spec(
            help="--block: run CMD with live write-lifetime hints from this PC table (learned by "
            "'simulate --table'; its signature method replaces --method/--frames); needs the BPF "
            "capture. The layout file then has the shim's counts and the hint fidelity (docs/LIVE.md).",
            unit="TABLE.json",
            show_default=False,
        ),
        None,
    )
    ssd: str = option(SSD, "paper")
    age: float | None = option(AGE, None)
    age_seed: int = option(AGE_SEED, 0)
    age_churn: int = option(AGE_CHURN, 0)

    @property
    def aging(self) -> Aging | None:
        """The aging of the ``block`` file system (None: a fresh file system)."""
        return Aging(self.age, self.age_seed, self.age_churn) if self.age is not None else None


# Every options class, for looking up a field's command-line spelling.
ALL: tuple[type, ...] = (SimOptions, MapOptions, RecordOptions)
