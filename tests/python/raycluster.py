"""A Ray cluster on this machine for tests: a head with no CPUs (the driver's node, where the
travelling traces are stored) and worker nodes started in a private mount namespace in which a
directory (the traces') is hidden under an empty tmpfs, so the workers see none of the driver's
files. Every node runs in its own process group, so a test can lose one (SIGKILL to the group) and
the fixture stops all of them at the end, whatever happened."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RAY = Path(sys.executable).parent / "ray"
# Node health checks every 0.5 s, a node dead after 4 missed ones: a lost node is noticed in
# about 2 s instead of Ray's default 30 s or so.
ENV = {
    "RAY_AUTH_MODE": "disabled",
    "RAY_health_check_period_ms": "500",
    "RAY_health_check_timeout_ms": "1000",
    "RAY_health_check_failure_threshold": "4",
    "RAY_USAGE_STATS_ENABLED": "0",
}


def missing() -> str | None:
    """Why no cluster can be started here, or None."""
    if os.geteuid() != 0:
        return "a worker node in a private mount namespace needs root (unshare -m, mount)"
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    if not RAY.exists():
        return "Ray is not installed in this environment"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(check, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


class Cluster:
    def __init__(self, hidden: Path) -> None:
        self.hidden = hidden
        # Short: Ray's Unix sockets live below it (a socket path has at most 107 bytes).
        self.temp = tempfile.mkdtemp(prefix="prt", dir="/tmp")
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.nodes: list[subprocess.Popen[bytes]] = []
        self.env = {**os.environ, **ENV}

    def _start(self, argv: list[str], log: str) -> subprocess.Popen[bytes]:
        with open(os.path.join(self.temp, log), "wb") as out:
            node = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, env=self.env, start_new_session=True
            )
        self.nodes.append(node)
        return node

    def _ports(self) -> list[str]:
        return [
            "--node-manager-port", str(free_port()),
            "--object-manager-port", str(free_port()),
            "--dashboard-agent-listen-port", str(free_port()),
            "--dashboard-agent-grpc-port", str(free_port()),
            "--runtime-env-agent-port", str(free_port()),
            "--metrics-export-port", str(free_port()),
        ]  # fmt: skip

    def start_head(self) -> None:
        argv = [str(RAY), "start", "--head", "--port", str(self.port), "--num-cpus", "0"]
        argv += ["--include-dashboard", "false", "--temp-dir", self.temp, *self._ports(), "--block"]
        self._start(argv, "head.log")

    def start_worker(self, name: str, ip: str) -> subprocess.Popen[bytes]:
        """A worker node with one CPU that cannot see ``hidden`` (it says so in its log or dies)."""
        ray = [str(RAY), "start", "--address", self.address, "--num-cpus", "1", "--node-ip-address", ip]
        ray += [*self._ports(), "--block"]
        hidden = str(self.hidden)
        script = 'mount -t tmpfs none "$1" && test -z "$(ls -A "$1")" && shift && exec "$@"'
        return self._start(["unshare", "-m", "sh", "-c", script, "sh", hidden, *ray], f"{name}.log")

    def alive_nodes(self) -> int:
        """Nodes the cluster counts as alive (asked from a fresh driver process)."""
        code = (
            f"import ray, logging; ray.init(address={self.address!r}, logging_level=logging.ERROR, "
            "log_to_driver=False); print(sum(n['Alive'] for n in ray.nodes()))"
        )
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=self.env, timeout=120
        )
        return int(proc.stdout.split()[-1]) if proc.returncode == 0 and proc.stdout.split() else -1

    def kill(self, node: subprocess.Popen[bytes]) -> None:
        """Lose ``node``: SIGKILL to its whole process group (raylet, workers, agents)."""
        try:
            os.killpg(node.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        node.wait(timeout=30)

    def stop(self) -> None:
        for node in reversed(self.nodes):
            if node.poll() is None:
                try:
                    os.killpg(node.pid, signal.SIGTERM)
                    node.wait(timeout=5)  # then SIGKILL: the test is over, nothing to keep
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    pass
            try:
                os.killpg(node.pid, signal.SIGKILL)  # whatever of the group is left
            except ProcessLookupError:
                pass
            node.wait(timeout=30)
        shutil.rmtree(self.temp, ignore_errors=True)

    def log(self, name: str) -> str:
        path = os.path.join(self.temp, f"{name}.log")
        return Path(path).read_text(errors="replace")[-3000:] if os.path.exists(path) else ""
