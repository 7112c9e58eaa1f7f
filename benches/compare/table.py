#!/usr/bin/env python3
"""Builds the comparison table from the PyTorch recipe's JSON, a `reclaim train` run folder and,
optionally, Burn's recipe's JSON line (`learner/`'s job with `--pipeline burn`).

Standard library only (run by the system python3, not the PyTorch virtual environment).
Called by run.sh; usable on its own to redraw a table from kept files:

    python3 benches/compare/table.py --pytorch torch.json --reclaim-run RUN_FOLDER \
        [--pytorch-time torch.time] [--reclaim-time reclaim.time] [--burn burn.jsonl]
        [--burn-time burn.time] [--machine machine.json] [--output FILE]
"""

import argparse
import json
import os
import re
import sys
import tempfile

MIB = 1024 * 1024


class InputError(Exception):
    """A missing or malformed input file, with its path."""


def read_json(path):
    try:
        with open(path) as file:
            return json.load(file)
    except OSError as error:
        raise InputError(f"{path}: cannot read: {error.strerror}") from error
    except json.JSONDecodeError as error:
        raise InputError(f"{path}: not JSON: {error}") from error


def read_json_lines(path):
    records = []
    try:
        with open(path) as file:
            for number, line in enumerate(file, start=1):
                if not line.strip():
                    continue
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as error:
                    raise InputError(f"{path}: line {number}: not JSON: {error}") from error
    except OSError as error:
        raise InputError(f"{path}: cannot read: {error.strerror}") from error
    if not records:
        raise InputError(f"{path}: no records")
    return records


def field(record, name, path):
    value = record.get(name)
    if value is None:
        raise InputError(f"{path}: missing field {name!r}")
    return value


def read_gnu_time(path):
    """Wall seconds and maximum RSS (bytes) from `/usr/bin/time -v -o PATH`, or None."""
    if path is None or not os.path.exists(path):
        return None
    with open(path) as file:
        text = file.read()
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", text)
    maximum = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    if not wall or not maximum:
        raise InputError(f"{path}: not the output of /usr/bin/time -v")
    seconds = 0.0
    for part in wall.group(1).split(":"):
        seconds = seconds * 60 + float(part)
    return {"wall_seconds": seconds, "max_rss_bytes": int(maximum.group(1)) * 1024}


def pytorch_side(path):
    result = read_json(path)
    names = ["seconds_per_epoch", "job_seconds", "samples_per_s", "test_accuracy", "peak_rss_bytes",
             "rss_after_release_bytes", "release_steps", "epochs"]
    values = {name: field(result, name, path) for name in names}
    steps = [(step["step"], step["rss_bytes"]) for step in values["release_steps"]]
    trained = dict(steps).get("trained")
    return {
        "epochs": values["epochs"],
        "seconds_per_epoch": values["seconds_per_epoch"],
        "seconds_per_epoch_with_evaluation": values["job_seconds"] / values["epochs"],
        "job_seconds": values["job_seconds"],
        "samples_per_second": values["samples_per_s"],
        "test_accuracy": values["test_accuracy"],
        "rss_before_loading": steps[0][1],
        "rss_trained": trained,
        "peak_rss": values["peak_rss_bytes"],
        "rss_after_release": values["rss_after_release_bytes"],
        "release_steps": steps,
        "raw": result,
    }


def reclaim_side(run_folder):
    metrics_path = os.path.join(run_folder, "metrics.jsonl")
    release_path = os.path.join(run_folder, "release.json")
    epochs = read_json_lines(metrics_path)
    release = read_json(release_path)
    steps = []
    peaks = []
    for step in field(release, "steps", release_path):
        memory = field(step, "memory", release_path)
        steps.append((field(step, "step", release_path), field(memory, "resident_bytes", release_path)))
        peaks.append(field(memory, "peak_resident_bytes", release_path))
    if not steps:
        raise InputError(f"{release_path}: no steps")
    train_seconds = [field(epoch, "train_seconds", metrics_path) for epoch in epochs]
    evaluation_seconds = [field(epoch, "evaluation_seconds", metrics_path) for epoch in epochs]
    samples_per_second = [field(epoch, "samples_per_second", metrics_path) for epoch in epochs]
    job_seconds = sum(train_seconds) + sum(evaluation_seconds)
    config_path = os.path.join(run_folder, "config.json")
    backend = field(read_json(config_path), "backend", config_path)
    return {
        "backend": backend,
        "epochs": len(epochs),
        "seconds_per_epoch": sum(train_seconds) / len(epochs),
        "seconds_per_epoch_with_evaluation": job_seconds / len(epochs),
        "job_seconds": job_seconds,
        "samples_per_second": sum(samples_per_second) / len(epochs),
        "test_accuracy": field(epochs[-1], "test_accuracy", metrics_path),
        "rss_before_loading": steps[0][1],
        "rss_trained": dict(steps).get("trained"),
        "peak_rss": max(peaks),
        "rss_after_release": steps[-1][1],
        "release_steps": steps,
    }


