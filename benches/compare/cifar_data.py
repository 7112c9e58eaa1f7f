#!/usr/bin/env python3
"""Generates a CIFAR-10-shaped dataset, deterministically, in the two layouts the CIFAR
comparison reads, from the same bytes:

    OUTPUT/cifar-10-batches-bin/data_batch_1.bin .. data_batch_5.bin, test_batch.bin
        CIFAR-10's binary version (what Reclaim reads): records of 1 label byte (0..9) then
        3072 pixel bytes, the red, green and blue planes of 32 x 32, each row-major.
    OUTPUT/cifar-10-batches-py/data_batch_1 .. data_batch_5, test_batch, batches.meta
        CIFAR-10's Python version (what torchvision's CIFAR10 reads): pickled dicts with
        'data' (uint8 array, N x 3072, the same planes), 'labels' (list of int), 'batch_label'
        and 'filenames'; batches.meta holds 'label_names', 'num_cases_per_batch', 'num_vis'.
    OUTPUT/manifest.json
        The parameters and each file's size and SHA-256.

    benches/compare/.venv/bin/python benches/compare/cifar_data.py OUTPUT [--records N] [--seed S]

Pixels and labels are uniform random bytes from numpy's PCG64 seeded with S (default 42): the
loaders' cost does not depend on what the images show. N training records (default 50,000, at
least 5) are shared out over the five training files as evenly as possible (10,000 each by
default); the test file has as many records as the first training file.

OUTPUT appears whole or not at all: everything is written into a temporary folder beside it,
then renamed into place. OUTPUT must not exist, or be an empty folder, or be exactly a previous
output with the same parameters (every file of its manifest present with its size and SHA-256,
nothing else there): then it is kept as it is and nothing is written. Anything else is refused
(exit status 1), never deleted.

Needs numpy (the pickles hold numpy arrays): run it with the comparison's virtual environment,
where torchvision brings numpy.
"""

import argparse
import hashlib
import json
import os
import pickle
import shutil
import sys
import tempfile

import numpy

FORMAT = "reclaim-cifar-compare-data/1"
IMAGE_BYTES = 3 * 32 * 32
TRAINING_FILES = 5
LABEL_NAMES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
               "truck"]
BINARY_FOLDER = "cifar-10-batches-bin"
PICKLE_FOLDER = "cifar-10-batches-py"
MANIFEST = "manifest.json"


class OutputRefused(Exception):
    """OUTPUT holds something that is not this generator's output with these parameters."""


def positive_records(text):
    value = int(text)
    if value < TRAINING_FILES:
        raise argparse.ArgumentTypeError(f"must be at least {TRAINING_FILES} (one per training file)")
    return value


def file_sizes(records):
    """The records of each training file: `records` shared out over five, the first ones larger."""
    base, extra = divmod(records, TRAINING_FILES)
    return [base + (1 if number < extra else 0) for number in range(TRAINING_FILES)]


def generate(records, test_records, seed):
    """(pixels, labels) of the training records then the test records, as numpy uint8 arrays."""
    generator = numpy.random.default_rng(seed)
    total = records + test_records
    pixels = generator.integers(0, 256, size=(total, IMAGE_BYTES), dtype=numpy.uint8)
    labels = generator.integers(0, len(LABEL_NAMES), size=total, dtype=numpy.uint8)
    return pixels, labels


def binary_records(pixels, labels):
    records = numpy.empty((len(labels), 1 + IMAGE_BYTES), dtype=numpy.uint8)
    records[:, 0] = labels
    records[:, 1:] = pixels
    return records.tobytes()


def pickled_batch(pixels, labels, batch_label, first_index):
    entry = {
        "batch_label": batch_label,
        "labels": [int(label) for label in labels],
        "data": numpy.ascontiguousarray(pixels),
        "filenames": [f"generated_{first_index + offset:06d}.png" for offset in range(len(labels))],
    }
    return pickle.dumps(entry, protocol=4)


def pickled_meta(records_per_file):
    return pickle.dumps({"num_cases_per_batch": records_per_file, "label_names": LABEL_NAMES,
                         "num_vis": IMAGE_BYTES}, protocol=4)


def output_files(records, test_records, seed):
    """Every file of the output as (relative path, bytes), in writing order, one at a time."""
    pixels, labels = generate(records, test_records, seed)
    sizes = file_sizes(records)
    parts = []
    start = 0
    for number, size in enumerate(sizes, start=1):
        parts.append((f"data_batch_{number}", f"training batch {number} of 5", start, start + size))
        start += size
    parts.append(("test_batch", "testing batch 1 of 1", start, start + test_records))
    for name, batch_label, begin, end in parts:
        yield f"{BINARY_FOLDER}/{name}.bin", binary_records(pixels[begin:end], labels[begin:end])
        yield f"{PICKLE_FOLDER}/{name}", pickled_batch(pixels[begin:end], labels[begin:end],
                                                       batch_label, begin)
    yield f"{PICKLE_FOLDER}/batches.meta", pickled_meta(sizes[0])


