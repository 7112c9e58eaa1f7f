#!/usr/bin/env python3
"""One row per run of a series of `run.sh --keep DIR` runs, then the spread of each ratio.

Standard library only. Each DIR is a folder kept by `run.sh --keep` (pytorch.json, reclaim-run/,
burn.jsonl and the /usr/bin/time files):

    python3 benches/compare/series_table.py [--output FILE] DIR [DIR ...]

Reclaim's "whole job" is its `phases.json` total: start-up, warm-up, dataset opening, training,
evaluation, checkpoints, release report and figures. PyTorch's and Burn's "job" are their
training and evaluation alone (no import, no start-up), so the job ratio is conservative; the
process ratio compares whole processes under `/usr/bin/time`.
"""

import argparse
import os
import statistics
import sys

from table import (InputError, burn_side, field, print_table, pytorch_side, read_gnu_time,
                   read_json, reclaim_side)


def run_row(folder):
    pytorch = pytorch_side(os.path.join(folder, "pytorch.json"))
    reclaim_run = os.path.join(folder, "reclaim-run")
    reclaim = reclaim_side(reclaim_run)
    if pytorch["epochs"] != reclaim["epochs"]:
        raise InputError(f"{folder}: PyTorch ran {pytorch['epochs']} epochs, Reclaim {reclaim['epochs']}")
    phases_path = os.path.join(reclaim_run, "phases.json")
    reclaim_whole_job = field(read_json(phases_path), "total", phases_path)
    burn_path = os.path.join(folder, "burn.jsonl")
    burn = burn_side(burn_path) if os.path.exists(burn_path) else None
    pytorch_time = read_gnu_time(os.path.join(folder, "pytorch.time"))
    reclaim_time = read_gnu_time(os.path.join(folder, "reclaim.time"))
    return {
        "folder": folder,
        "backend": reclaim["backend"],
        "epochs": reclaim["epochs"],
        "pytorch_job": pytorch["job_seconds"],
        "burn_epoch": burn["seconds_per_epoch"] if burn else None,
        "reclaim_epoch": reclaim["seconds_per_epoch"],
        "reclaim_whole_job": reclaim_whole_job,
        "job_ratio": pytorch["job_seconds"] / reclaim_whole_job,
        "process_ratio": (pytorch_time["wall_seconds"] / reclaim_time["wall_seconds"]
                          if pytorch_time and reclaim_time else None),
        "burn_epoch_ratio": burn["seconds_per_epoch"] / reclaim["seconds_per_epoch"] if burn else None,
        "reclaim_accuracy": reclaim["test_accuracy"],
    }


def number(value, unit=""):
    return "n/a" if value is None else f"{value:.2f}{unit}"


def spread(values):
    values = [value for value in values if value is not None]
    if not values:
        return "n/a"
    return f"{statistics.median(values):.2f}× (min {min(values):.2f}×, max {max(values):.2f}×)"


def check_one_setting(rows):
    """A series compares like with like: every run on one backend, for one number of epochs."""
    settings = {(row["backend"], row["epochs"]) for row in rows}
    if len(settings) > 1:
        described = ", ".join(f"{row['folder']}: {row['backend']}, {row['epochs']} epochs" for row in rows)
        raise InputError(f"the runs differ in backend or epochs ({described})")


def build_series(rows):
    check_one_setting(rows)
    lines = [
        "| run | backend | PyTorch job | Reclaim whole job | PyTorch ÷ Reclaim (job) | "
        "PyTorch ÷ Reclaim (process) | Burn's recipe s/epoch | Reclaim s/epoch | "
        "Burn's ÷ Reclaim (epoch) | Reclaim accuracy |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for index, row in enumerate(rows, start=1):
        lines.append(
            f"| {index} | {row['backend']} | {number(row['pytorch_job'], ' s')} | "
            f"{number(row['reclaim_whole_job'], ' s')} | {number(row['job_ratio'], '×')} | "
            f"{number(row['process_ratio'], '×')} | {number(row['burn_epoch'], ' s')} | "
            f"{number(row['reclaim_epoch'], ' s')} | {number(row['burn_epoch_ratio'], '×')} | "
            f"{row['reclaim_accuracy'] * 100:.2f}% |")
    lines += [
        "",
        f"PyTorch ÷ Reclaim, job: {spread(row['job_ratio'] for row in rows)}; "
        f"whole process: {spread(row['process_ratio'] for row in rows)}; "
        f"Burn's recipe ÷ Reclaim per epoch: {spread(row['burn_epoch_ratio'] for row in rows)}.",
    ]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description="A series of run.sh runs: one row per run.")
    parser.add_argument("folders", nargs="+", help="folders kept by `run.sh --keep`")
    parser.add_argument("--output", help="also write the table to this file")
    arguments = parser.parse_args()
    return print_table("series_table.py",
                       lambda: build_series([run_row(folder) for folder in arguments.folders]),
                       arguments.output)

if __name__ == "__main__":
    sys.exit(main())
