#!/usr/bin/env python3
"""PyTorch's side of the CNN comparison, end to end: torchvision's CIFAR10 with the standard
augmentation through PyTorch's DataLoader, into the same CNN as cnn_step.py, one epoch.

    benches/compare/.venv/bin/python benches/compare/cnn_recipe.py --root ROOT [--workers 2] [--epochs 1]

ROOT holds `cifar-10-batches-py/` (cifar_data.py makes it). The dataset, the transform and the
loader are torchvision_cifar.py's: `CIFAR10(root, train=True, transform=Compose([RandomCrop(32,
padding=4), RandomHorizontalFlip(), ToTensor(), Normalize(mean, std)]))` and
`DataLoader(batch_size=64, shuffle=True, num_workers=W)`; the network, the initialisation and the
optimizer (SGD, lr 0.01, cross-entropy) are cnn_step.py's. The timing covers the epochs alone
(the loader's workers start inside it, as they do in a training script); opening the dataset is
not timed. Prints one JSON line: samples per second, PyTorch's threads and CPU capability.
"""
import argparse
import json
import time

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

from cnn_step import NETWORKS, network
from torchvision_cifar import GeneratedCIFAR10, training_transform


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True, help="the folder holding cifar-10-batches-py/")
    parser.add_argument("--workers", type=int, default=2, help="DataLoader's num_workers (2)")
    parser.add_argument("--epochs", type=int, default=1, help="whole epochs (1)")
    arguments = parser.parse_args()
    if arguments.workers < 0 or arguments.epochs < 1:
        parser.error("--workers must be at least 0 and --epochs at least 1")
    torch.manual_seed(0)
    model = network(**NETWORKS["cifar10"])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    dataset = GeneratedCIFAR10(arguments.root, train=True, download=False,
                               transform=training_transform())
    loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=arguments.workers)
    samples = 0
    started = time.perf_counter()
    for _ in range(arguments.epochs):
        for images, labels in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(images), labels).backward()
            optimizer.step()
            samples += labels.shape[0]
    seconds = time.perf_counter() - started
    print(json.dumps({
        "network": "cifar10",
        "samples_per_second": samples / seconds,
        "samples": samples,
        "seconds": seconds,
        "workers": arguments.workers,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }))


if __name__ == "__main__":
    main()
