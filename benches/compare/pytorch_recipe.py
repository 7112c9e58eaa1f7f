#!/usr/bin/env python3
"""The PyTorch recipe that Reclaim is compared with, as written, with measurements.

torchvision's MNIST reading the repository's vendored data/mnist/*.gz, DataLoader(batch_size=64,
shuffle=True), a 784-128-ReLU-10 MLP, cross-entropy, SGD(lr=0.01), evaluation on the test split
after each epoch (batches of 1000, no_grad), then the usual "release":
`del train_loader; del train_dataset; ...; torch.cuda.empty_cache(); del model`.

Measured at each step: RSS (VmRSS) and peak RSS (VmHWM) from /proc/self/status, seconds per epoch
(training only, and with evaluation), samples per second, test accuracy. Progress goes to stderr;
one JSON object goes to stdout at the end.

torchvision expects ROOT/MNIST/raw/<decompressed IDX files>. The vendored .gz files are decompressed
(streamed, checked against the SHA-256 of docs) into a temporary folder that is removed at the end;
data/mnist itself is only read.
"""

import argparse
import gzip
import hashlib
import json
import os
import sys
import tempfile
import time

import torch
import torchvision
from torch import nn, optim
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

REPOSITORY = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# Decompressed SHA-256 of the vendored files (data/README.md).
MNIST_FILES = {
    "train-images-idx3-ubyte": "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
    "train-labels-idx1-ubyte": "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
    "t10k-images-idx3-ubyte": "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
    "t10k-labels-idx1-ubyte": "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
}


def log(message):
    print(message, file=sys.stderr, flush=True)


def memory():
    """(VmRSS, VmHWM) of this process in bytes."""
    fields = {}
    with open("/proc/self/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                fields[name] = int(value.split()[0]) * 1024
    return fields["VmRSS"], fields["VmHWM"]


def build_torchvision_layout(data_folder, root):
    """Decompresses data_folder/*.gz into root/MNIST/raw/, checking each file's SHA-256."""
    raw = os.path.join(root, "MNIST", "raw")
    os.makedirs(raw, exist_ok=True)
    for name, expected in MNIST_FILES.items():
        source = os.path.join(data_folder, name + ".gz")
        target = os.path.join(raw, name)
        digest = hashlib.sha256()
        try:
            with gzip.open(source, "rb") as compressed, open(target + ".tmp", "wb") as output:
                while chunk := compressed.read(1 << 20):
                    digest.update(chunk)
                    output.write(chunk)
        except (OSError, EOFError) as error:
            raise SystemExit(f"pytorch_recipe.py: {source}: cannot decompress: {error}") from error
        if digest.hexdigest() != expected:
            os.remove(target + ".tmp")
            raise SystemExit(f"pytorch_recipe.py: {source}: decompressed SHA-256 {digest.hexdigest()}, expected {expected}")
        os.replace(target + ".tmp", target)


class SimpleNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.layers = nn.Sequential(nn.Linear(28 * 28, 128), nn.ReLU(), nn.Linear(128, 10))

    def forward(self, images):
        return self.layers(self.flatten(images))


def evaluate(model, loader, criterion):
    model.eval()
    correct = 0
    total = 0
    loss_sum = 0.0
    with torch.no_grad():
        for images, labels in loader:
            outputs = model(images)
            loss_sum += criterion(outputs, labels).item() * labels.size(0)
            correct += (outputs.argmax(dim=1) == labels).sum().item()
            total += labels.size(0)
    model.train()
    return correct / total, loss_sum / total


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--data", default=os.path.join(REPOSITORY, "data", "mnist"),
                        help="folder with the four MNIST .gz files (default: the vendored data/mnist)")
    parser.add_argument("--seed", type=int, default=42)
    arguments = parser.parse_args()
    if arguments.epochs < 1:
        parser.error("--epochs must be at least 1")

    torch.manual_seed(arguments.seed)
    with tempfile.TemporaryDirectory(prefix="reclaim-compare-torchvision-") as root:
        build_torchvision_layout(arguments.data, root)
        result = run_recipe(root, arguments.epochs)
    result["seed"] = arguments.seed
    print(json.dumps(result))


def run_recipe(root, epochs):
    steps = []

    def step(name):
        rss, _ = memory()
        steps.append({"step": name, "rss_bytes": rss})
        log(f"{name}: RSS {rss / 2**20:.1f} MiB")

    step("before loading")

    # ---- The recipe, as written. ----
    transform = transforms.ToTensor()
    train_dataset = datasets.MNIST(root=root, train=True, download=False, transform=transform)
    test_dataset = datasets.MNIST(root=root, train=False, download=False, transform=transform)
    train_loader = DataLoader(train_dataset, batch_size=64, shuffle=True)
    test_loader = DataLoader(test_dataset, batch_size=1000)

    model = SimpleNN()
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model.parameters(), lr=0.01)
    step("datasets loaded, model built")

    epoch_records = []
    job_start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        start = time.perf_counter()
        loss_sum = 0.0
        batches = 0
        samples = 0
        for images, labels in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(images), labels)
            loss.backward()
            optimizer.step()
            loss_sum += loss.item()
            batches += 1
            samples += labels.size(0)
        train_seconds = time.perf_counter() - start
        start = time.perf_counter()
        accuracy, test_loss = evaluate(model, test_loader, criterion)
        evaluation_seconds = time.perf_counter() - start
        rss, peak = memory()
        record = {
            "epoch": epoch,
            "train_loss": loss_sum / batches,
            "test_loss": test_loss,
            "test_accuracy": accuracy,
            "train_seconds": train_seconds,
            "evaluation_seconds": evaluation_seconds,
            "samples_per_s": samples / train_seconds,
            "rss_bytes": rss,
            "peak_rss_bytes": peak,
        }
        epoch_records.append(record)
        log(f"epoch {epoch}: loss {record['train_loss']:.4f}  test accuracy {accuracy * 100:.2f}%  "
            f"{train_seconds:.2f} s + {evaluation_seconds:.2f} s evaluation  "
            f"{record['samples_per_s']:.0f} samples/s")
    job_seconds = time.perf_counter() - job_start
    step("trained")

    # ---- The recipe's "release", as written. ----
    del train_loader
    step("del train_loader")
    del train_dataset
    step("del train_dataset")
    del test_loader
    step("del test_loader")
    del test_dataset
    step("del test_dataset")
    torch.cuda.empty_cache()
    step("torch.cuda.empty_cache()")
    del model
    step("del model")

    rss_after_release, peak = memory()
    train_seconds = [record["train_seconds"] for record in epoch_records]
    return {
        "epochs": epochs,
        "seconds_per_epoch": sum(train_seconds) / len(train_seconds),
        "seconds_per_epoch_with_evaluation": job_seconds / epochs,
        "job_seconds": job_seconds,
        "samples_per_s": sum(r["samples_per_s"] for r in epoch_records) / len(epoch_records),
        "test_accuracy": epoch_records[-1]["test_accuracy"],
        "peak_rss_bytes": peak,
        "rss_after_release_bytes": rss_after_release,
        "release_steps": steps,
        "per_epoch": epoch_records,
        "torch_version": torch.__version__,
        "torchvision_version": torchvision.__version__,
        "torch_num_threads": torch.get_num_threads(),
        "python_version": sys.version.split()[0],
    }


if __name__ == "__main__":
    main()
