#!/usr/bin/env bash
# The convolutional network's training step, Reclaim (Flex) against PyTorch, side by side:
# PyTorch's step on data already in memory (cnn_step.py), Reclaim's bare step (the criterion
# bench `conv_ops`, rows cnn_step/flex/*) and `reclaim train --model cnn` for one epoch on
# generated CIFAR-10 records; then the end-to-end recipe with augmentation, torchvision's CIFAR10
# + RandomCrop + RandomHorizontalFlip + Normalize through DataLoader (2 workers) into the same
# CNN (cnn_recipe.py) against `reclaim train --model cnn --augment --standardize`. R rounds
# interleaved, then two tables of medians and ranges.
#
#   benches/compare/cnn.sh [--rounds R] [--records N] [--output FILE]
#
# R rounds (5), N generated training records (10000). Needs benches/compare/.venv with torch
# (see benches/compare/README.md); builds reclaim and the bench with the default features.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repository="$(cd "$here/../.." && pwd)"
python="$here/.venv/bin/python"
rounds=5
records=10000
output=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --rounds)  rounds="$2"; shift 2 ;;
        --records) records="$2"; shift 2 ;;
        --output)  output="$(realpath -m -- "$2")"; shift 2 ;;
        -h|--help) sed -n '2,10s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) echo "cnn.sh: unknown argument: $1" >&2; exit 2 ;;
    esac
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "cnn.sh: --rounds must be a positive integer" >&2; exit 2; }
[[ "$records" =~ ^[1-9][0-9]*$ ]] || { echo "cnn.sh: --records must be a positive integer" >&2; exit 2; }
[[ -x "$python" ]] || { echo "cnn.sh: $python missing (benches/compare/README.md)" >&2; exit 2; }

work="$(mktemp -d "${TMPDIR:-/tmp}/reclaim-cnn-XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$repository"
cargo build --release --bin reclaim >&2
bench="$(cargo bench --profile release --bench conv_ops --no-run --message-format=json 2>/dev/null \
    | "$python" -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "conv_ops" and m.get("executable"):
        print(m["executable"])')"
"$python" "$here/cifar_data.py" "$work/data" --records "$records" >&2
lscpu | grep -E 'Model name|^CPU\(s\)' >&2
uptime >&2

for round in $(seq 1 "$rounds"); do
    echo "round $round/$rounds" >&2
    for network in cifar10 cifar10_three_blocks mnist; do
        "$python" "$here/cnn_step.py" --network "$network" >>"$work/pytorch.jsonl"
    done
    "$bench" --bench 'cnn_step/flex' 2>/dev/null | "$python" -c '
import json, re, sys
name = None
for line in sys.stdin:
    match = re.match(r"^conv_ops/cnn_step/flex/(\S+)", line)
    if match:
        name = match.group(1)
    match = re.search(r"time:\s+\[\S+ \S+ (\S+) (\S+)", line)
    if match and name:
        milliseconds = float(match.group(1)) * {"ms": 1.0, "s": 1000.0, "µs": 0.001}[match.group(2)]
        print(json.dumps({"network": name, "samples_per_second": 64 / milliseconds * 1000}))
        name = None' >>"$work/reclaim_step.jsonl"
    (cd "$work" && "$repository/target/release/reclaim" train --dataset cifar10 --data "$work/data" \
        --model cnn --epochs 1 --quiet --out "$work/run-$round" >/dev/null)
    tail -n 1 "$work/run-$round/metrics.jsonl" >>"$work/reclaim_train.jsonl"
    (cd "$here" && "$python" cnn_recipe.py --root "$work/data" --workers 2) >>"$work/pytorch_recipe.jsonl"
    (cd "$work" && "$repository/target/release/reclaim" train --dataset cifar10 --data "$work/data" \
        --model cnn --augment --standardize --epochs 1 --quiet --out "$work/augmented-$round" >/dev/null)
    tail -n 1 "$work/augmented-$round/metrics.jsonl" >>"$work/reclaim_recipe.jsonl"
done

"$python" - "$work" "$output" <<'PY'
import json, statistics, sys
work, output = sys.argv[1], sys.argv[2]
def load(name):
    rows = {}
    for line in open(f"{work}/{name}"):
        row = json.loads(line)
        rows.setdefault(row.get("network", "cifar10"), []).append(row["samples_per_second"])
    return rows
pytorch, step, train = load("pytorch.jsonl"), load("reclaim_step.jsonl"), load("reclaim_train.jsonl")
def cell(values):
    return f"{statistics.median(values):,.0f} ({min(values):,.0f}-{max(values):,.0f})"
lines = ["| network | PyTorch step | Reclaim step (Flex) | ratio | `reclaim train` (Flex) | ratio |",
         "|---|---:|---:|---:|---:|---:|"]
for network in ("cifar10", "cifar10_three_blocks", "mnist"):
    torch_median = statistics.median(pytorch[network])
    step_values = step.get(network, [])
    train_values = train.get(network, [])
    step_cell = cell(step_values) if step_values else "-"
    step_ratio = f"{statistics.median(step_values) / torch_median:.2f}x" if step_values else "-"
    train_cell = cell(train_values) if train_values else "-"
    train_ratio = f"{statistics.median(train_values) / torch_median:.2f}x" if train_values else "-"
    lines.append(f"| {network} | {cell(pytorch[network])} | {step_cell} | {step_ratio} | {train_cell} | {train_ratio} |")
table = "\n".join(lines) + "\n\nSamples per second, median (range) of the rounds; ratio: Reclaim / PyTorch.\n"
recipe_torch, recipe_reclaim = load("pytorch_recipe.jsonl")["cifar10"], load("reclaim_recipe.jsonl")["cifar10"]
ratio = statistics.median(recipe_reclaim) / statistics.median(recipe_torch)
table += ("\n| end to end, augmented (cifar10) | PyTorch + torchvision, DataLoader 2 workers | `reclaim train --augment --standardize` | ratio |\n"
          "|---|---:|---:|---:|\n"
          f"| one epoch | {cell(recipe_torch)} | {cell(recipe_reclaim)} | {ratio:.2f}x |\n")
print(table)
if output:
    open(output, "w").write(table)
PY
