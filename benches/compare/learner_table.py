#!/usr/bin/env python3
"""Builds the Learner comparison table from the JSON lines of `reclaim-compare-learner` jobs.

Standard library only. Called by learner.sh; usable on its own to redraw a table from kept files:

    python3 benches/compare/learner_table.py --jobs jobs.jsonl [--machine machine.json] [--output FILE]

Each figure is the median over the rounds, with the range (minimum to maximum) beside it; the
ratio is Burn's median ÷ Reclaim's.
"""

import argparse
import json
import statistics
import sys

# The other table's readers and writer: one copy of each in this folder.
from table import InputError, field, print_table, read_json_lines

MIB = 1024 * 1024
KIB = 1024
PIPELINES = ("burn", "reclaim")


def read_jobs(path):
    jobs = {pipeline: [] for pipeline in PIPELINES}
    for number, job in enumerate(read_json_lines(path), start=1):
        if job.get("pipeline") not in jobs:
            raise InputError(f"{path}: record {number}: unknown pipeline {job.get('pipeline')!r}")
        jobs[job["pipeline"]].append(job)
    for pipeline, runs in jobs.items():
        if not runs:
            raise InputError(f"{path}: no {pipeline} job")
    settings = {tuple(field(job, name, path) for name in ("backend", "epochs", "workers"))
                for runs in jobs.values() for job in runs}
    if len(settings) != 1:
        raise InputError(f"{path}: the jobs differ in backend, epochs or workers: {sorted(settings)}")
    return jobs, settings.pop()


def values(runs, key):
    """A figure of every run; raises if a run lacks it."""
    found = []
    for run in runs:
        value = key(run) if callable(key) else run.get(key)
        if value is None:
            raise InputError(f"a {run['pipeline']} job has no {key if isinstance(key, str) else 'such figure'}")
        found.append(value)
    return found


ROWS = [
    # label, key (a field or a function of a job), unit, lower is better
    ("seconds per epoch (training)", "epoch_training_seconds_mean", "s", True),
    ("seconds per epoch (with validation)", "epoch_seconds_mean", "s", True),
    ("fit seconds (all epochs)", "fit_seconds", "s", True),
    ("setup seconds (datasets, loaders)", "setup_seconds", "s", True),
    ("samples per second (training + validation time)", "samples_per_second", "count", False),
    ("validation accuracy, last epoch", "accuracy_percent", "percent", False),
    ("RSS before loading", "baseline_rss_bytes", "MiB", True),
    ("peak RSS (VmHWM)", "peak_rss_bytes", "MiB", True),
    ("RSS after everything is dropped", "released_rss_bytes", "MiB", True),
    ("live heap before loading", "baseline_heap_bytes", "KiB", True),
    ("live heap after everything is dropped", "released_heap_bytes", "KiB", True),
    ("live heap left over (after − before)",
     lambda job: job["released_heap_bytes"] - job["baseline_heap_bytes"], "B", True),
]


def formatted(value, unit):
    if unit == "s":
        return f"{value:.2f} s"
    if unit == "count":
        return f"{value:,.0f}"
    if unit == "percent":
        return f"{value:.2f}%"
    if unit == "B":
        return f"{value:+,.0f} B"
    if unit == "MiB":
        return f"{value / MIB:.1f} MiB"
    return f"{value / KIB:.1f} KiB"


def cell(numbers, unit):
    middle = statistics.median(numbers)
    if len(numbers) == 1:
        return formatted(middle, unit), middle
    return f"{formatted(middle, unit)} ({formatted(min(numbers), unit)} – {formatted(max(numbers), unit)})", middle


def build_table(jobs, settings, machine):
    backend, epochs, workers = settings
    rounds = min(len(jobs["burn"]), len(jobs["reclaim"]))
    lines = [
        f"| metric ({epochs} epoch{'' if epochs == 1 else 's'}, median of {rounds}, range) | Burn's pipeline | Reclaim's loader | ratio (Burn ÷ Reclaim) |",
        "|---|---:|---:|---:|",
    ]
    for label, key, unit, _lower_is_better in ROWS:
        burn_text, burn_median = cell(values(jobs["burn"], key), unit)
        reclaim_text, reclaim_median = cell(values(jobs["reclaim"], key), unit)
        ratio = "n/a" if reclaim_median <= 0 else f"{burn_median / reclaim_median:.2f}×"
        lines.append(f"| {label} | {burn_text} | {reclaim_text} | {ratio} |")
    text = [f"## burn-train's `Learner`: Burn's pipeline vs Reclaim's loader ({backend})", "", *lines, "",
            "Ratios are Burn ÷ Reclaim: above 1 for seconds and memory, Burn's pipeline takes more; "
            "above 1 for samples per second, Burn's pipeline is faster.", "",
            f"Both jobs: burn-train 0.22.1's `Learner` and `SupervisedTraining` with accuracy and loss "
            f"metrics on both splits, `Mlp` (784-128-ReLU-10, seed 42), SGD lr 0.01, batch 64, "
            f"shuffled training (seed 42), validation on the test split after each epoch, pixels scaled "
            f"and normalized with MNIST's mean and standard deviation, {workers} loader worker(s), the "
            f"{backend} backend, one process per job. Burn's pipeline: `MnistDataset::train()/test()` + "
            f"`DataLoaderBuilder` + the batcher of Burn's MNIST example. Reclaim's: `BurnLoader` over the "
            f"memory-mapped IDX files.", ""]
    if machine:
        text.append(f"Machine: {machine.get('cpu_model', '?')}, {machine.get('nproc', '?')} CPUs (nproc), "
                    f"{machine.get('memory', '?')} memory; load average at the start: "
                    f"{machine.get('load_average', '?')}; {machine.get('rustc', '?')}; reclaim at "
                    f"{machine.get('reclaim_commit', '?')}.")
        text.append("")
    return "\n".join(text)


def main():
    parser = argparse.ArgumentParser(description="Burn's pipeline vs Reclaim's loader in a Learner: the table.")
    parser.add_argument("--jobs", required=True, help="the JSON lines printed by reclaim-compare-learner")
    parser.add_argument("--machine", help="JSON describing the machine (machine.py)")
    parser.add_argument("--output", help="also write the table to this file")
    arguments = parser.parse_args()
    return print_table("learner_table.py", lambda: table_of(arguments), arguments.output)


def table_of(arguments):
    """The table of the files `arguments` name; an unreadable file is an InputError naming it."""
    try:
        jobs, settings = read_jobs(arguments.jobs)
        machine = None
        if arguments.machine:
            with open(arguments.machine) as file:
                machine = json.load(file)
    except (OSError, json.JSONDecodeError) as error:
        raise InputError(str(error)) from error
    return build_table(jobs, settings, machine)


if __name__ == "__main__":
    sys.exit(main())
