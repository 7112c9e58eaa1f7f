#!/usr/bin/env python3
"""Builds the CIFAR augmentation table from the JSON lines of torchvision_cifar.py and of
`reclaim bench loader --dataset cifar10 --augment --json`, several rounds per configuration.

Standard library only (run by the system python3). Called by cifar_augment.sh; usable on its own
to redraw a table from kept files:

    python3 benches/compare/cifar_table.py --torchvision torchvision.jsonl \
        --reclaim reclaim.jsonl [--machine machine.json] [--target 50] [--output FILE]
"""

import argparse
import statistics
import sys

from table import InputError, field, mib, print_table, read_json, read_json_lines

TORCHVISION_FIELDS = ["workers", "epochs", "samples", "samples_per_s", "first_batch_ms",
                      "peak_rss_self_bytes", "peak_worker_rss_bytes", "sampled_peak_rss_sum_bytes",
                      "sampled_peak_pss_sum_bytes", "rss_after_bytes", "dataset_samples"]
CIFAR10_RECORD_BYTES = 1 + 3 * 32 * 32
RECLAIM_FIELDS = ["workers", "epochs", "samples", "samples_per_s", "first_batch_ms",
                  "peak_loader_bytes", "loader_bytes_after", "process_peak_rss_bytes",
                  "dataset_samples", "image_shape", "augmentation", "backend"]


def runs_by_workers(path, names):
    """The records of `path`, checked to have `names`, grouped by their worker count."""
    groups = {}
    for record in read_json_lines(path):
        values = {name: field(record, name, path) for name in names}
        groups.setdefault(values["workers"], []).append(dict(record, **values))
    return groups


def median_and_range(values, formatter):
    """`median (min – max)`, or the one value when there is one."""
    if len(values) == 1:
        return formatter(values[0])
    return f"{formatter(statistics.median(values))} ({formatter(min(values))} – {formatter(max(values))})"


def rate(value):
    return f"{value:,.0f}"


def milliseconds(value):
    return f"{value:,.1f} ms"


def values_of(runs, name):
    return [run[name] for run in runs]


def check_same_settings(torchvision, reclaim, torchvision_path, reclaim_path):
    """Both sides ran the same worker counts, epochs and dataset size."""
    if sorted(torchvision) != sorted(reclaim):
        raise InputError(f"{torchvision_path} has worker counts {sorted(torchvision)}, "
                         f"{reclaim_path} has {sorted(reclaim)}")
    settings = {(run["epochs"], run["dataset_samples"])
                for runs in [*torchvision.values(), *reclaim.values()] for run in runs}
    if len(settings) != 1:
        raise InputError(f"{torchvision_path} and {reclaim_path}: runs of different epochs or "
                         f"dataset sizes: {sorted(settings)}")


def throughput_lines(torchvision, reclaim, target):
    lines = ["| loader workers | torchvision samples/s | Reclaim samples/s | Reclaim ÷ torchvision "
             f"| {target:g}× reached | time to the first batch: torchvision | Reclaim | rounds |",
             "|---:|---:|---:|---:|:---:|---:|---:|---:|"]
    for workers in sorted(torchvision):
        theirs = values_of(torchvision[workers], "samples_per_s")
        ours = values_of(reclaim[workers], "samples_per_s")
        ratio = statistics.median(ours) / statistics.median(theirs)
        lines.append(
            f"| {workers} | {median_and_range(theirs, rate)} | {median_and_range(ours, rate)} "
            f"| {ratio:,.1f}× | {'yes' if ratio >= target else 'no'} "
            f"| {median_and_range(values_of(torchvision[workers], 'first_batch_ms'), milliseconds)} "
            f"| {median_and_range(values_of(reclaim[workers], 'first_batch_ms'), milliseconds)} "
            f"| {len(theirs)} / {len(ours)} |")
    return lines


