#!/usr/bin/env bash
# Runs the unit tests that reach Reclaim's own unsafe code, or parse untrusted bytes, under Miri.
# Needs a nightly toolchain with the miri and rust-src components
# (`rustup component add --toolchain nightly miri rust-src`); not part of CI, whose machine has
# only the pinned stable toolchain. What Miri cannot run (file-backed memory maps, signal
# handlers, `/proc` beyond reading, FFI) is named in docs/reliability.md ("Under Miri").
set -euo pipefail
cd "$(dirname "$0")/.."

# Reading /proc/self/status and the clock needs the host: isolation off. Property tests keep a
# handful of cases (Miri runs them about a thousand times slower).
export MIRIFLAGS="${MIRIFLAGS:--Zmiri-disable-isolation}"
export PROPTEST_CASES="${PROPTEST_CASES:-4}"

# The counting allocator (`GlobalAlloc`), and the /proc readers' parsing.
cargo +nightly miri test -p reclaim-memory --no-default-features --lib
# The IDX header parser and the element codecs, the pack header and manifest checks, the
# fingerprints: everything of reclaim-dataset that does not map a file or install a handler.
cargo +nightly miri test -p reclaim-dataset --features images --lib -- \
    pack_format:: fingerprint:: element:: header::
# The loader's unsafe code: pooled buffers lent to Burn tensors without a copy (and detached),
# the conversion's intrinsics (their portable path: Miri reports no SIMD features), the pool.
cargo +nightly miri test -p reclaim-loader --lib -- convert:: pool:: tensor::