def parameters(records, test_records, seed):
    return {"format": FORMAT, "records": records, "test_records": test_records, "seed": seed,
            "numpy": numpy.__version__}


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def is_previous_output(output, expected_parameters):
    """Whether `output` is exactly this generator's output with `expected_parameters`; raises
    OutputRefused naming what differs when it is a non-empty folder that is not."""
    manifest_path = os.path.join(output, MANIFEST)
    try:
        with open(manifest_path) as file:
            manifest = json.load(file)
    except (OSError, json.JSONDecodeError) as error:
        raise OutputRefused(f"{output} is not empty and has no readable {MANIFEST} "
                            f"({error}): not a previous output of cifar_data.py") from error
    if manifest.get("parameters") != expected_parameters:
        raise OutputRefused(f"{manifest_path}: made with {manifest.get('parameters')}, "
                            f"not {expected_parameters}")
    listed = manifest.get("files", {})
    expected_entries = {MANIFEST, BINARY_FOLDER, PICKLE_FOLDER}
    present = set(os.listdir(output))
    for folder in (BINARY_FOLDER, PICKLE_FOLDER):
        if os.path.isdir(os.path.join(output, folder)):
            present |= {f"{folder}/{name}" for name in os.listdir(os.path.join(output, folder))}
    expected_entries |= set(listed)
    if present != expected_entries:
        raise OutputRefused(f"{output}: entries differ from its manifest "
                            f"(unexpected: {sorted(present - expected_entries)}, "
                            f"missing: {sorted(expected_entries - present)})")
    for relative, described in listed.items():
        path = os.path.join(output, relative)
        if os.path.getsize(path) != described["bytes"] or sha256_of(path) != described["sha256"]:
            raise OutputRefused(f"{path}: size or SHA-256 differs from {manifest_path}")
    return True


def write_staged(output, files, expected_parameters):
    """Writes everything into a temporary folder beside `output`, then renames it to `output`."""
    parent = os.path.dirname(output)
    staging = tempfile.mkdtemp(dir=parent, prefix="." + os.path.basename(output) + ".partial-")
    try:
        os.makedirs(os.path.join(staging, BINARY_FOLDER))
        os.makedirs(os.path.join(staging, PICKLE_FOLDER))
        described = {}
        for relative, content in files:
            with open(os.path.join(staging, relative), "wb") as file:
                file.write(content)
                file.flush()
                os.fsync(file.fileno())
            described[relative] = {"bytes": len(content), "sha256": hashlib.sha256(content).hexdigest()}
        with open(os.path.join(staging, MANIFEST), "w") as file:
            json.dump({"parameters": expected_parameters, "files": described}, file, indent=1)
            file.write("\n")
        os.chmod(staging, 0o755)
        # rename(2) replaces an empty folder and refuses a non-empty one (checked before).
        os.rename(staging, output)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def main():
    parser = argparse.ArgumentParser(description="A CIFAR-10-shaped dataset in both layouts.")
    parser.add_argument("output", help="the folder to create (see the module's documentation)")
    parser.add_argument("--records", type=positive_records, default=50_000,
                        help="training records, at least 5 (default 50,000)")
    parser.add_argument("--seed", type=int, default=42, help="numpy's seed (default 42)")
    arguments = parser.parse_args()
    output = os.path.abspath(arguments.output)
    test_records = file_sizes(arguments.records)[0]
    expected = parameters(arguments.records, test_records, arguments.seed)
    try:
        if not os.path.isdir(os.path.dirname(output)):
            raise OutputRefused(f"{os.path.dirname(output)}: no such folder")
        if os.path.lexists(output) and not os.path.isdir(output):
            raise OutputRefused(f"{output} exists and is not a folder")
        if os.path.isdir(output) and os.listdir(output):
            is_previous_output(output, expected)
            print(f"cifar_data.py: {output} already holds this data; kept as it is", file=sys.stderr)
            return 0
        write_staged(output, output_files(arguments.records, test_records, arguments.seed), expected)
    except OutputRefused as error:
        print(f"cifar_data.py: refused: {error}", file=sys.stderr)
        return 1
    except OSError as error:
        print(f"cifar_data.py: {error}", file=sys.stderr)
        return 1
    print(f"cifar_data.py: {arguments.records} training and {test_records} test records in {output}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
