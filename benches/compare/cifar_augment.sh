#!/usr/bin/env bash
# CIFAR-10's shape with the standard augmentation: torchvision's CIFAR10 + PyTorch's DataLoader
# and `reclaim bench loader --dataset cifar10 --augment`, 0 and 2 workers, one table.
#
#   benches/compare/cifar_augment.sh [--output FILE] [--records N] [--epochs E] [--rounds R] [--keep DIR]
#
# N training records (50000), E epochs per run (1), R rounds per configuration (3). --keep DIR
# generates the data there (reused when it already holds the same data) and keeps the raw JSON.
# PyTorch is installed on first use into benches/compare/.venv (from PyPI; never in CI).
# See benches/compare/README.md.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repository="$(cd "$here/../.." && pwd)"
venv="$here/.venv"
torch_requirements=(torch==2.15.0 torchvision==0.29.2)
worker_counts=(0 2)

usage() {
    sed -n '2,10s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

positive_integer() { # positive_integer OPTION VALUE: exits unless VALUE is a positive integer
    if ! [[ "$2" =~ ^[1-9][0-9]*$ ]]; then
        echo "cifar_augment.sh: $1 must be a positive integer, not '$2'" >&2
        exit 2
    fi
}

output=""
keep=""
records=50000
epochs=1
rounds=3
while [[ $# -gt 0 ]]; do
    case "$1" in
        --output)  [[ $# -ge 2 ]] || { echo "cifar_augment.sh: --output needs a file" >&2; exit 2; }
                   output="$(realpath -m -- "$2")"; shift 2 ;;
        --keep)    [[ $# -ge 2 ]] || { echo "cifar_augment.sh: --keep needs a folder" >&2; exit 2; }
                   keep="$(realpath -m -- "$2")"; shift 2 ;;
        --records) [[ $# -ge 2 ]] || { echo "cifar_augment.sh: --records needs a number" >&2; exit 2; }
                   positive_integer --records "$2"; records="$2"; shift 2 ;;
        --epochs)  [[ $# -ge 2 ]] || { echo "cifar_augment.sh: --epochs needs a number" >&2; exit 2; }
                   positive_integer --epochs "$2"; epochs="$2"; shift 2 ;;
        --rounds)  [[ $# -ge 2 ]] || { echo "cifar_augment.sh: --rounds needs a number" >&2; exit 2; }
                   positive_integer --rounds "$2"; rounds="$2"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "cifar_augment.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
done
if [[ -n "$output" && ! -d "$(dirname "$output")" ]]; then
    echo "cifar_augment.sh: --output $output: folder $(dirname "$output") does not exist" >&2
    exit 2
fi
if [[ "$records" -lt 5 ]]; then
    echo "cifar_augment.sh: --records must be at least 5 (one per training file)" >&2
    exit 2
fi
if [[ -n "$keep" && ! -d "$(dirname "$keep")" ]]; then
    echo "cifar_augment.sh: --keep $keep: folder $(dirname "$keep") does not exist" >&2
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
say "building reclaim (cargo build --release --features ndarray)"
(cd "$repository" && cargo build --release --features ndarray --bin reclaim >&2)
reclaim="$repository/target/release/reclaim"

work="$(mktemp -d "${TMPDIR:-/tmp}/reclaim-cifar-augment-XXXXXX")"
trap 'rm -rf "$work"' EXIT
data="${keep:+$keep/data}"
data="${data:-$work/data}"
if [[ -n "$keep" ]]; then
    mkdir -p "$keep"
fi

say "generating $records CIFAR-10-shaped training records in $data"
"$venv/bin/python" "$here/cifar_data.py" "$data" --records "$records"

# The machine, before anything runs (the load average says whether the timings can be trusted).
python3 "$here/machine.py" "$repository" >"$work/machine.json"

for round in $(seq 1 "$rounds"); do
    for workers in "${worker_counts[@]}"; do
        say "round $round/$rounds, $workers workers: torchvision, $epochs epoch(s)"
        "$venv/bin/python" "$here/torchvision_cifar.py" --root "$data" --workers "$workers" \
            --epochs "$epochs" >>"$work/torchvision.jsonl"
        tail -n 1 "$work/torchvision.jsonl" >&2
        say "round $round/$rounds, $workers workers: reclaim bench loader, $epochs epoch(s)"
        "$reclaim" bench loader --dataset cifar10 --data "$data/cifar-10-batches-bin" --augment \
            --json --workers "$workers" --epochs "$epochs" >>"$work/reclaim.jsonl"
        tail -n 1 "$work/reclaim.jsonl" >&2
    done
done

table_arguments=(--torchvision "$work/torchvision.jsonl" --reclaim "$work/reclaim.jsonl"
                 --machine "$work/machine.json")
if [[ -n "$output" ]]; then
    table_arguments+=(--output "$output")
fi
echo >&2
python3 "$here/cifar_table.py" "${table_arguments[@]}"

if [[ -n "$keep" ]]; then
    cp "$work/machine.json" "$work/torchvision.jsonl" "$work/reclaim.jsonl" "$keep/"
    say "data and raw results kept in $keep"
fi
