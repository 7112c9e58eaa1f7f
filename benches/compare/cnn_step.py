#!/usr/bin/env python3
"""PyTorch's side of the CNN comparison: the training step alone, on data already in memory.

    benches/compare/.venv/bin/python benches/compare/cnn_step.py [--network cifar10|cifar10_three_blocks|mnist] [--steps N]

The network is reclaim-model's `ConvNet` written in PyTorch: blocks of Conv2d(3 x 3, padding 1)
-> ReLU -> MaxPool2d(2, 2) (32 then 64 filters, then 128 for the three-block variant), then
Flatten -> Linear(., 128) -> ReLU -> Linear(128, 10). PyTorch's default initialisation is the
one Reclaim copies (uniform in +-1/sqrt(fan_in)). Batch 64, SGD with lr 0.01, cross-entropy; one
batch of uniform random pixels in [0, 1) and labels, drawn once, so the step alone is timed.
After 5 unmeasured steps, N steps (default 100) are timed; prints one JSON line with the
samples per second and PyTorch's threads and CPU capability.
"""
import argparse
import json
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

NETWORKS = {
    "cifar10": dict(channels=3, side=32, filters=(32, 64)),
    "cifar10_three_blocks": dict(channels=3, side=32, filters=(32, 64, 128)),
    "mnist": dict(channels=1, side=28, filters=(32, 64)),
}
BATCH = 64


def network(channels, side, filters):
    layers, previous = [], channels
    for count in filters:
        layers += [nn.Conv2d(previous, count, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2, 2)]
        previous, side = count, side // 2
    head = [nn.Flatten(), nn.Linear(previous * side * side, 128), nn.ReLU(), nn.Linear(128, 10)]
    return nn.Sequential(*layers, *head)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--network", choices=sorted(NETWORKS), default="cifar10")
    parser.add_argument("--steps", type=int, default=100)
    arguments = parser.parse_args()
    shape = NETWORKS[arguments.network]
    torch.manual_seed(0)
    model = network(**shape)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    images = torch.rand(BATCH, shape["channels"], shape["side"], shape["side"])
    labels = torch.randint(0, 10, (BATCH,))

    def step():
        optimizer.zero_grad()
        F.cross_entropy(model(images), labels).backward()
        optimizer.step()

    for _ in range(5):
        step()
    start = time.perf_counter()
    for _ in range(arguments.steps):
        step()
    seconds = time.perf_counter() - start
    print(json.dumps({
        "network": arguments.network,
        "samples_per_second": arguments.steps * BATCH / seconds,
        "step_ms": seconds / arguments.steps * 1e3,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }))


if __name__ == "__main__":
    main()
