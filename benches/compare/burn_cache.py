#!/usr/bin/env python3
"""Fills Burn's MnistDataset cache from the vendored, gzipped MNIST, so nothing is downloaded.

    python3 benches/compare/burn_cache.py data/mnist CACHE/burn-dataset/mnist

Burn 0.22.1's `MnistDataset::train()`/`test()` read `$XDG_CACHE_HOME/burn-dataset/mnist/train/`
and `.../test/` and download only the files that are missing there.
"""

import gzip
import os
import shutil
import sys


def main():
    source, target = sys.argv[1], sys.argv[2]
    for split, prefix in (("train", "train"), ("test", "t10k")):
        os.makedirs(os.path.join(target, split), exist_ok=True)
        for kind in ("images-idx3-ubyte", "labels-idx1-ubyte"):
            name = f"{prefix}-{kind}"
            with gzip.open(os.path.join(source, name + ".gz")) as packed, \
                    open(os.path.join(target, split, name), "wb") as unpacked:
                shutil.copyfileobj(packed, unpacked)


if __name__ == "__main__":
    main()