def memory_lines(torchvision, reclaim):
    def cell(runs, name):
        return median_and_range(values_of(runs, name), mib)

    lines = ["| loader workers | torchvision: process peak RSS | its workers: largest peak RSS "
             "| process + workers, peak RSS sum | process + workers, peak PSS sum "
             "| Reclaim: process peak RSS | Reclaim: the loader's own peak bytes |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for workers in sorted(torchvision):
        theirs, ours = torchvision[workers], reclaim[workers]
        lines.append(f"| {workers} | {cell(theirs, 'peak_rss_self_bytes')} "
                     f"| {cell(theirs, 'peak_worker_rss_bytes') if workers else 'none'} "
                     f"| {cell(theirs, 'sampled_peak_rss_sum_bytes')} "
                     f"| {cell(theirs, 'sampled_peak_pss_sum_bytes')} "
                     f"| {cell(ours, 'process_peak_rss_bytes')} | {cell(ours, 'peak_loader_bytes')} |")
    return lines


def settings_text(torchvision, reclaim, machine):
    first_torchvision = next(iter(torchvision.values()))[0]
    first_reclaim = next(iter(reclaim.values()))[0]
    epochs = first_torchvision["epochs"]
    shape = "×".join(str(side) for side in first_reclaim["image_shape"])
    text = [
        f"Settings, both sides: a generated CIFAR-10-shaped training split of "
        f"{first_torchvision['dataset_samples']:,} records (`cifar_data.py`, the same bytes in both "
        f"layouts), {epochs} epoch{'' if epochs == 1 else 's'} per run, batch 64, shuffled, random crop "
        "32 with padding 4, random horizontal flip, `f32` pixels normalized with CIFAR-10's per-channel "
        f"mean and deviation, images of {shape} as `[64, 3, 32, 32]` tensors. samples/s: all epochs' "
        "samples over their wall seconds, the median over the rounds (range in brackets).",
        "",
        f"torchvision: `CIFAR10` (its MD5 checks skipped for the generated files) with `Compose([RandomCrop("
        f"32, padding=4), RandomHorizontalFlip(), ToTensor(), Normalize(...)])`, `DataLoader(batch_size=64, "
        f"shuffle=True, num_workers=W)`, torch's default {first_torchvision.get('torch_num_threads', '?')} "
        "threads; its workers are processes started at each epoch's `iter` (time to the first batch "
        "includes that). Its memory: `VmHWM` of the process; the workers' largest `VmHWM`; the largest "
        "sum over the process and its workers sampled every 50 ms, of RSS (pages the forked workers share "
        "with the parent counted in each) and of PSS (shared pages shared out).",
        "",
        f"Reclaim: `reclaim bench loader --dataset cifar10 --augment --json --epochs {epochs} --workers W`, "
        f"{first_reclaim['backend']} backend, the record files memory-mapped, augmentation "
        f"{first_reclaim['augmentation'].get('description', '?')} fused into the u8 → f32 conversion; its "
        "workers are threads of the one process. Its memory: `VmHWM` of the process (the mapped files' "
        f"pages, {mib(first_reclaim['dataset_samples'] * CIFAR10_RECORD_BYTES)}, included) and the loader's own peak bytes (pooled batch "
        "buffers, its `MemoryReport`).",
        "",
    ]
    if machine:
        text.append(f"Machine: {machine.get('cpu_model', '?')}, {machine.get('nproc', '?')} CPUs (nproc), "
                    f"{machine.get('memory', '?')} memory; load average at the start: "
                    f"{machine.get('load_average', '?')}.")
    text.append(f"Versions: torch {first_torchvision.get('torch_version', '?')}, torchvision "
                f"{first_torchvision.get('torchvision_version', '?')}, Python "
                f"{first_torchvision.get('python_version', '?')}"
                + (f"; {machine.get('rustc', '?')}; reclaim at {machine.get('reclaim_commit', '?')}."
                   if machine else "."))
    text.append("")
    return text


def build_table(torchvision, reclaim, machine, target):
    text = ["## CIFAR-10 with augmentation: torchvision + DataLoader vs Reclaim's loader", "",
            *throughput_lines(torchvision, reclaim, target), "",
            f"The target: Reclaim at least {target:g}× torchvision's samples per second "
            "(ratio of the medians).", "",
            "### Memory (medians over the rounds)", "",
            *memory_lines(torchvision, reclaim), "",
            *settings_text(torchvision, reclaim, machine)]
    return "\n".join(text)


def main():
    parser = argparse.ArgumentParser(description="torchvision CIFAR10 vs reclaim bench loader: the table.")
    parser.add_argument("--torchvision", required=True, help="JSON lines of torchvision_cifar.py, one per run")
    parser.add_argument("--reclaim", required=True, help="JSON lines of `reclaim bench loader --json`, one per run")
    parser.add_argument("--machine", help="JSON describing the machine and versions (machine.py)")
    parser.add_argument("--target", type=float, default=50.0, help="the ratio to reach (50)")
    parser.add_argument("--output", help="also write the table to this file")
    arguments = parser.parse_args()
    return print_table("cifar_table.py", lambda: table_of(arguments), arguments.output)


def table_of(arguments):
    """The table of the files `arguments` name."""
    torchvision = runs_by_workers(arguments.torchvision, TORCHVISION_FIELDS)
    reclaim = runs_by_workers(arguments.reclaim, RECLAIM_FIELDS)
    check_same_settings(torchvision, reclaim, arguments.torchvision, arguments.reclaim)
    machine = read_json(arguments.machine) if arguments.machine else None
    return build_table(torchvision, reclaim, machine, arguments.target)


if __name__ == "__main__":
    sys.exit(main())
