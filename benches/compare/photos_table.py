#!/usr/bin/env python3
"""Builds the photo comparison table from the raw files photos.sh keeps: torchvision's
ImageFolder + DataLoader, `reclaim pack` (its one-time cost) and `reclaim bench loader --pack`.

Standard library only (run by the system python3). Called by photos.sh; usable on its own to
redraw a table from a kept folder:

    python3 benches/compare/photos_table.py RAW [--output FILE]

RAW holds:
    torchvision.jsonl          torchvision_folder.py's JSON lines, one per worker count
    reclaim.jsonl              `reclaim bench loader --pack PACK --json`'s lines, one per worker count
    pack.time                  `/usr/bin/time -v` of `reclaim pack`: its wall seconds and maximum RSS
    reclaim-workers-W.time     `/usr/bin/time -v` of the loader run with W workers (optional)
    photos.pack                the pack (optional: its header gives the records and their shape)
    machine.json               machine.py's description (optional)

Per run, samples/s and seconds per epoch are the median over its epochs; the ratio is Reclaim's
median epoch samples/s ÷ torchvision's with the same number of workers.
"""

import argparse
import os
import statistics
import struct
import sys

from table import InputError, field, mib, print_table, read_gnu_time, read_json, read_json_lines

TORCHVISION_FIELDS = ["workers", "epochs", "samples", "epoch_seconds", "dataset_samples", "classes",
                      "image_size", "sampled_peak_rss_sum_bytes", "sampled_peak_pss_sum_bytes",
                      "peak_rss_self_bytes", "rss_after_release_bytes"]
RECLAIM_FIELDS = ["workers", "epochs", "samples", "epoch_ms", "dataset_samples", "image_shape",
                  "backend", "peak_loader_bytes", "loader_bytes_after"]
# The pack header's fields this table reads (crates/dataset/src/pack_format.rs): magic, format
# version, channels, height, width, training records, test records, classes; little-endian.
PACK_HEADER = struct.Struct("<8sIIIIQQI")
PACK_MAGIC = b"RCLMPACK"
PACK_FORMAT_VERSION = 1
COMPARED_WORKERS = 2


def runs_by_workers(path, names):
    """The records of `path`, checked to have `names`, one per worker count."""
    runs = {}
    for record in read_json_lines(path):
        values = {name: field(record, name, path) for name in names}
        if values["workers"] in runs:
            raise InputError(f"{path}: two runs with {values['workers']} workers (one per worker count)")
        runs[values["workers"]] = dict(record, **values)
    return runs


def torchvision_epochs(run):
    """(samples/s, seconds) of each epoch."""
    per_epoch = run["samples"] / run["epochs"]
    return [(per_epoch / seconds, seconds) for seconds in run["epoch_seconds"]]


def reclaim_epochs(run):
    """(samples/s, seconds) of each epoch."""
    per_epoch = run["samples"] / run["epochs"]
    return [(per_epoch / (milliseconds / 1e3), milliseconds / 1e3) for milliseconds in run["epoch_ms"]]


def medians(epochs):
    """The median samples/s and the median seconds over `epochs`."""
    return statistics.median(rate for rate, _ in epochs), statistics.median(seconds for _, seconds in epochs)


def read_pack_header(path):
    """(channels, height, width, training records, test records, classes, file bytes) of the
    pack at `path`, or None when there is none."""
    if not os.path.exists(path):
        return None
    try:
        with open(path, "rb") as file:
            header = file.read(PACK_HEADER.size)
        size = os.path.getsize(path)
    except OSError as error:
        raise InputError(f"{path}: cannot read: {error.strerror}") from error
    if len(header) < PACK_HEADER.size:
        raise InputError(f"{path}: shorter than a pack header")
    magic, version, channels, height, width, train, test, classes = PACK_HEADER.unpack(header)
    if magic != PACK_MAGIC or version != PACK_FORMAT_VERSION:
        raise InputError(f"{path}: not a pack of format version {PACK_FORMAT_VERSION}")
    return {"channels": channels, "height": height, "width": width, "train": train, "test": test,
            "classes": classes, "bytes": size}


def check_same_settings(torchvision, reclaim, torchvision_path, reclaim_path):
    """Both sides ran the same worker counts, epochs and number of training images."""
    if sorted(torchvision) != sorted(reclaim):
        raise InputError(f"{torchvision_path} has worker counts {sorted(torchvision)}, "
                         f"{reclaim_path} has {sorted(reclaim)}")
    settings = {(run["epochs"], run["dataset_samples"])
                for run in [*torchvision.values(), *reclaim.values()]}
    if len(settings) != 1:
        raise InputError(f"{torchvision_path} and {reclaim_path}: runs of different epochs or "
                         f"training images (epochs, images): {sorted(settings)}")


def rate(value):
    return f"{value:,.0f}"


def seconds_text(value):
    return f"{value:,.2f} s"