def mib(value):
    return "n/a" if value is None else f"{value / MIB:.1f} MiB"


def seconds(value):
    return "n/a" if value is None else f"{value:.2f} s"


def ratio(pytorch, reclaim):
    if pytorch is None or reclaim is None or reclaim == 0:
        return "n/a"
    return f"{pytorch / reclaim:.2f}×"


def burn_side(path):
    """Burn's recipe: one JSON line of `reclaim-compare-learner --pipeline burn` (learner/)."""
    records = read_json_lines(path)
    result = records[-1]
    names = ["epochs", "epoch_training_seconds_mean", "epoch_seconds_mean", "fit_seconds",
             "accuracy_percent", "baseline_rss_bytes", "peak_rss_bytes", "released_rss_bytes",
             "training_samples"]
    values = {name: field(result, name, path) for name in names}
    return {
        "epochs": values["epochs"],
        "seconds_per_epoch": values["epoch_training_seconds_mean"],
        "seconds_per_epoch_with_evaluation": values["epoch_seconds_mean"],
        "job_seconds": values["fit_seconds"],
        "samples_per_second": values["training_samples"] / values["epoch_training_seconds_mean"],
        "test_accuracy": values["accuracy_percent"] / 100,
        "rss_before_loading": values["baseline_rss_bytes"],
        "rss_trained": None,
        "peak_rss": values["peak_rss_bytes"],
        "rss_after_release": values["released_rss_bytes"],
        "release_steps": [("before loading", values["baseline_rss_bytes"]),
                          ("everything dropped", values["released_rss_bytes"])],
        "raw": result,
    }


def build_table(pytorch, reclaim, pytorch_time, reclaim_time, machine, burn=None, burn_time=None):
    def given_back(side):
        if side["rss_trained"] is None:
            return None
        return side["rss_trained"] - side["rss_after_release"]

    sides = [("PyTorch", pytorch, pytorch_time)]
    if burn is not None:
        sides.append(("Burn's recipe", burn, burn_time))
    sides.append(("Reclaim", reclaim, reclaim_time))
    rows = [
        ("seconds per epoch (training)", seconds, lambda side: side["seconds_per_epoch"]),
        ("seconds per epoch (with evaluation)", seconds,
         lambda side: side["seconds_per_epoch_with_evaluation"]),
        ("job seconds (training + evaluation, all epochs)", seconds, lambda side: side["job_seconds"]),
        ("samples per second (training)", lambda value: "n/a" if value is None else f"{value:,.0f}",
         lambda side: side["samples_per_second"]),
        ("test accuracy (last epoch)", lambda value: f"{value * 100:.2f}%", lambda side: side["test_accuracy"]),
        ("RSS before loading (after imports)", mib, lambda side: side["rss_before_loading"]),
        ("peak RSS (VmHWM)", mib, lambda side: side["peak_rss"]),
        ("RSS after release", mib, lambda side: side["rss_after_release"]),
        ("RSS given back by the release (trained → released)", mib, given_back),
    ]
    if all(time for _, _, time in sides):
        rows.append(("whole process, wall seconds (`/usr/bin/time`)", seconds,
                     lambda side: side["time"]["wall_seconds"]))
        rows.append(("whole process, maximum RSS, exit included (`/usr/bin/time`)", mib,
                     lambda side: side["time"]["max_rss_bytes"]))
    columns = [dict(side, time=time) for _, side, time in sides]
    names = [name for name, _, _ in sides]
    header = (f"| metric ({pytorch['epochs']} epoch{'' if pytorch['epochs'] == 1 else 's'}) | "
              + " | ".join(names) + " | " + " | ".join(f"ratio ({name} ÷ Reclaim)" for name in names[:-1]) + " |")
    lines = [header, "|---|" + "---:|" * (2 * len(names) - 1)]
    for label, formatter, value_of in rows:
        values = [value_of(column) for column in columns]
        cells = [formatter(value) for value in values]
        ratios = [ratio(value, values[-1]) for value in values[:-1]]
        lines.append(f"| {label} | " + " | ".join(cells + ratios) + " |")

    title = "## PyTorch recipe" + (", Burn's recipe" if burn is not None else "") + " vs `reclaim train`"
    text = [title, "", *lines, "",
            "Ratios are the other side ÷ Reclaim: above 1 for seconds and memory, the other side takes more; "
            "above 1 for samples per second, the other side is faster.", ""]
    for name, side, _ in sides:
        text.append(f"{name} release steps (RSS): "
                    + " → ".join(f"{step} {mib(rss)}" for step, rss in side["release_steps"]))
        text.append("")
    raw = pytorch["raw"]
    reclaim_backend = reclaim.get("backend", "?")
    text.append("Settings, all sides: batch 64, shuffle, SGD lr 0.01, seed 42, MLP 784-128-ReLU-10, "
                "test evaluation after each epoch, the vendored data/mnist. PyTorch: pixels scaled to [0, 1], "
                f"DataLoader without workers, {raw.get('torch_num_threads', '?')} torch threads (torch's default), "
                "evaluation in batches of 1000. Reclaim: `reclaim train`, "
                f"{reclaim_backend} backend, no loader workers, pixels scaled to [0, 1].")
    if burn is not None:
        braw = burn["raw"]
        text.append(f"Burn's recipe: burn-train's `Learner` with Burn 0.22.1's `MnistDataset` + "
                    f"`DataLoaderBuilder` + the batcher of Burn's MNIST example (pixels normalized with "
                    f"MNIST's mean and deviation), {braw.get('workers', '?')} loader workers (the example's "
                    f"default), {braw.get('backend', '?')} backend, the same `Mlp`; its job seconds are "
                    "the `Learner`'s fit, its RSS after release is after the datasets, loaders, learner and "
                    "model are dropped (`benches/compare/learner/`).")
    text.append("")
    if machine:
        text.append(f"Machine: {machine.get('cpu_model', '?')}, {machine.get('nproc', '?')} CPUs (nproc), "
                    f"{machine.get('memory', '?')} memory; load average at the start: "
                    f"{machine.get('load_average', '?')}.")
        text.append(f"Versions: torch {raw.get('torch_version', '?')}, torchvision "
                    f"{raw.get('torchvision_version', '?')}, Python {raw.get('python_version', '?')}; "
                    f"{machine.get('rustc', '?')}; reclaim at {machine.get('reclaim_commit', '?')}.")
        text.append("")
    return "\n".join(text)


