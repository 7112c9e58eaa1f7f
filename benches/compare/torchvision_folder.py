#!/usr/bin/env python3
"""torchvision's ImageFolder through PyTorch's DataLoader on a folder of JPEG photos: whole
epochs, timed, with the memory of the process and its worker processes.

    benches/compare/.venv/bin/python benches/compare/torchvision_folder.py --folder FOLDER \
        [--workers W] [--epochs 3] [--batch-size 64] [--image-size 64] [--seed 42]

FOLDER holds train/<class>/*.jpg (make_photos.py makes one). The pipeline is the one ImageFolder
training scripts use, without augmentation: `ImageFolder(FOLDER/train, transform=Compose([
Resize(64), CenterCrop(64), ToTensor(), Normalize(mean, std)]))` and `DataLoader(batch_size=64,
shuffle=True, num_workers=W)`, iterated epoch after epoch. Every file is opened and decoded by
PIL at every epoch (`Resize` scales the shorter side to 64 with antialiasing, `CenterCrop` keeps
the middle 64 x 64). The mean and standard deviation are ImageNet's, as most ImageFolder recipes
use: normalizing costs the same whatever the values. Each batch is consumed by checking its
shape and reading its last pixel.

Prints one JSON object on stdout:
    samples_per_s            all epochs' samples / all epochs' wall seconds
    epoch_seconds, epoch_samples_per_s
                             each epoch, from its iter(loader) (where the workers start) to
                             its last batch
    first_batch_ms           from the first epoch's iter(loader) to its first batch
    dataset_open_ms          ImageFolder(...): listing the class folders and files
    peak_rss_self_bytes      ru_maxrss of this process (its VmHWM)
    peak_worker_rss_bytes    the largest VmHWM of a worker process, sampled (0 without workers)
    sampled_peak_rss_sum_bytes, sampled_peak_pss_sum_bytes
                             this process and its workers sampled together every 50 ms
                             (VmRSS in /proc/PID/status, Pss in /proc/PID/smaps_rollup), the
                             largest sum: RSS counts the pages the forked workers share with
                             this process once per process, PSS shares them out
    rss_before_release_bytes VmRSS after the last epoch (the workers have exited)
    rss_after_release_bytes  VmRSS after `del loader; del dataset; gc.collect()`
and the settings, the mean and deviation, and the versions of torch, torchvision, Pillow and
Python. The memory sampler is torchvision_cifar.py's.
"""

import argparse
import gc
import json
import os
import platform
import resource
import sys
import time

import PIL
import torch
import torchvision
from torch.utils.data import DataLoader
from torchvision import transforms
from torchvision.datasets import ImageFolder

from torchvision_cifar import MemorySampler, status_kibibytes

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STANDARD_DEVIATION = (0.229, 0.224, 0.225)


def folder_transform(image_size):
    return transforms.Compose([
        transforms.Resize(image_size),
        transforms.CenterCrop(image_size),
        transforms.ToTensor(),
        transforms.Normalize(IMAGENET_MEAN, IMAGENET_STANDARD_DEVIATION),
    ])


def run_epoch(loader, batch_size, image_size):
    """(samples, seconds, seconds to the first batch) of one whole epoch."""
    started = time.perf_counter()
    first_batch = None
    samples = 0
    for images, labels in loader:
        if first_batch is None:
            first_batch = time.perf_counter() - started
        count = labels.shape[0]
        assert 0 < count <= batch_size and images.shape == (count, 3, image_size, image_size), images.shape
        assert images.dtype == torch.float32 and labels.shape == (count,), labels.shape
        images[-1, -1, -1, -1].item()
        samples += count
    return samples, time.perf_counter() - started, first_batch


def main():
    parser = argparse.ArgumentParser(description="torchvision ImageFolder + DataLoader on JPEG photos, timed.")
    parser.add_argument("--folder", required=True, help="the folder holding train/<class>/*.jpg")
    parser.add_argument("--workers", type=int, default=0, help="DataLoader's num_workers (default 0)")
    parser.add_argument("--epochs", type=int, default=3, help="whole epochs (default 3)")
    parser.add_argument("--batch-size", type=int, default=64, help="samples per batch (default 64)")
    parser.add_argument("--image-size", type=int, default=64, help="Resize and CenterCrop side (default 64)")
    parser.add_argument("--seed", type=int, default=42, help="torch.manual_seed (default 42)")
    arguments = parser.parse_args()
    if arguments.workers < 0 or min(arguments.epochs, arguments.batch_size, arguments.image_size) < 1:
        parser.error("--workers must be at least 0, --epochs, --batch-size and --image-size at least 1")
    train = os.path.join(arguments.folder, "train")
    if not os.path.isdir(train):
        print(f"torchvision_folder.py: {arguments.folder}: no train/ folder (make_photos.py makes one)",
              file=sys.stderr)
        return 1
    torch.manual_seed(arguments.seed)

    with MemorySampler() as sampler:
        opened = time.perf_counter()
        dataset = ImageFolder(train, transform=folder_transform(arguments.image_size))
        dataset_open = time.perf_counter() - opened
        loader = DataLoader(dataset, batch_size=arguments.batch_size, shuffle=True,
                            num_workers=arguments.workers)
        epochs = [run_epoch(loader, arguments.batch_size, arguments.image_size)
                  for _ in range(arguments.epochs)]
    dataset_samples, classes = len(dataset), len(dataset.classes)
    rss_before_release = status_kibibytes("self", "VmRSS:") * 1024
    del loader
    del dataset
    gc.collect()
    rss_after_release = status_kibibytes("self", "VmRSS:") * 1024
    samples = sum(epoch[0] for epoch in epochs)
    seconds = sum(epoch[1] for epoch in epochs)
    print(json.dumps({
        "side": "torchvision",
        "dataset_samples": dataset_samples,
        "classes": classes,
        "image_size": arguments.image_size,
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
        "rss_before_release_bytes": rss_before_release,
        "rss_after_release_bytes": rss_after_release,
        "mean": IMAGENET_MEAN,
        "standard_deviation": IMAGENET_STANDARD_DEVIATION,
        "torch_version": torch.__version__,
        "torchvision_version": torchvision.__version__,
        "pillow_version": PIL.__version__,
        "torch_num_threads": torch.get_num_threads(),
        "python_version": platform.python_version(),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
