"""The Debian packages a workload recipe needs: which are missing (by the binary or file each
provides), installing them with apt-get (as root), and the installed versions (for the manifest).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess

from pcstream.errors import Failure
from pcstream.workloads.recipes import Recipe


def _present(probe: str) -> bool:
    if "*" in probe:
        return bool(glob.glob(probe))
    if probe.startswith("/"):
        return os.path.exists(probe)
    return shutil.which(probe) is not None


def missing_packages(r: Recipe) -> list[str]:
    return [pkg for pkg, probe in r.packages if not _present(probe)]


def ensure_packages(r: Recipe) -> list[str]:
    """Install the recipe's missing Debian packages (as root, with apt-get); the installed ones."""
    missing = missing_packages(r)
    if not missing:
        return []
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise Failure(
            f"workload {r.name} needs the Debian packages {' '.join(missing)}; install them "
            f"(sudo apt-get install -y {' '.join(missing)}) and run again",
        )
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *missing]):
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise Failure(f"workload {r.name}: '{' '.join(cmd)}' failed: {tail[0]}")
    still = missing_packages(r)
    if still:
        raise Failure(
            f"workload {r.name}: {' '.join(still)} still missing after apt-get install",
        )
    return missing


def package_versions(r: Recipe) -> dict[str, str]:
    out = {}
    for pkg, _ in r.packages:
        proc = subprocess.run(
            ["dpkg-query", "-W", "-f", "${Version}", pkg], capture_output=True, text=True, check=False
        )
        out[pkg] = proc.stdout.strip() if proc.returncode == 0 and proc.stdout.strip() else "unknown"
    return out
