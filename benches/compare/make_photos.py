#!/usr/bin/env python3
"""Generates an ImageFolder-style folder of JPEG photos, deterministically, for the photo
comparison (photos.sh): torchvision's ImageFolder reads it as it is, `reclaim pack` packs it.

    benches/compare/.venv/bin/python benches/compare/make_photos.py --out FOLDER \
        [--train 20000] [--test 2000] [--seed 42] [--processes 2]

Layout: FOLDER/train/<class>/NNNNN.jpg and FOLDER/test/<class>/NNNNN.jpg, numbered from 00000
through each split, image i in class i mod 10 (so every class holds a tenth of each split).
Each image is its own size, width and height drawn independently and uniformly from 100 to 400
pixels, and shows what its class names: one to three shapes of the class's kind (disc, square,
triangle, ring or stripes) in the class's palette (warm: red to yellow; cool: green to violet)
over a two-colour gradient in a random direction, with Gaussian noise (standard deviation 8 of
255) on every pixel, saved as an RGB JPEG of quality 90 (4:2:0, Pillow's default). A CNN learns
the classes from the shapes and colours; a loader pays for decoding real, varied JPEGs.

Each image comes from its own generator, numpy's PCG64 seeded with (seed, split, index): the
bytes do not depend on the number of processes nor on the order they run in.

FOLDER appears whole or not at all: the images are written into a temporary folder beside it,
then renamed into place. FOLDER must not exist or be an empty folder; anything else is refused
(exit status 1), never deleted or reused.

Needs numpy and Pillow: run it with the comparison's virtual environment, where torchvision
brings both.
"""

import argparse
import colorsys
import math
import multiprocessing
import os
import shutil
import sys
import tempfile
import time

import numpy
from PIL import Image, ImageDraw

SHAPES = ["disc", "square", "triangle", "ring", "stripes"]
PALETTES = {"warm": (0.0, 1 / 6), "cool": (1 / 3, 3 / 4)}  # hue ranges, in turns
CLASSES = [f"{palette}_{shape}" for shape in SHAPES for palette in PALETTES]
SPLITS = ["train", "test"]
SIDE_RANGE = (100, 400)
NOISE_DEVIATION = 8.0
JPEG_QUALITY = 90


class OutputRefused(Exception):
    """FOLDER exists and is not an empty folder, or its parent folder does not exist."""


def non_negative(text):
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be at least 0")
    return value


