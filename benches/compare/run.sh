#!/usr/bin/env bash
# The PyTorch recipe and Burn's recipe next to `reclaim train`, same settings, one table.
#
#   benches/compare/run.sh [--backend flex|ndarray] [--output FILE] [--keep DIR]
#
# Reclaim and Burn's recipe run on the same CPU backend: flex (reclaim train's default) unless
# --backend says otherwise.
# RECLAIM_COMPARE_EPOCHS=N overrides the number of epochs (2) on both sides, for a quick check.
# PyTorch is installed on first use into benches/compare/.venv (from PyPI; never in CI).
# See benches/compare/README.md.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repository="$(cd "$here/../.." && pwd)"
venv="$here/.venv"
torch_requirements=(torch==2.15.0 torchvision==0.29.2)

usage() {
    sed -n '2,11s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

backend=flex
output=""
keep=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --output) [[ $# -ge 2 ]] || { echo "run.sh: --output needs a file" >&2; exit 2; }
                  output="$(realpath -m -- "$2")"; shift 2 ;;
        --backend) [[ $# -ge 2 && ( "$2" == flex || "$2" == ndarray ) ]] || { echo "run.sh: --backend is flex or ndarray" >&2; exit 2; }
                  backend="$2"; shift 2 ;;
        --keep)   [[ $# -ge 2 ]] || { echo "run.sh: --keep needs a folder" >&2; exit 2; }
                  keep="$(realpath -m -- "$2")"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "run.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
done
if [[ -n "$output" && ! -d "$(dirname "$output")" ]]; then
    echo "run.sh: --output $output: folder $(dirname "$output") does not exist" >&2
    exit 2
fi

epochs="${RECLAIM_COMPARE_EPOCHS:-2}"
if ! [[ "$epochs" =~ ^[1-9][0-9]*$ ]]; then
    echo "run.sh: RECLAIM_COMPARE_EPOCHS must be a positive integer, not '$epochs'" >&2
    exit 2
fi

say() { echo "==> $*" >&2; }

# ---- PyTorch, in its own virtual environment. ----
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

# ---- Burn's recipe: burn-train's Learner on Burn's MnistDataset (benches/compare/learner). ----
say "building Burn's recipe (cargo build --release in benches/compare/learner)"
(cd "$here/learner" && CARGO_TARGET_DIR="$repository/target" cargo build --release >&2)
burn_recipe="$repository/target/release/reclaim-compare-learner"

work="$(mktemp -d "${TMPDIR:-/tmp}/reclaim-compare-XXXXXX")"
trap 'rm -rf "$work"' EXIT

timer=()
if [[ -x /usr/bin/time ]]; then
    timer=(/usr/bin/time -v -o)
fi
timed() { # timed OUTPUT_FILE COMMAND...: runs COMMAND under /usr/bin/time -v where it exists
    local time_file="$1"; shift
    if [[ ${#timer[@]} -gt 0 ]]; then "${timer[@]}" "$time_file" "$@"; else "$@"; fi
}

# The machine, before anything runs (the load average says whether the timings can be trusted).
python3 "$here/machine.py" "$repository" >"$work/machine.json"

say "PyTorch recipe, $epochs epoch(s)"
timed "$work/pytorch.time" "$venv/bin/python" "$here/pytorch_recipe.py" --epochs "$epochs" \
    --data "$repository/data/mnist" >"$work/pytorch.json"

say "reclaim train, $epochs epoch(s)"
timed "$work/reclaim.time" "$reclaim" train --quiet --backend "$backend" --epochs "$epochs" \
    --batch-size 64 --lr 0.01 --seed 42 --workers 0 --data "$repository/data/mnist" \
    --out "$work/reclaim-run" >"$work/reclaim.out"
cat "$work/reclaim.out" >&2

# Burn's MnistDataset reads $XDG_CACHE_HOME/burn-dataset/mnist/{train,test}/ and downloads what
# is missing: fill it from the vendored files.
python3 "$here/burn_cache.py" "$repository/data/mnist" "$work/cache/burn-dataset/mnist"
say "Burn's recipe, $epochs epoch(s)"
XDG_CACHE_HOME="$work/cache" timed "$work/burn.time" "$burn_recipe" --pipeline burn \
    --backend "$backend" --epochs "$epochs" --workers 4 --data "$repository/data/mnist" \
    --out "$work/burn-run" --record "$work/burn.jsonl" >&2

table_arguments=(--pytorch "$work/pytorch.json" --reclaim-run "$work/reclaim-run"
                 --burn "$work/burn.jsonl" --machine "$work/machine.json")
if [[ ${#timer[@]} -gt 0 ]]; then
    table_arguments+=(--pytorch-time "$work/pytorch.time" --reclaim-time "$work/reclaim.time"
                      --burn-time "$work/burn.time")
fi
if [[ -n "$output" ]]; then
    table_arguments+=(--output "$output")
fi
echo >&2
python3 "$here/table.py" "${table_arguments[@]}"

if [[ -n "$keep" ]]; then
    mkdir -p "$keep"
    cp -r "$work/." "$keep/"
    say "raw results kept in $keep"
fi
