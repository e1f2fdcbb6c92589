"""Workload recipes: real programs, run under ``pcstream record`` in a scratch directory.

A recipe names what it needs (Debian packages, checked by the binaries they provide), a shell
script run as one recorded command in the scratch directory (so every process it starts is
recorded, and one trace holds concurrent programs), the trace checks its output must pass, and
the logical capacity its data are sized for (the suite's `paper` SSD preset, aged to 90 %, unless it
says otherwise). Scripts keep their size and time bounded (rate limits, key counts, durations) so
the whole suite records in well under 90 minutes on 2 cores; docs/WORKLOADS.md gives each recipe's
live data and bytes written against the aged file system's free space.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Check = Callable[[dict[str, Any]], str | None]

# The SSD preset the suite's recipes are sized for (and the bundled traces mapped for): the seeds'
# emulated device (12 GiB, 512 lines of 24 MiB, 7 % OP).
SUITE_SSD = "paper"
# The suite's file system is aged to this share of its blocks before each program runs (one churn
# round, so the free space is fragmented and, without discard, its LBAs still hold stale data the
# device counts as valid): the programs run in the ~10 % left, about 1.1 GiB on `paper`.
SUITE_AGE_SHARE = 0.9
SUITE_AGE_CHURN = 1
# The suite's discard modes: (mount options of the file-system model, suffix of the trace's stem).
# Online discard is the seeds' mode (their analyzer intercepted the file system's TRIMs); without
# discard (ext4's default) a deleted file's blocks stay valid on the device until their LBAs are
# written again.
SUITE_MODES: tuple[tuple[str, str], ...] = (("discard", ""), ("nodiscard", ".nodiscard"))


@dataclass(frozen=True)
class Recipe:
    name: str
    summary: str
    # Debian packages and, for each, a binary whose presence means it is installed.
    packages: tuple[tuple[str, str], ...]
    script: str
    checks: tuple[Check, ...] = ()
    # Typical wall time on 2 cores (seconds), shown in listings.
    seconds: int = 60
    # Run first in the scratch directory, not recorded (unpacking sources, configuring).
    setup: str = ""
    # The SSD preset the data are sized for: the file-system model gets its logical capacity.
    ssd: str = SUITE_SSD
    # Mount options of the file-system model (ext4 defaults plus discard when empty).
    mount_opts: str = ""
    # Frames of a PC signature (`record --frames`): deep call paths (a JVM's) tell their writers
    # apart only beyond the default's reach.
    frames: int = 12


# ------------------------------------------------------------------------------ checks
# Each check gets the trace facts (see workloads.recording.trace_facts) and returns a problem or None.


def at_least_signatures(n: int) -> Check:
    def check(f: dict[str, Any]) -> str | None:
        got = f["write_signatures"]
        return None if got >= n else f"only {got} PC signatures wrote data (expected ≥ {n})"

    check.__name__ = f"at_least_{n}_signatures"
    return check


def files_matching(pattern: str, n: int = 1) -> Check:
    def check(f: dict[str, Any]) -> str | None:
        got = sum(1 for p in f["written_paths"] if pattern in p)
        return None if got >= n else f"{got} written files match '{pattern}' (expected ≥ {n})"

    check.__name__ = f"files_matching_{pattern}"
    return check


def deletes_files(n: int) -> Check:
    def check(f: dict[str, Any]) -> str | None:
        got = f["unlinks"]
        return None if got >= n else f"{got} files deleted (expected ≥ {n}: short-lived files → TRIMs)"

    check.__name__ = f"deletes_{n}_files"
    return check


def writes_bytes(n: int) -> Check:
    def check(f: dict[str, Any]) -> str | None:
        got = f["write_bytes"]
        return None if got >= n else f"{got} bytes written (expected ≥ {n})"

    check.__name__ = f"writes_{n}_bytes"
    return check


# ------------------------------------------------------------------------------ scripts

PY = shlex.quote(sys.executable)

# db_bench sized for the suite's aged `paper` file system (about 1.1 GiB free): 1.3 M keys of
# 16 + 400 B ≈ 540 MB of live data; the LSM tree's obsolete SSTs and compaction outputs take the
# space used to about 0.9 GB at its peak, so the database fills most of the free space (1.5 M keys
# overflowed it in the file-system model). 8 MiB memtables and 4 MiB SSTs, so flushes and
# compactions are frequent; the write-rate limit bounds the trace's size and --duration each
# benchmark's time.
DB_KEYS = 1_300_000
DB_BENCH = (
    f"db_bench --db=./rdb --num={DB_KEYS} --value_size=400 --key_size=16 --compression_type=none "
    "--write_buffer_size=8388608 --target_file_size_base=4194304 "
    "--max_bytes_for_level_base=33554432 --benchmark_write_rate_limit=RATE --seed=1 "
    "--progress_reports=false --histogram=false --statistics=false --stats_interval_seconds=0"
)


# rocksdb-ar's fillseq passes.
AR_PASSES = 8


def db_bench(rate_mb_s: int = 20) -> str:
    return DB_BENCH.replace("RATE", str(rate_mb_s * 1_000_000))


# Unpacking and configuring the sources is set-up (not recorded); the builds are the workload.
GCC_SETUP = r"""
src=$(ls /usr/src/linux-source-*.tar.xz | sort -V | tail -1)
mkdir -p linux && tar -xf "$src" -C linux --strip-components=1
cd linux && make -s defconfig >/dev/null && make -s -j2 prepare >/dev/null
"""

# Each round touches a third of fs/ext4's sources, rebuilds, and syncs what the build wrote
# (coreutils `sync FILE...` fsyncs each file), so its objects reach the device as a sync between
# rounds makes them do; without it they would die in the page cache (delayed allocation) and the
# device would see almost nothing of the build.
GCC = r"""
cd linux
files=(fs/ext4/*.c)
touch ../round.stamp
make -s -j2 fs/ext4/ fs/jbd2/ >/dev/null
for r in $(seq 1 ROUNDS); do
  find fs/ext4 fs/jbd2 -type f -newer ../round.stamp -print0 | xargs -0 -r sync --
  touch ../round.stamp
  for ((i = r % 3; i < ${#files[@]}; i += 3)); do touch "${files[$i]}"; done
  make -s -j2 fs/ext4/ >/dev/null
done
find fs/ext4 fs/jbd2 -type f -newer ../round.stamp -print0 | xargs -0 -r sync --
"""


# Building kernel objects needs the sources and the kernel's build tools.
KERNEL_PKGS: tuple[tuple[str, str], ...] = (
    ("linux-source", "/usr/src/linux-source-*.tar.xz"),
    ("build-essential", "gcc"),
    ("flex", "flex"),
    ("bison", "bison"),
    ("bc", "bc"),
    ("libelf-dev", "/usr/include/libelf.h"),
    ("libssl-dev", "/usr/include/openssl/ssl.h"),
)
ROCKSDB_PKGS: tuple[tuple[str, str], ...] = (("rocksdb-tools", "db_bench"),)


# PostgreSQL refuses to run as root: initdb (not recorded) and the server run as user postgres.
# The recorded script opens the shim's log directory to that user, starts the server under
# the shim (the environment passed explicitly: runuser keeps it, su would not), loads the
# pgbench tables and runs the TPC-B-like mix with 4 clients; the server stops at the end.
PG_BIN = "PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)"
PG_AS = 'runuser -u postgres -- env LD_PRELOAD="${LD_PRELOAD:-}" PCSHIM_DIR="${PCSHIM_DIR:-}" ' + (
    'PCSHIM_METHOD="${PCSHIM_METHOD:-}" PCSHIM_FRAMES="${PCSHIM_FRAMES:-}"'
)
PGBENCH_SETUP = f"""
{PG_BIN}
mkdir pg && chown postgres pg
runuser -u postgres -- "$PGBIN/initdb" -D pg/data -A trust -U postgres >/dev/null
"""
PGBENCH = f"""
{PG_BIN}
[ -n "${{PCSHIM_DIR:-}}" ] && chmod 1777 "$PCSHIM_DIR"
{PG_AS} "$PGBIN/pg_ctl" -D pg/data -w -l pg/log \
  -o "-p 5499 -k $PWD/pg -c listen_addresses= -c max_wal_size=256MB -c checkpoint_timeout=30s" start
trap '{PG_AS} "$PGBIN/pg_ctl" -D pg/data -m fast -w stop' EXIT
export PGHOST=$PWD/pg PGPORT=5499 PGUSER=postgres
{PG_AS} "$PGBIN/pgbench" -h "$PGHOST" -p 5499 -U postgres -i -s SCALE -q postgres
{PG_AS} "$PGBIN/pgbench" -h "$PGHOST" -p 5499 -U postgres -c 4 -j 2 -T SECONDS -R 1500 postgres
"""


def pgbench(scale: int, seconds: int) -> str:
    return PGBENCH.replace("SCALE", str(scale)).replace("SECONDS", str(seconds))


# The seeds' GCC workload: 30 rebuilds with a third of the sources modified each time.
GCC_ROUNDS = 30


def gcc(rounds: int) -> str:
    return GCC.replace("ROUNDS", str(rounds))


# fio: a 1000 MiB file (seven eighths of the aged file system's free space, as the seeds' workloads
# fill most of it), laid out first, then 40 s of random 4 KiB writes at 40 MiB/s (1.6 GiB, 1.4x the
# free space): each random page is a row of its own in the block trace, and 3x the free space made
# 2.5 MB per trace and mode, a third of the bundle's budget for the five fio recipes alone.
FIO_MIB = 1000
FIO_FILE = f"{FIO_MIB}M"


def fio(dist: str) -> str:
    spec = "" if dist == "uniform" else f"--random_distribution={dist}"
    return (
        f"fio --name=w --filename=./fio.dat --size={FIO_FILE} --rw=randwrite --bs=4k --ioengine=psync "
        f"{spec} --time_based --runtime=40 --fsync=256 --rate=40m --output=/dev/null"
    )


# The TPC-C-like SQLite database: warehouses of 20,000 items and 10 x 1,000 customers, 17.1 MB each,
# loaded in the recorded run (50 warehouses: 855 MB, three quarters of the aged file system's free
# space, loaded in about 5 minutes on 2 cores).
TPCC_WAREHOUSES = 50
# Mixed 2's database shares the free space with the kernel build's objects.
MIXED2_WAREHOUSES = 40


def tpcc(warehouses: int = TPCC_WAREHOUSES) -> str:
    return f"--warehouses {warehouses} --items 20000 --customers 1000"


# Cassandra 5.0 from Maven Central (cassandra-all and its 98 dependencies, 64 MB, fetched once
# into the user's cache by the set-up), one node on loopback in the scratch directory (its own
# ports, so a server already running is never the one loaded), started by the recorded script:
# the `java` it runs gets JFR's options from the shim, so commit log, memtable flush and
# compaction are told apart by their Java call paths. The commit log is written with
# `commitlog_disk_access_mode: direct` (O_DIRECT writes through FileChannel): Cassandra's default
# maps the segments and stores into them, which no write hook sees. 64 MiB of memtable and a
# 128 MiB commit-log budget make flushes frequent, as db_bench's small memtables do.
CASSANDRA_VERSION = "5.0.2"
CASSANDRA_PORTS = (19442, 17400)  # native transport (CQL), storage
# YCSB-like load: 100,000 records of ten 400-byte fields (about 400 MB of live data, a third of
# the aged file system's free space; size-tiered compaction may hold two copies of it at once,
# and the commit log its budget), then 150,000 Zipfian updates (600 MB more).
CASSANDRA_RECORDS = 100_000
CASSANDRA_UPDATES = 150_000
CASSANDRA_FIELD_BYTES = 400
# Cassandra's JVM options for Java 17 (its conf/jvm17-server.options: the JDK internals it uses).
CASSANDRA_EXPORTS = (
    "java.base/jdk.internal.misc java.base/jdk.internal.ref java.base/sun.nio.ch "
    "java.management.rmi/com.sun.jmx.remote.internal.rmi java.rmi/sun.rmi.registry "
    "java.rmi/sun.rmi.server java.sql/java.sql java.base/java.lang.ref jdk.unsupported/sun.misc"
)
CASSANDRA_OPENS = (
    "java.base/java.lang.module java.base/jdk.internal.loader java.base/jdk.internal.ref "
    "java.base/jdk.internal.reflect java.base/jdk.internal.math java.base/jdk.internal.module "
    "java.base/jdk.internal.util.jar jdk.management/com.sun.management.internal java.base/sun.nio.ch "
    "java.base/java.io java.base/java.nio java.base/java.util.concurrent java.base/java.util "
    "java.base/java.util.concurrent.atomic java.base/java.lang java.base/java.math "
    "java.base/java.lang.reflect java.base/java.net"
)
CASSANDRA_SETUP = f"""
cache="${{XDG_CACHE_HOME:-$HOME/.cache}}/pcstream/cassandra-{CASSANDRA_VERSION}"
if [ ! -f "$cache/complete" ]; then
  rm -rf "$cache.part" && mkdir -p "$cache.part"
  cat > "$cache.part/pom.xml" <<'POM'
<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>pcstream</groupId><artifactId>cassandra-recipe</artifactId><version>1</version>
<dependencies><dependency><groupId>org.apache.cassandra</groupId><artifactId>cassandra-all</artifactId>
<version>{CASSANDRA_VERSION}</version></dependency></dependencies></project>
POM
  mvn -q -B -f "$cache.part/pom.xml" dependency:copy-dependencies -DoutputDirectory="$cache.part/lib"
  touch "$cache.part/complete" && rm -rf "$cache" && mv "$cache.part" "$cache"
fi
ln -s "$cache/lib" lib
# The commit log is written with O_DIRECT: the scratch directory's file system must take it.
dd if=/dev/zero of=direct.check bs=4096 count=1 oflag=direct status=none || {{
  echo "the scratch directory's file system refuses O_DIRECT (tmpfs?): use a disk's" >&2; exit 1; }}
rm -f direct.check
cat > cassandra.yaml <<YAML
cluster_name: pcstream
num_tokens: 16
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
data_file_directories: [$PWD/data]
commitlog_directory: $PWD/commitlog
saved_caches_directory: $PWD/saved_caches
hints_directory: $PWD/hints
commitlog_sync: periodic
commitlog_sync_period: 10000ms
commitlog_disk_access_mode: direct
commitlog_total_space: 128MiB
memtable_heap_space: 64MiB
concurrent_compactors: 1
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "127.0.0.1:{CASSANDRA_PORTS[1]}"
listen_address: 127.0.0.1
rpc_address: 127.0.0.1
storage_port: {CASSANDRA_PORTS[1]}
native_transport_port: {CASSANDRA_PORTS[0]}
endpoint_snitch: SimpleSnitch
YAML
"""
# The node runs in the background; the load waits for its port; SIGTERM stops it (its shutdown
# hook flushes the memtables, and JFR writes its recording). A failed load stops it too.
CASSANDRA = f"""
opts="-Xms1G -Xmx1G -Djdk.attach.allowAttachSelf=true"
for m in {CASSANDRA_EXPORTS}; do opts="$opts --add-exports $m=ALL-UNNAMED"; done
for m in {CASSANDRA_OPENS}; do opts="$opts --add-opens $m=ALL-UNNAMED"; done
java $opts -Dcassandra.config=file://$PWD/cassandra.yaml -Dcassandra-foreground=true \\
  -Dcassandra.storagedir=$PWD -cp "lib/*" org.apache.cassandra.service.CassandraDaemon >cassandra.out 2>&1 &
node=$!
trap 'kill -TERM $node 2>/dev/null; wait $node || true' EXIT
{PY} -m pcstream.workloads.ycsb_cassandra --port {CASSANDRA_PORTS[0]} --records {CASSANDRA_RECORDS} \\
  --updates {CASSANDRA_UPDATES} --field-bytes {CASSANDRA_FIELD_BYTES}
"""


RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in [
        Recipe(
            "rocksdb-ur",
            "RocksDB db_bench UR: fillrandom, then overwrite (random updates) on the same keys",
            ROCKSDB_PKGS,
            f"{db_bench()} --benchmarks=fillrandom,overwrite --duration=60",
            (at_least_signatures(3), files_matching(".sst", 5), files_matching(".log")),
            seconds=140,
        ),
        Recipe(
            "rocksdb-ar",
            "RocksDB db_bench AR: fillseq eight times, each into a fresh database (append-heavy)",
            ROCKSDB_PKGS,
            # fillseq writes the --num keys once and ignores --duration; each fillseq starts a fresh
            # database (the previous one's files deleted). One pass brings about 135 k pages to the
            # device (the database; its WAL dies in the page cache), so eight bring 3.7x the free space.
            f"{db_bench(30)} --benchmarks={','.join(['fillseq'] * AR_PASSES)}",
            (at_least_signatures(3), files_matching(".sst", 5)),
            seconds=200,
        ),
        Recipe(
            "rocksdb-fr",
            "RocksDB db_bench FR: fillrandom",
            ROCKSDB_PKGS,
            f"{db_bench()} --benchmarks=fillrandom --duration=90",
            (at_least_signatures(3), files_matching(".sst", 5)),
            seconds=110,
        ),
        Recipe(
            "sqlite-tpcc",
            "SQLite TPC-C-like (New-Order, Payment, Delivery, ...) with the rollback journal",
            (),
            # The load and 30 s bring 2.3x the free space to the device: each transaction's journal
            # is a new file, a row of the trace's file table (2 MB per trace and mode).
            f"{PY} -m pcstream.workloads.tpcc_sqlite tpcc.db --duration 30 {tpcc()}",
            (files_matching("tpcc.db-journal"), deletes_files(100)),
            seconds=320,
        ),
        Recipe(
            "sqlite-tpcc-wal",
            "SQLite TPC-C-like in WAL mode (WAL appends and checkpoints)",
            (),
            f"{PY} -m pcstream.workloads.tpcc_sqlite tpcc.db --duration 60 {tpcc()} --journal wal",
            (files_matching("tpcc.db-wal"),),
            seconds=300,
        ),
        Recipe(
            "pgbench",
            "pgbench (TPC-B-like), scale 35 (about 530 MB): load, then 4 clients at 1500 tps for 150 s",
            (("postgresql", "/usr/lib/postgresql/*/bin/pg_ctl"),),
            pgbench(35, 150),
            (at_least_signatures(3), files_matching("pg_wal/"), files_matching("base/")),
            setup=PGBENCH_SETUP,
            seconds=200,
        ),
        Recipe(
            "cassandra",
            "Cassandra 5.0 (one node, Java call paths through JFR): YCSB-like load of 100,000 4 KB "
            "records, then 150,000 Zipfian updates",
            (("openjdk-17-jdk-headless", "javac"), ("maven", "mvn")),
            CASSANDRA,
            (at_least_signatures(3), files_matching("CommitLog-"), files_matching("-Data.db", 5)),
            setup=CASSANDRA_SETUP,
            seconds=300,
            # SSTable writes of a flush and of a compaction share their 12 innermost Java frames
            # (FileChannelImpl.write up to SortedTableWriter.append); their call paths part at
            # the 13th, and the whole stacks are 22-27 frames deep.
            frames=32,
        ),
        Recipe(
            "gcc",
            "GCC: build fs/ext4 and fs/jbd2 of the Linux sources, then 30 synced rebuilds with 1/3 touched",
            KERNEL_PKGS,
            gcc(GCC_ROUNDS),
            (files_matching(".o", 20), deletes_files(20)),
            setup=GCC_SETUP,
            seconds=620,  # 604 s measured when the bundle was recorded
        ),
        Recipe(
            "mixed1",
            "Mixed 1: RocksDB (fillrandom + overwrite) and the GCC rebuild loop (8 rounds) at the same time",
            ROCKSDB_PKGS + KERNEL_PKGS,
            f"( {db_bench()} --benchmarks=fillrandom,overwrite --duration=60 ) & ( {gcc(8)} ) & wait",
            (at_least_signatures(5), files_matching(".sst", 5), files_matching(".o", 10)),
            setup=GCC_SETUP,
            seconds=300,
        ),
        Recipe(
            "mixed2",
            "Mixed 2: SQLite TPC-C-like (40 s) and the GCC rebuild loop (8 rounds) at the same time",
            KERNEL_PKGS,
            f"( {PY} -m pcstream.workloads.tpcc_sqlite tpcc.db --duration 40 {tpcc(MIXED2_WAREHOUSES)} ) "
            f"& ( {gcc(8)} ) & wait",
            (files_matching("tpcc.db-journal"), files_matching(".o", 10)),
            setup=GCC_SETUP,
            seconds=360,
        ),
        *[
            Recipe(
                f"fio-{label}",
                f"fio random 4 KiB writes over a {FIO_MIB} MiB file, {label} distribution "
                "(FEMU hot/cold study)",
                (("fio", "fio"),),
                fio(dist),
                (writes_bytes(50 << 20),),
                seconds=110,
            )
            for label, dist in [
                ("uniform", "uniform"),
                ("normal", "normal:10"),
                ("zipf0.8", "zipf:0.8"),
                ("zipf1.2", "zipf:1.2"),
                ("pareto0.5", "pareto:0.5"),
            ]
        ],
        Recipe(
            "varmail",
            "filebench-like varmail: create/append/fsync/read/delete small mail files",
            (),
            # 4 MiB/s for 60 s: every append is fsynced, so each is its own few rows (16 MiB/s for
            # 90 s made an 8 MB trace per mode, a fifth of the bundle's budget).
            f"{PY} -m pcstream.workloads.fileops varmail --duration 60 --rate 4",
            (deletes_files(100),),
            seconds=95,
        ),
        Recipe(
            "fileserver",
            "filebench-like fileserver: 5,000 files of 128 KiB mean, create/write/append/delete, no fsync",
            (),
            f"{PY} -m pcstream.workloads.fileops fileserver --duration 90 --rate 40 --files 5000",
            (deletes_files(20),),
            seconds=100,
        ),
    ]
}
