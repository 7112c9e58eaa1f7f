#!/usr/bin/env bash
# Every GPU check of the project, on a machine with an NVIDIA GPU, written to one folder:
#
#   1. what the machine is (GPU, driver, Vulkan adapters, CPU);
#   2. `reclaim train --backend wgpu` (the PyTorch recipe, then the CNN) on the real adapter, with
#      their release reports (device pool before and after each cleanup, the final cleanup
#      included);
#   3. the wgpu example and `examples/release.rs` on wgpu;
#   4. `reclaim bench train` on every backend built in, and the criterion benches of the
#      training step (`train_step`) and of the loader into wgpu tensors (`loader`);
#   5. the CUDA backend, when its build can run here (see below).
#
# Usage: scripts/gpu-check.sh [--out FOLDER] [--prebuilt FOLDER] [--quick]
#
#   --out FOLDER       where the results go (default: gpu-check-results/)
#   --prebuilt FOLDER  a folder holding `reclaim`, `example-wgpu`, `example-release` and,
#                      optionally, `bench-train_step`, `bench-loader`, built elsewhere with
#                      `--features wgpu` (for a GPU machine without Rust or network: build them
#                      with `scripts/gpu-check.sh --build-only FOLDER` on a machine that has)
#   --build-only FOLDER  build the binaries above (release) into FOLDER and stop
#   --quick            short runs (`--limit 6400 --epochs 1`, `--steps 50`), when GPU time is short
#
# Exit status: 0 all checks ran; 3 no NVIDIA GPU (nothing but the machine's description is
# written); 4 a prebuilt binary is missing; 1 a check failed (the others still ran; see
# summary.txt).
#
# CUDA: burn-cuda's build links LLVM through cubecl-llvm, whose build script
# (tracel-llvm-bundler) downloads a prebuilt LLVM into "$XDG_DATA_HOME/tracel/" (default
# ~/.local/share/tracel/tracel-llvm-23.1.0-4) unless that folder already exists. On a machine
# without network the CUDA check runs only when that folder is there (copy it from a machine
# that built burn-cuda once), and is reported as skipped otherwise.

set -u
out=gpu-check-results
prebuilt=""
build_only=""
quick=0
while [ $# -gt 0 ]; do
    case "$1" in
        --out) out="$2"; shift 2 ;;
        --prebuilt) prebuilt="$2"; shift 2 ;;
        --build-only) build_only="$2"; shift 2 ;;
        --quick) quick=1; shift ;;
        -h|--help) sed -n '2,33p' "$0"; exit 0 ;;
        *) echo "gpu-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
repository=$(cd "$(dirname "$0")/.." && pwd)

build_binaries() {
    local into="$1"
    mkdir -p "$into"
    (cd "$repository" &&
        cargo build --release --features wgpu --bin reclaim --example wgpu --example release &&
        cargo bench --features wgpu --bench train_step --bench loader --no-run) || return 1
    cp "$repository/target/release/reclaim" "$into/reclaim"
    cp "$repository/target/release/examples/wgpu" "$into/example-wgpu"
    cp "$repository/target/release/examples/release" "$into/example-release"
    for bench in train_step loader; do
        local built
        built=$(ls -t "$repository"/target/release/deps/"$bench"-* 2>/dev/null | grep -v '\.d$' | head -1)
        [ -n "$built" ] && cp "$built" "$into/bench-$bench"
    done
    return 0
}

if [ -n "$build_only" ]; then
    build_binaries "$build_only" || { echo "gpu-check: the build failed" >&2; exit 1; }
    echo "gpu-check: binaries in $build_only"
    exit 0
fi

mkdir -p "$out"
summary="$out/summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }

# 1. The machine.
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit: $(git -C "$repository" rev-parse HEAD 2>/dev/null || echo unknown)"
    lscpu 2>/dev/null | grep -E '^(Model name|CPU\(s\)):'
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
    command -v vulkaninfo >/dev/null && vulkaninfo --summary 2>/dev/null | grep -E 'deviceName|driverName|apiVersion'
} > "$out/machine.txt" 2>&1
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
    note "no NVIDIA GPU here (nvidia-smi is missing or finds none): nothing to check; machine.txt describes this machine"
    exit 3
fi
note "GPU: $(nvidia-smi -L | head -1)"

# The binaries: prebuilt, or built here.
bin="$prebuilt"
if [ -z "$bin" ]; then
    bin="$out/bin"
    build_binaries "$bin" > "$out/build.log" 2>&1 || { note "build failed: see build.log"; exit 1; }
fi
for needed in reclaim example-wgpu example-release; do
    [ -x "$bin/$needed" ] || { note "missing prebuilt binary: $bin/$needed"; exit 4; }
done

failed=0
check() {  # check NAME COMMAND...: runs it, output to NAME.log, notes the outcome.
    local name="$1"; shift
    local started status
    started=$(date +%s.%N)
    (cd "$repository" && "$@") > "$out/$name.log" 2>&1
    status=$?
    note "$name: exit $status, $(echo "$(date +%s.%N) - $started" | bc) s"
    [ $status -eq 0 ] || failed=1
}

if [ $quick -eq 1 ]; then
    train_size=(--limit 6400 --epochs 1); steps=50
else
    train_size=(); steps=200
fi
# 2. and 3.
check train-wgpu "$bin/reclaim" train --backend wgpu --quiet --out "$out/run-wgpu" "${train_size[@]}"
[ -f "$out/run-wgpu/release.md" ] && cp "$out/run-wgpu/release.md" "$out/release-wgpu.md"
# The CNN (two conv-ReLU-pool blocks) on MNIST through Burn's autodiff on the adapter.
check train-wgpu-cnn "$bin/reclaim" train --backend wgpu --model cnn --quiet --out "$out/run-wgpu-cnn" "${train_size[@]}"
[ -f "$out/run-wgpu-cnn/release.md" ] && cp "$out/run-wgpu-cnn/release.md" "$out/release-wgpu-cnn.md"
check example-wgpu "$bin/example-wgpu"
check example-release-wgpu "$bin/example-release" wgpu
# 4.
check bench-train "$bin/reclaim" bench train --steps "$steps" --out "$out/bench-train"
for bench in train_step loader; do
    if [ -x "$bin/bench-$bench" ]; then
        check "bench-$bench" "$bin/bench-$bench" --bench --warm-up-time 1 --measurement-time 3 wgpu
    else
        note "bench-$bench: skipped (no prebuilt bench binary)"
    fi
done
# 5. CUDA.
llvm="${XDG_DATA_HOME:-$HOME/.local/share}/tracel/tracel-llvm-23.1.0-4"
if ! command -v cargo >/dev/null; then
    note "cuda: skipped (no cargo here to build burn-cuda)"
elif [ ! -d "$llvm" ]; then
    note "cuda: skipped ($llvm is missing and burn-cuda's build would download it)"
else
    check build-cuda cargo build --release --features cuda --bin reclaim
    check train-cuda "$repository/target/release/reclaim" train --backend cuda --quiet --out "$out/run-cuda" "${train_size[@]}"
fi
exit $failed