def positive(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def palette_colour(generator, palette):
    """An RGB colour (0..255 integers) of `palette`'s hues, saturated and bright."""
    low, high = PALETTES[palette]
    hue = generator.uniform(low, high)
    red, green, blue = colorsys.hsv_to_rgb(hue, generator.uniform(0.65, 1.0), generator.uniform(0.6, 1.0))
    return (round(red * 255), round(green * 255), round(blue * 255))


def gradient(generator, width, height):
    """A height x width x 3 float array going from one muted colour to another along a random
    direction."""
    start, end = generator.uniform(40, 200, size=(2, 3))
    angle = generator.uniform(0, 2 * math.pi)
    columns = numpy.arange(width) / max(width - 1, 1)
    rows = numpy.arange(height) / max(height - 1, 1)
    position = numpy.cos(angle) * columns[None, :] + numpy.sin(angle) * rows[:, None]
    position = (position - position.min()) / max(position.max() - position.min(), 1e-9)
    return start + position[:, :, None] * (end - start)


def draw_shape(draw, generator, shape, colour, width, height):
    """One `shape` of `colour`, of a random size and place that keeps it mostly in the image."""
    size = generator.uniform(0.25, 0.6) * min(width, height)
    centre_x = generator.uniform(size / 2, width - size / 2)
    centre_y = generator.uniform(size / 2, height - size / 2)
    box = (centre_x - size / 2, centre_y - size / 2, centre_x + size / 2, centre_y + size / 2)
    if shape == "disc":
        draw.ellipse(box, fill=colour)
    elif shape == "square":
        draw.regular_polygon((centre_x, centre_y, size / 2), 4, rotation=generator.uniform(0, 90), fill=colour)
    elif shape == "triangle":
        draw.regular_polygon((centre_x, centre_y, size / 2), 3, rotation=generator.uniform(0, 120), fill=colour)
    elif shape == "ring":
        draw.ellipse(box, outline=colour, width=max(2, round(size / 8)))
    else:  # stripes: parallel bars across the whole box
        bars = int(generator.integers(3, 6))
        bar_height = size / (2 * bars)
        for bar in range(bars):
            top = box[1] + 2 * bar * bar_height
            draw.rectangle((box[0], top, box[2], top + bar_height), fill=colour)


def photo(seed, split_number, index):
    """Image `index` of split `split_number`, before JPEG encoding, and its label."""
    generator = numpy.random.Generator(numpy.random.PCG64([seed, split_number, index]))
    label = index % len(CLASSES)
    palette, shape = CLASSES[label].split("_")
    width, height = (int(side) for side in generator.integers(SIDE_RANGE[0], SIDE_RANGE[1] + 1, size=2))
    image = Image.fromarray(gradient(generator, width, height).astype(numpy.uint8), "RGB")
    draw = ImageDraw.Draw(image)
    for _ in range(int(generator.integers(1, 4))):
        draw_shape(draw, generator, shape, palette_colour(generator, palette), width, height)
    pixels = numpy.asarray(image, dtype=numpy.float32)
    pixels += generator.normal(0.0, NOISE_DEVIATION, size=pixels.shape).astype(numpy.float32)
    return Image.fromarray(numpy.clip(pixels + 0.5, 0, 255).astype(numpy.uint8), "RGB"), label


def write_photo(task):
    """Writes one image into the staging folder; returns its size in bytes."""
    staging, seed, split_number, index, digits = task
    image, label = photo(seed, split_number, index)
    path = os.path.join(staging, SPLITS[split_number], CLASSES[label], f"{index:0{digits}d}.jpg")
    image.save(path, format="JPEG", quality=JPEG_QUALITY)
    return os.path.getsize(path)


def tasks(staging, seed, counts):
    """One task per image of every split."""
    for split_number, count in enumerate(counts):
        digits = max(5, len(str(count - 1)))
        for index in range(count):
            yield staging, seed, split_number, index, digits


def write_staged(output, counts, seed, processes):
    """Writes every image into a temporary folder beside `output`, then renames it to `output`.
    Returns the JPEG bytes written."""
    staging = tempfile.mkdtemp(dir=os.path.dirname(output), prefix="." + os.path.basename(output) + ".partial-")
    try:
        for split in SPLITS:
            for name in CLASSES:
                os.makedirs(os.path.join(staging, split, name))
        with multiprocessing.Pool(processes) as pool:
            written = sum(pool.imap_unordered(write_photo, tasks(staging, seed, counts), chunksize=64))
        os.chmod(staging, 0o755)
        # rename(2) replaces an empty folder and refuses a non-empty one (checked before).
        os.rename(staging, output)
        return written
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def check_output(output):
    """Refuses an `output` that is anything but a missing or empty folder in an existing one."""
    if not os.path.isdir(os.path.dirname(output)):
        raise OutputRefused(f"{os.path.dirname(output)}: no such folder")
    if os.path.lexists(output) and not os.path.isdir(output):
        raise OutputRefused(f"{output} exists and is not a folder")
    if os.path.isdir(output) and os.listdir(output):
        raise OutputRefused(f"{output} is not empty (it is never reused nor deleted)")


def main():
    parser = argparse.ArgumentParser(description="A generated ImageFolder of JPEG photos, 10 classes.")
    parser.add_argument("--out", required=True, help="the folder to create (missing or empty)")
    parser.add_argument("--train", type=non_negative, default=20_000, help="training images (default 20,000)")
    parser.add_argument("--test", type=non_negative, default=2_000, help="test images (default 2,000)")
    parser.add_argument("--seed", type=int, default=42, help="the generators' seed (default 42)")
    parser.add_argument("--processes", type=positive, default=2, help="processes writing images (default 2)")
    arguments = parser.parse_args()
    if arguments.seed < 0:
        parser.error("--seed must be at least 0")
    output = os.path.abspath(arguments.out)
    started = time.perf_counter()
    try:
        check_output(output)
        written = write_staged(output, (arguments.train, arguments.test), arguments.seed, arguments.processes)
    except OutputRefused as error:
        print(f"make_photos.py: refused: {error}", file=sys.stderr)
        return 1
    except OSError as error:
        print(f"make_photos.py: {error}", file=sys.stderr)
        return 1
    print(f"make_photos.py: {arguments.train:,} training and {arguments.test:,} test JPEGs of "
          f"{len(CLASSES)} classes ({written / 2**20:,.1f} MiB) in {output}, "
          f"{time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
