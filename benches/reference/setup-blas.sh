#!/usr/bin/env bash
# The BLAS libraries flex's GEMM is compared with (`emberlab-labs --bin gemm_libraries`,
# docs/benchmarks.md): Intel's MKL from PyPI's `mkl` wheel and OpenBLAS from PyPI's
# `scipy-openblas32` wheel (the build NumPy and SciPy ship), into `.venv-blas`. PyTorch's own
# products (MKL or oneDNN inside the torch wheel) are measured by gemm_rate.py --shapes.
#
# Usage: benches/reference/setup-blas.sh > blas.env && . ./blas.env
#        (idempotent; prints EMBER_BLAS, the libraries as name=path:symbol, ';'-separated)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
VENV="$ROOT/.venv-blas"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    "mkl==2026.2.0" "scipy-openblas32==0.3.34.481.3"
MKL="$(find "$VENV/lib" -maxdepth 1 -name 'libmkl_rt.so*' | sort | head -n 1)"
OPENBLAS="$("$VENV/bin/python" -c 'import scipy_openblas32 as s, os; print(os.path.join(s.get_lib_dir(), "lib" + s.get_library() + ".so"))')"
for lib in "$MKL" "$OPENBLAS"; do
    [ -f "$lib" ] || { echo "error: $lib is missing from the wheels installed in $VENV" >&2; exit 1; }
done
echo "export EMBER_BLAS='mkl=$MKL:cblas_sgemm;openblas=$OPENBLAS:scipy_cblas_sgemm'"
# One thread each, as the update's parts run (each part one thread); MKL's 32-bit-integer
# interface, which gemm_libraries calls.
echo "export MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_INTERFACE_LAYER=LP64"