def main_rows(torchvision, reclaim, pack_time, pack, loader_times):
    """The table's rows: torchvision per worker count, the pack, Reclaim per worker count."""
    compared = torchvision.get(COMPARED_WORKERS)
    compared_epoch = medians(torchvision_epochs(compared))[1] if compared else None
    rows = []
    for workers, run in sorted(torchvision.items()):
        samples_per_s, seconds = medians(torchvision_epochs(run))
        rows.append([f"torchvision, {workers} workers", rate(samples_per_s), seconds_text(seconds),
                     f"{mib(run['sampled_peak_rss_sum_bytes'])} (PSS {mib(run['sampled_peak_pss_sum_bytes'])})",
                     mib(run["peak_rss_self_bytes"]), mib(run["rss_after_release_bytes"]), "—", "—"])
    packed_per_s = (pack["train"] + pack["test"]) / pack_time["wall_seconds"] if pack else None
    rows.append(["Reclaim pack (one-time)",
                 f"{rate(packed_per_s)} images" if packed_per_s else "n/a",
                 f"{seconds_text(pack_time['wall_seconds'])} once", mib(pack_time["max_rss_bytes"]),
                 mib(pack_time["max_rss_bytes"]), "— (exits)", "—",
                 f"{pack_time['wall_seconds'] / compared_epoch:,.2f}×" if compared_epoch else "n/a"])
    for workers, run in sorted(reclaim.items()):
        samples_per_s, seconds = medians(reclaim_epochs(run))
        theirs = medians(torchvision_epochs(torchvision[workers]))[0]
        timed = loader_times.get(workers)
        rows.append([f"Reclaim loader, {workers} workers", rate(samples_per_s), seconds_text(seconds),
                     mib(timed["max_rss_bytes"]) if timed else "n/a",
                     mib(run.get("process_peak_rss_bytes")),
                     mib(run["rss_after_release_bytes"]) if run.get("rss_after_release_bytes") else "not measured",
                     f"{samples_per_s / theirs:,.1f}×", "—"])
    return rows


def epoch_lines(torchvision, reclaim):
    """Each run's samples/s epoch by epoch."""
    lines = []
    for side, runs, epochs_of in (("torchvision", torchvision, torchvision_epochs),
                                  ("Reclaim loader", reclaim, reclaim_epochs)):
        for workers, run in sorted(runs.items()):
            rates = ", ".join(rate(samples_per_s) for samples_per_s, _ in epochs_of(run))
            lines.append(f"- {side}, {workers} workers: {rates}")
    return lines


def break_even_text(torchvision, reclaim, pack_time):
    """After how many epochs Reclaim, pack included, is ahead of torchvision (2 workers each)."""
    if COMPARED_WORKERS not in torchvision or COMPARED_WORKERS not in reclaim:
        return []
    theirs = medians(torchvision_epochs(torchvision[COMPARED_WORKERS]))[1]
    ours = medians(reclaim_epochs(reclaim[COMPARED_WORKERS]))[1]
    pack_seconds = pack_time["wall_seconds"]
    if ours >= theirs:
        return [f"With {COMPARED_WORKERS} workers Reclaim's epoch ({seconds_text(ours)}) is not shorter than "
                f"torchvision's ({seconds_text(theirs)}): the pack never pays for itself.", ""]
    return [f"Pack included, Reclaim is ahead of torchvision ({COMPARED_WORKERS} workers each) after "
            f"{pack_seconds / (theirs - ours):,.2f} epochs: the pack's {seconds_text(pack_seconds)} over "
            f"the {seconds_text(theirs - ours)} each epoch saves.", ""]


