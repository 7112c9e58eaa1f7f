#!/usr/bin/env python3
"""Prints the machine and versions as one JSON object, for the comparison tables.

    python3 benches/compare/machine.py REPOSITORY

Run before the jobs: the load average says whether their timings can be trusted.
"""

import json
import os
import subprocess
import sys


def run(repository, *command):
    try:
        return subprocess.run(command, cwd=repository, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def main():
    repository = sys.argv[1]
    cpu_model = "?"
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as meminfo:
        total_kib = next(int(line.split()[1]) for line in meminfo if line.startswith("MemTotal:"))
    commit = run(repository, "git", "rev-parse", "--short", "HEAD")
    if run(repository, "git", "status", "--porcelain", "--untracked-files=no"):
        commit += " (with uncommitted changes)"
    print(json.dumps({
        "nproc": run(repository, "nproc"),
        "cpu_model": cpu_model,
        "memory": f"{total_kib / 1024 / 1024:.1f} GiB",
        "load_average": " ".join(f"{value:.2f}" for value in os.getloadavg()),
        "rustc": run(repository, "rustc", "--version"),
        "reclaim_commit": commit,
    }))


if __name__ == "__main__":
    main()
