#!/usr/bin/env bash
# The GPU checks of the performance issue (item 5): the backend conformance suite, the
# inference and SAC-update benches and a SAC training run on `tch:cuda:0`, with the PyTorch
# references on the same GPU, for a CUDA machine that cannot build Rust itself.
#
#   scripts/gpu-check.sh pack DIR   # here: build with `--features tch`, strip, gzip into DIR
#   scripts/gpu-check.sh run DIR OUT
#                                   # there: run them against that machine's libtorch
#
# The binaries must be built against the libtorch version of the machine they run on:
# libtorch's headers inline the tensor's layout into the caller, so a binary built against
# 2.9.0 loads against 2.11.0 (every symbol is there) and then fails every tensor access
# ("Cannot access data pointer of Tensor that doesn't have storage"). `pack` builds against
# whatever torch-sys finds (scripts/setup-libtorch.sh's 2.9.0 by default); for another
# version install that torch into a venv and build with, e.g.,
#   PATH=/path/to/venv/bin:$PATH VIRTUAL_ENV=/path/to/venv LIBTORCH_USE_PYTORCH=1 \
#   LIBTORCH_BYPASS_VERSION_CHECK=1 CARGO_TARGET_DIR=target-torch-2.11 scripts/gpu-check.sh pack DIR
# `pack` records the version in DIR/torch-version; `run` refuses another one.
#
# `run` takes libtorch from the machine's `python3 -c "import torch"` (its `lib/` goes first
# in LD_LIBRARY_PATH, ahead of the rpath the binaries were built with) and writes one log per
# part into OUT (seven files), then prints a summary; each part has its own time limit, so
# one that hangs leaves the others their time (about 9 minutes in all at most).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

pack() {
    local dir="$1"
    mkdir -p "$dir"
    cd "$ROOT" || exit 1
    local log
    log="$(mktemp)"
    set -e
    cargo test --release -p emberlab-nn --features emberlab-backend/tch --test conformance --no-run 2>&1 | tee "$log"
    cargo bench --features tch --bench inference --bench sac_update --no-run 2>&1 | tee -a "$log"
    cargo build --release --features tch --example train_speed 2>&1 | tee -a "$log"
    set +e
    local name path python=python3
    for name in conformance inference sac_update; do
        path="$(grep -o "([^ ]*/release/deps/$name-[0-9a-f]*)" "$log" | tail -1 | tr -d '()')"
        [ -n "$path" ] || { echo "no $name binary in cargo's output" >&2; exit 1; }
        strip -o "$dir/$name" "$path" && gzip -f -9 "$dir/$name"
    done
    path="${CARGO_TARGET_DIR:-target}/release/examples/train_speed"
    strip -o "$dir/train_speed" "$path" && gzip -f -9 "$dir/train_speed"
    # The interpreter torch-sys asks for libtorch (its build.rs: `python` in a venv).
    [ -n "${VIRTUAL_ENV:-}" ] && python=python
    "$python" -c 'import torch; print(torch.__version__.split("+")[0])' > "$dir/torch-version"
    cp benches/reference/policy_forward.py benches/reference/sac_update.py "$dir/"
    rm -f "$log"
    ls -l "$dir"
}

# `part NAME LIMIT CMD...`: runs CMD with a time limit, output to OUT/NAME.log, and records
# its exit status for the summary.
part() {
    local name="$1" limit="$2"
    shift 2
    echo "== $name: $*"
    local start=$SECONDS
    timeout -k 5 "$limit" "$@" > "$OUT/$name.log" 2>&1
    local rc=$?
    echo "$name rc=$rc $((SECONDS - start))s" >> "$OUT/summary.txt"
    tail -n 3 "$OUT/$name.log"
}

run() {
    local dir
    dir="$(cd "$1" && pwd)" || exit 1
    OUT="$2"
    mkdir -p "$OUT"
    : > "$OUT/summary.txt"
    local lib torch_version
    lib="$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')" || {
        echo "no PyTorch in python3: no libtorch to run against" >&2
        exit 1
    }
    torch_version="$(python3 -c 'import torch; print(torch.__version__)')"
    local built
    built="$(cat "$dir/torch-version")"
    if [ "${torch_version%%+*}" != "$built" ]; then
        echo "libtorch here is $torch_version, the binaries were built against $built:" \
            "build them against $torch_version (see the top of $0)" | tee -a "$OUT/summary.txt"
        exit 1
    fi
    export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    {
        echo "libtorch $torch_version from $lib (binaries built against $built)"
        nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
        lscpu | grep -m1 "Model name"
        nproc
    } | tee -a "$OUT/summary.txt"
    local bin="/tmp/ember-gpu-bin"
    mkdir -p "$bin"
    local f
    for f in conformance inference sac_update train_speed; do
        gunzip -c "$dir/$f.gz" > "$bin/$f" && chmod +x "$bin/$f"
        if ldd "$bin/$f" | grep "not found"; then
            echo "$f: libraries not found (above)" | tee -a "$OUT/summary.txt"
            exit 1
        fi
    done
    # Unresolved symbols show here, before any part runs (binaries bind every symbol at
    # load).
    "$bin/conformance" --list > "$bin/list.log" 2>&1 || {
        echo "the conformance binary does not load against libtorch $torch_version:" | tee -a "$OUT/summary.txt"
        head -c 2000 "$bin/list.log" | tee -a "$OUT/summary.txt"
        exit 1
    }
    cd "$bin" || exit 1
    part conformance 60 env EMBER_TEST_DEVICES=tch:cuda:0 ./conformance --test-threads 1
    part inference 130 env EMBER_BENCH_DEVICES=tch:cuda:0 ./inference --bench \
        "(tch_cuda_eager|flex_eager|flex_frozen)_b" --warm-up-time 0.3 --measurement-time 1 --noplot
    part policy_forward_cuda 120 env PYTHONUNBUFFERED=1 python3 "$dir/policy_forward.py" --device cuda
    part sac_update 75 env EMBER_BENCH_DEVICES=tch:cuda:0 ./sac_update --bench \
        "sac_update/(sequential|parallel)_(tch_cuda|flex)_b256" --noplot
    part sac_update_py_cuda 30 env PYTHONUNBUFFERED=1 python3 "$dir/sac_update.py" \
        --device cuda --threads 1 --seconds 3
    part train 90 sh -c "./train_speed sac Pendulum-v1 3000 --device tch:cuda:0;
        ./train_speed sac Pendulum-v1 3000 --device flex"
    echo "== summary"
    cat "$OUT/summary.txt"
    grep -h -E "^test .*(ok|FAILED)|test result" "$OUT/conformance.log"
    grep -h -E "^(inference|sac_update)|thrpt:|time:" "$OUT/inference.log" "$OUT/sac_update.log"
    grep -h -E "^inference|ms_per_update" "$OUT/policy_forward_cuda.log" "$OUT/sac_update_py_cuda.log"
    grep -h "env_steps_per_s" "$OUT/train.log"
}

case "${1:-}" in
pack) pack "${2:?pack DIR}" ;;
run) run "${2:?run DIR OUT}" "${3:?run DIR OUT}" ;;
*)
    echo "usage: $0 pack DIR | run DIR OUT" >&2
    exit 2
    ;;
esac
