#!/usr/bin/env bash
# A folder of JPEG photos: torchvision's ImageFolder + PyTorch's DataLoader, then `reclaim pack`
# (once) and `reclaim bench loader --pack`, 0 and 2 workers, one table.
#
#   benches/compare/photos.sh [--folder DIR] [--train N] [--test N] [--epochs E] [--output FILE] [--keep DIR]
#
# DIR (/tmp/reclaim-photos) is used as it is when it exists and is not empty (any folder of
# train/<class>/ and test/<class>/ photos); otherwise make_photos.py generates N training
# (20000) and N test (2000) JPEGs there. E epochs per run (3). --keep DIR keeps the raw outputs
# and the pack. PyTorch is installed on first use into benches/compare/.venv (from PyPI; never
# in CI). See benches/compare/README.md.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repository="$(cd "$here/../.." && pwd)"
venv="$here/.venv"
torch_requirements=(torch==2.15.0 torchvision==0.29.2)
worker_counts=(0 2)
image_size=64

usage() {
    sed -n '2,11s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

count() { # count OPTION VALUE MINIMUM: exits unless VALUE is an integer of at least MINIMUM
    if ! [[ "$2" =~ ^[0-9]+$ ]] || [[ "$2" -lt "$3" ]]; then
        echo "photos.sh: $1 must be an integer of at least $3, not '$2'" >&2
        exit 2
    fi
}

folder=/tmp/reclaim-photos
train=20000
test=2000
epochs=3
output=""
keep=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --folder)  [[ $# -ge 2 ]] || { echo "photos.sh: --folder needs a folder" >&2; exit 2; }
                   folder="$(realpath -m -- "$2")"; shift 2 ;;
        --train)   [[ $# -ge 2 ]] || { echo "photos.sh: --train needs a number" >&2; exit 2; }
                   count --train "$2" 10; train="$2"; shift 2 ;;
        --test)    [[ $# -ge 2 ]] || { echo "photos.sh: --test needs a number" >&2; exit 2; }
                   count --test "$2" 10; test="$2"; shift 2 ;;
        --epochs)  [[ $# -ge 2 ]] || { echo "photos.sh: --epochs needs a number" >&2; exit 2; }
                   count --epochs "$2" 1; epochs="$2"; shift 2 ;;
        --output)  [[ $# -ge 2 ]] || { echo "photos.sh: --output needs a file" >&2; exit 2; }
                   output="$(realpath -m -- "$2")"; shift 2 ;;
        --keep)    [[ $# -ge 2 ]] || { echo "photos.sh: --keep needs a folder" >&2; exit 2; }
                   keep="$(realpath -m -- "$2")"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "photos.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
done
for file in "$output" "$keep" "$folder"; do
    if [[ -n "$file" && ! -d "$(dirname "$file")" ]]; then
        echo "photos.sh: $file: folder $(dirname "$file") does not exist" >&2
        exit 2
    fi
done
# The pack's one-time cost and the loader's whole-process memory come from /usr/bin/time.
if [[ ! -x /usr/bin/time ]]; then
    echo "photos.sh: needs GNU time at /usr/bin/time (Debian, Ubuntu: apt-get install time)" >&2
    exit 2
fi

say() { echo "==> $*" >&2; }

# ---- PyTorch, in its own virtual environment (run.sh's). ----
if [[ ! -x "$venv/bin/python" ]]; then
    say "creating $venv"
    python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c 'import torch, torchvision' 2>/dev/null; then
    say "installing ${torch_requirements[*]} from PyPI into $venv (about 3 GB of wheels, CUDA libraries included)"
    "$venv/bin/python" -m pip install --disable-pip-version-check --progress-bar off "${torch_requirements[@]}" >&2
fi

# ---- Reclaim. ----
say "building reclaim (cargo build --release --bin reclaim)"
(cd "$repository" && cargo build --release --bin reclaim >&2)
reclaim="$repository/target/release/reclaim"

# ---- The photos. ----
if [[ -d "$folder" && -n "$(ls -A "$folder")" ]]; then
    say "using the photos in $folder as they are"
else
    say "generating $train training and $test test JPEGs in $folder"
    "$venv/bin/python" "$here/make_photos.py" --out "$folder" --train "$train" --test "$test"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/reclaim-photos-compare-XXXXXX")"
finish() { # on exit, even a failed one: the raw files to --keep, else removed
    if [[ -n "$keep" ]]; then
        mkdir -p "$keep"
        find "$work" -mindepth 1 -maxdepth 1 -exec mv -t "$keep" -- {} +
        say "raw results and the pack kept in $keep"
    fi
    rm -rf "$work"
}
trap finish EXIT
pack="$work/photos.pack"

# The machine, before anything runs (the load average says whether the timings can be trusted).
python3 "$here/machine.py" "$repository" >"$work/machine.json"

for workers in "${worker_counts[@]}"; do
    say "torchvision ImageFolder, $workers workers, $epochs epoch(s)"
    "$venv/bin/python" "$here/torchvision_folder.py" --folder "$folder" --workers "$workers" \
        --epochs "$epochs" --image-size "$image_size" >>"$work/torchvision.jsonl"
    tail -n 1 "$work/torchvision.jsonl" >&2
done

say "reclaim pack (once)"
/usr/bin/time -v -o "$work/pack.time" "$reclaim" pack "$folder" \
    --image-size "${image_size}x${image_size}" --channels 3 --out "$pack" >"$work/pack.out"
cat "$work/pack.out" >&2

for workers in "${worker_counts[@]}"; do
    say "reclaim bench loader --pack, $workers workers, $epochs epoch(s)"
    /usr/bin/time -v -o "$work/reclaim-workers-$workers.time" "$reclaim" bench loader --pack "$pack" \
        --workers "$workers" --epochs "$epochs" --json >>"$work/reclaim.jsonl"
    tail -n 1 "$work/reclaim.jsonl" >&2
done

table_arguments=("$work")
if [[ -n "$output" ]]; then
    table_arguments+=(--output "$output")
fi
echo >&2
python3 "$here/photos_table.py" "${table_arguments[@]}"
