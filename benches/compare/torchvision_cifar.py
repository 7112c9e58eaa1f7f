#!/usr/bin/env python3
"""torchvision's CIFAR10 with the standard training augmentation through PyTorch's DataLoader:
whole epochs, timed, with the memory of the process and its worker processes.

    benches/compare/.venv/bin/python benches/compare/torchvision_cifar.py --root ROOT \
        [--workers W] [--epochs E] [--batch-size 64] [--seed 42]

ROOT holds `cifar-10-batches-py/` (cifar_data.py makes it). The pipeline is the one CIFAR-10
training scripts use: `CIFAR10(root, train=True, transform=Compose([RandomCrop(32, padding=4),
RandomHorizontalFlip(), ToTensor(), Normalize(mean, std)]))` and `DataLoader(batch_size=64,
shuffle=True, num_workers=W)`, iterated epoch after epoch (each batch's shapes checked, nothing
else done with it).

Prints one JSON object on stdout:
    samples_per_s            all epochs' samples / all epochs' wall seconds
    epoch_seconds, epoch_samples_per_s
    first_batch_ms           from the first epoch's iter(loader) (workers started there) to its
                             first batch
    dataset_open_ms          CIFAR10(...): unpickling the files
    peak_rss_self_bytes      ru_maxrss of this process (its VmHWM)
    peak_worker_rss_bytes    the largest VmHWM of a worker process, sampled (0 without workers;
                             not RUSAGE_CHILDREN's ru_maxrss: `import torch` runs a child whose
                             maximum is the importing process's size, about 500 MiB)
    sampled_peak_rss_sum_bytes, sampled_peak_pss_sum_bytes
                             this process and its workers sampled together every 50 ms, the
                             largest sum: RSS counts the pages workers share with this process
                             (fork) once per process, PSS shares them out, so the PSS sum is the
                             memory the pipeline really holds
    rss_after_bytes          VmRSS after the last epoch (the workers have exited)
Standard library and torch only.
"""

import argparse
import hashlib
import json
import os
import platform
import resource
import sys
import threading
import time

import torch
import torchvision
from torch.utils.data import DataLoader
from torchvision import transforms
from torchvision.datasets import CIFAR10

MEAN = (0.4914, 0.4822, 0.4465)
STANDARD_DEVIATION = (0.2470, 0.2435, 0.2616)
SAMPLE_INTERVAL_SECONDS = 0.05


class GeneratedCIFAR10(CIFAR10):
    """torchvision's CIFAR10 on generated files. torchvision compares the files with the MD5s of
    the published archive, which generated files cannot match, in two places: `_check_integrity`
    (the data batches), overridden here to return True, and `_load_meta` (batches.meta, against
    `meta["md5"]`), which is given the MD5 of the generated batches.meta. Nothing else is changed:
    the files are read, decoded and transformed by torchvision's own code."""

    def __init__(self, root, **keywords):
        meta_path = os.path.join(root, self.base_folder, CIFAR10.meta["filename"])
        self.meta = dict(CIFAR10.meta, md5=md5_of(meta_path))
        super().__init__(root, **keywords)

    def _check_integrity(self):
        return True


def md5_of(path):
    with open(path, "rb") as file:
        return hashlib.md5(file.read()).hexdigest()