def settings_text(torchvision, reclaim, pack, machine):
    first_torchvision = next(iter(torchvision.values()))
    first_reclaim = next(iter(reclaim.values()))
    epochs = first_torchvision["epochs"]
    size = first_torchvision["image_size"]
    shape = "×".join(str(side) for side in first_reclaim["image_shape"])
    pack_text = (f" The pack: {pack['train']:,} training and {pack['test']:,} test records of "
                 f"{pack['channels']}×{pack['height']}×{pack['width']}, {pack['classes']} classes, "
                 f"{mib(pack['bytes'])} on disk." if pack else "")
    text = [
        f"Settings, both sides: the training split of an ImageFolder of "
        f"{first_torchvision['dataset_samples']:,} JPEGs in {first_torchvision['classes']} classes, "
        f"{epochs} epoch{'' if epochs == 1 else 's'} per run, batch 64, shuffled, `f32` tensors of "
        f"`[64, 3, {size}, {size}]`, no augmentation. Peak RSS, whole tree: torchvision's process and "
        "its worker processes sampled together every 50 ms, the largest sum of RSS (pages the forked "
        "workers share with the parent counted in each) and of PSS (shared pages shared out); Reclaim's "
        "one process (its workers are threads), `/usr/bin/time`'s maximum RSS.",
        "",
        f"torchvision: `ImageFolder(train, transform=Compose([Resize({size}), CenterCrop({size}), "
        "ToTensor(), Normalize(ImageNet's mean and deviation)]))`, `DataLoader(batch_size=64, shuffle=True, "
        f"num_workers=W)`, torch's default {first_torchvision.get('torch_num_threads', '?')} threads: every "
        "JPEG decoded and resized by PIL at every epoch; workers are processes forked at each epoch. Main "
        "process: its `ru_maxrss`. After release: `VmRSS` after `del loader; del dataset; gc.collect()`.",
        "",
        f"Reclaim: `reclaim pack FOLDER --image-size {size}x{size} --channels 3` once (its row: wall seconds "
        "and maximum RSS under `/usr/bin/time`, the pack ÷ one torchvision epoch with "
        f"{COMPARED_WORKERS} workers), then `reclaim bench loader --pack PACK --json --epochs {epochs} "
        f"--workers W`, {first_reclaim['backend']} backend, records of {shape} memory-mapped, pixels "
        "normalized by the pack's per-channel statistics. Main process: its `VmHWM` at the end of the run "
        "(the mapped pack's pages included); the loader's own peak: "
        + ", ".join(f"{mib(run['peak_loader_bytes'])} with {workers} workers"
                    for workers, run in sorted(reclaim.items()))
        + ". After release: `VmRSS` once the loader and the pack are dropped (the map gone); its loader holds "
        + ", ".join(f"{run['loader_bytes_after']:,} B with {workers} workers"
                    for workers, run in sorted(reclaim.items()))
        + f" after the run.{pack_text}",
        "",
    ]
    if machine:
        text.append(f"Machine: {machine.get('cpu_model', '?')}, {machine.get('nproc', '?')} CPUs (nproc), "
                    f"{machine.get('memory', '?')} memory; load average at the start: "
                    f"{machine.get('load_average', '?')}.")
    text.append(f"Versions: torch {first_torchvision.get('torch_version', '?')}, torchvision "
                f"{first_torchvision.get('torchvision_version', '?')}, Pillow "
                f"{first_torchvision.get('pillow_version', '?')}, Python "
                f"{first_torchvision.get('python_version', '?')}"
                + (f"; {machine.get('rustc', '?')}; reclaim at {machine.get('reclaim_commit', '?')}."
                   if machine else "."))
    text.append("")
    return text


def build_table(torchvision, reclaim, pack_time, pack, loader_times, machine):
    header = ["run", "samples/s (median epoch)", "seconds per epoch (median)", "peak RSS, whole tree",
              "peak RSS, main process", "RSS after release", "Reclaim ÷ torchvision samples/s",
              f"pack ÷ one torchvision epoch ({COMPARED_WORKERS} workers)"]
    lines = ["## Photos: torchvision's ImageFolder + DataLoader vs Reclaim's pack and loader", "",
             "| " + " | ".join(header) + " |", "|:---" + "|---:" * (len(header) - 1) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in main_rows(torchvision, reclaim, pack_time, pack, loader_times)]
    text = [*lines, "", *break_even_text(torchvision, reclaim, pack_time),
            "Samples/s of each epoch:", "", *epoch_lines(torchvision, reclaim), "",
            *settings_text(torchvision, reclaim, pack, machine)]
    return "\n".join(text)


def table_of(raw):
    """The table of the files in the folder `raw`."""
    torchvision_path = os.path.join(raw, "torchvision.jsonl")
    reclaim_path = os.path.join(raw, "reclaim.jsonl")
    pack_time_path = os.path.join(raw, "pack.time")
    torchvision = runs_by_workers(torchvision_path, TORCHVISION_FIELDS)
    reclaim = runs_by_workers(reclaim_path, RECLAIM_FIELDS)
    check_same_settings(torchvision, reclaim, torchvision_path, reclaim_path)
    pack_time = read_gnu_time(pack_time_path)
    if pack_time is None:
        raise InputError(f"{pack_time_path}: no such file")
    loader_times = {workers: read_gnu_time(os.path.join(raw, f"reclaim-workers-{workers}.time"))
                    for workers in reclaim}
    machine_path = os.path.join(raw, "machine.json")
    machine = read_json(machine_path) if os.path.exists(machine_path) else None
    pack = read_pack_header(os.path.join(raw, "photos.pack"))
    return build_table(torchvision, reclaim, pack_time, pack, loader_times, machine)


def main():
    parser = argparse.ArgumentParser(description="torchvision ImageFolder vs reclaim pack + bench loader: the table.")
    parser.add_argument("raw", help="the folder of raw files photos.sh keeps (see the module's documentation)")
    parser.add_argument("--output", help="also write the table to this file")
    arguments = parser.parse_args()
    return print_table("photos_table.py", lambda: table_of(arguments.raw), arguments.output)


if __name__ == "__main__":
    sys.exit(main())
