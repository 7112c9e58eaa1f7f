#!/usr/bin/env bash
# The same burn-train `Learner` job fed by Burn's pipeline and by Reclaim's loader, one table.
#
#   benches/compare/learner.sh [--rounds N] [--backend ndarray|flex] [--workers N] [--output FILE] [--keep DIR]
#
# Each round runs both jobs, each in its own process, Burn's first. RECLAIM_COMPARE_EPOCHS=N
# overrides the number of epochs (2). Nothing is downloaded: Burn's MnistDataset cache is filled
# from the vendored data/mnist. See benches/compare/README.md.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repository="$(cd "$here/../.." && pwd)"

usage() {
    sed -n '2,8s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

rounds=3
backend=ndarray
workers=2
output=""
keep=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --rounds)  [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || { echo "learner.sh: --rounds needs a positive integer" >&2; exit 2; }
                   rounds="$2"; shift 2 ;;
        --backend) [[ $# -ge 2 && ( "$2" == ndarray || "$2" == flex ) ]] || { echo "learner.sh: --backend is ndarray or flex" >&2; exit 2; }
                   backend="$2"; shift 2 ;;
        --workers) [[ $# -ge 2 && "$2" =~ ^[0-9]+$ ]] || { echo "learner.sh: --workers needs a number" >&2; exit 2; }
                   workers="$2"; shift 2 ;;
        --output)  [[ $# -ge 2 ]] || { echo "learner.sh: --output needs a file" >&2; exit 2; }
                   output="$(realpath -m -- "$2")"; shift 2 ;;
        --keep)    [[ $# -ge 2 ]] || { echo "learner.sh: --keep needs a folder" >&2; exit 2; }
                   keep="$(realpath -m -- "$2")"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "learner.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
done
if [[ -n "$output" && ! -d "$(dirname "$output")" ]]; then
    echo "learner.sh: --output $output: folder $(dirname "$output") does not exist" >&2
    exit 2
fi
epochs="${RECLAIM_COMPARE_EPOCHS:-2}"
if ! [[ "$epochs" =~ ^[1-9][0-9]*$ ]]; then
    echo "learner.sh: RECLAIM_COMPARE_EPOCHS must be a positive integer, not '$epochs'" >&2
    exit 2
fi

say() { echo "==> $*" >&2; }

say "building the Learner job (cargo build --release in benches/compare/learner)"
(cd "$here/learner" && CARGO_TARGET_DIR="$repository/target" cargo build --release >&2)
job="$repository/target/release/reclaim-compare-learner"

work="$(mktemp -d "${TMPDIR:-/tmp}/reclaim-learner-compare-XXXXXX")"
trap 'rm -rf "$work"' EXIT

# Burn's MnistDataset reads $XDG_CACHE_HOME/burn-dataset/mnist/{train,test}/ and downloads
# what is missing: fill it from the vendored files.
python3 "$here/burn_cache.py" "$repository/data/mnist" "$work/cache/burn-dataset/mnist"

python3 "$here/machine.py" "$repository" >"$work/machine.json"

for round in $(seq 1 "$rounds"); do
    for pipeline in burn reclaim; do
        say "round $round of $rounds: $pipeline, $backend, $epochs epoch(s), $workers worker(s)"
        XDG_CACHE_HOME="$work/cache" "$job" --pipeline "$pipeline" --backend "$backend" \
            --epochs "$epochs" --workers "$workers" --data "$repository/data/mnist" \
            --out "$work/run-$pipeline-$round" --record "$work/jobs.jsonl" >&2
    done
done

table_arguments=(--jobs "$work/jobs.jsonl" --machine "$work/machine.json")
if [[ -n "$output" ]]; then
    table_arguments+=(--output "$output")
fi
echo >&2
python3 "$here/learner_table.py" "${table_arguments[@]}"

if [[ -n "$keep" ]]; then
    mkdir -p "$keep"
    cp -r "$work/jobs.jsonl" "$work/machine.json" "$keep/"
    say "raw results kept in $keep"
fi