def write_atomically(path, text):
    folder = os.path.dirname(os.path.abspath(path))
    descriptor, temporary = tempfile.mkstemp(dir=folder, prefix="." + os.path.basename(path) + ".tmp-")
    try:
        with os.fdopen(descriptor, "w") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def print_table(program, make_table, output=None):
    """Prints the table `make_table()` returns and writes it to `output` if given: exit status 0.
    An InputError is printed as one line naming `program`: exit status 1. Shared by the scripts
    of this folder that print one table."""
    try:
        table = make_table()
    except InputError as error:
        print(f"{program}: {error}", file=sys.stderr)
        return 1
    print(table)
    if output:
        write_atomically(output, table)
    return 0


def main():
    parser = argparse.ArgumentParser(description="PyTorch recipe vs reclaim train: the table.")
    parser.add_argument("--pytorch", required=True, help="the JSON printed by pytorch_recipe.py")
    parser.add_argument("--reclaim-run", required=True, help="the run folder of `reclaim train --out`")
    parser.add_argument("--pytorch-time", help="/usr/bin/time -v output of the PyTorch process")
    parser.add_argument("--reclaim-time", help="/usr/bin/time -v output of the Reclaim process")
    parser.add_argument("--burn", help="the JSON line of Burn's recipe (learner/ --pipeline burn)")
    parser.add_argument("--burn-time", help="/usr/bin/time -v output of Burn's recipe's process")
    parser.add_argument("--machine", help="JSON describing the machine and versions (run.sh writes it)")
    parser.add_argument("--output", help="also write the table to this file")
    arguments = parser.parse_args()
    return print_table("table.py", lambda: table_of(arguments), arguments.output)


def table_of(arguments):
    """The table of the files `arguments` name."""
    pytorch = pytorch_side(arguments.pytorch)
    reclaim = reclaim_side(arguments.reclaim_run)
    if pytorch["epochs"] != reclaim["epochs"]:
        raise InputError(f"{arguments.pytorch}: {pytorch['epochs']} epochs, but "
                         f"{arguments.reclaim_run} has {reclaim['epochs']}")
    burn = burn_side(arguments.burn) if arguments.burn else None
    if burn is not None and burn["epochs"] != reclaim["epochs"]:
        raise InputError(f"{arguments.burn}: {burn['epochs']} epochs, but "
                         f"{arguments.reclaim_run} has {reclaim['epochs']}")
    machine = read_json(arguments.machine) if arguments.machine else None
    return build_table(pytorch, reclaim, read_gnu_time(arguments.pytorch_time),
                       read_gnu_time(arguments.reclaim_time), machine,
                       burn, read_gnu_time(arguments.burn_time))


if __name__ == "__main__":
    sys.exit(main())