def status_kibibytes(pid, name):
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(name):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def pss_kibibytes(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def child_pids():
    pids = []
    try:
        for thread in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{thread}/children") as children:
                pids.extend(int(pid) for pid in children.read().split())
    except OSError:
        pass
    return pids


class MemorySampler:
    """Samples the RSS and PSS of this process plus its children every 50 ms, keeping the largest
    sums."""

    def __init__(self):
        self.peak_rss_kib = 0
        self.peak_pss_kib = 0
        self.peak_child_hwm_kib = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def sample(self):
        children = child_pids()
        pids = [os.getpid(), *children]
        self.peak_child_hwm_kib = max([self.peak_child_hwm_kib,
                                       *(status_kibibytes(pid, "VmHWM:") for pid in children)])
        self.peak_rss_kib = max(self.peak_rss_kib, sum(status_kibibytes(pid, "VmRSS:") for pid in pids))
        self.peak_pss_kib = max(self.peak_pss_kib, sum(pss_kibibytes(pid) for pid in pids))

    def run(self):
        while not self.stopped.wait(SAMPLE_INTERVAL_SECONDS):
            self.sample()

    def __enter__(self):
        self.sample()
        self.thread.start()
        return self

    def __exit__(self, *exception):
        self.stopped.set()
        self.thread.join()
        self.sample()


def training_transform():
    return transforms.Compose([
        transforms.RandomCrop(32, padding=4),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(MEAN, STANDARD_DEVIATION),
    ])


def run_epoch(loader, batch_size):
    """(samples, seconds, seconds to the first batch) of one whole epoch."""
    started = time.perf_counter()
    first_batch = None
    samples = 0
    for images, labels in loader:
        if first_batch is None:
            first_batch = time.perf_counter() - started
        count = labels.shape[0]
        assert 0 < count <= batch_size and images.shape == (count, 3, 32, 32), images.shape
        assert images.dtype == torch.float32 and labels.shape == (count,), labels.shape
        samples += count
    return samples, time.perf_counter() - started, first_batch


def main():
    parser = argparse.ArgumentParser(description="torchvision CIFAR10 + DataLoader, augmented, timed.")
    parser.add_argument("--root", required=True, help="the folder holding cifar-10-batches-py/")
    parser.add_argument("--workers", type=int, default=0, help="DataLoader's num_workers (default 0)")
    parser.add_argument("--epochs", type=int, default=1, help="whole epochs (default 1)")
    parser.add_argument("--batch-size", type=int, default=64, help="samples per batch (default 64)")
    parser.add_argument("--seed", type=int, default=42, help="torch.manual_seed (default 42)")
    arguments = parser.parse_args()
    if arguments.workers < 0 or arguments.epochs < 1 or arguments.batch_size < 1:
        parser.error("--workers must be at least 0, --epochs and --batch-size at least 1")
    if not os.path.isdir(os.path.join(arguments.root, GeneratedCIFAR10.base_folder)):
        print(f"torchvision_cifar.py: {arguments.root}: no {GeneratedCIFAR10.base_folder}/ "
              "(make it with cifar_data.py)", file=sys.stderr)
        return 1
    torch.manual_seed(arguments.seed)

    with MemorySampler() as sampler:
        opened = time.perf_counter()
        dataset = GeneratedCIFAR10(arguments.root, train=True, download=False,
                                   transform=training_transform())
        dataset_open = time.perf_counter() - opened
        loader = DataLoader(dataset, batch_size=arguments.batch_size, shuffle=True,
                            num_workers=arguments.workers)
        epochs = [run_epoch(loader, arguments.batch_size) for _ in range(arguments.epochs)]
    samples = sum(epoch[0] for epoch in epochs)
    seconds = sum(epoch[1] for epoch in epochs)
    print(json.dumps({
        "side": "torchvision",
        "dataset_samples": len(dataset),
        "workers": arguments.workers,
        "epochs": arguments.epochs,
        "batch_size": arguments.batch_size,
        "seed": arguments.seed,
        "samples": samples,
        "seconds": seconds,
        "samples_per_s": samples / seconds,
        "epoch_seconds": [epoch[1] for epoch in epochs],
        "epoch_samples_per_s": [epoch[0] / epoch[1] for epoch in epochs],
        "first_batch_ms": epochs[0][2] * 1e3,
        "dataset_open_ms": dataset_open * 1e3,
        "peak_rss_self_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "peak_worker_rss_bytes": sampler.peak_child_hwm_kib * 1024,
        "sampled_peak_rss_sum_bytes": sampler.peak_rss_kib * 1024,
        "sampled_peak_pss_sum_bytes": sampler.peak_pss_kib * 1024,
        "rss_after_bytes": status_kibibytes("self", "VmRSS:") * 1024,
        "torch_version": torch.__version__,
        "torchvision_version": torchvision.__version__,
        "torch_num_threads": torch.get_num_threads(),
        "python_version": platform.python_version(),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
