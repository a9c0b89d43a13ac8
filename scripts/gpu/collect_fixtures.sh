#!/usr/bin/env bash
# Collect ncuroof's own fixtures (issue 5) on a lent GPU machine, with `ncuroof profile` itself.
# Run from the repository root through the device tool, e.g.
#   run(command="bash scripts/gpu/collect_fixtures.sh", carry=[".whl"])
# The device image has pandas, numpy, click and rich but not plotly: carry its wheel in .whl/
# (see the device README) -- importing ncuroof needs it. ncu_report comes with ncu itself
# (/opt/nvidia/nsight-compute/*/extras/python), so the reports are analyzed back here.
# Everything lands in $OUT: the reports, their .ncuroof.json records and versions.txt.
set -uo pipefail
OUT="${OUT:-/tmp/ncuroof-fixtures}"; mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader; ncu --version | tail -1; python3 -c 'import torch, cupy; print("torch", torch.__version__, "cupy", cupy.__version__)'; } > "$OUT/versions.txt" 2>&1
W=scripts/gpu/workloads.py
prof() {  # name, then ncuroof profile options, then -- and the command
  local name=$1; shift
  echo "== $name: ncuroof profile $*" | tee -a "$OUT/commands.txt"
  python3 -m ncuroof profile -o "$OUT/$name" --force --no-analyze "$@" 2>&1 | tail -20 | tee -a "$OUT/log.txt"
}
# --clock-control none: ncu's base-clock locking was not checked on these machines (device KINDS.md).
prof gemm_fp16   --clock-control none -k regex:'gemm|cutlass|sm90' -c 1 -- python3 $W gemm_fp16
prof sgemm       --clock-control none -k regex:'gemm|sgemm|cutlass' -c 1 -- python3 $W sgemm
prof dgemm_cupy  --clock-control none -k regex:'gemm|dgemm' -c 1 -- python3 $W dgemm_cupy
prof elementwise --clock-control none -k regex:'elementwise|vectorized|add' -s 2 -c 1 -- python3 $W elementwise
prof transformer --clock-control none -- python3 $W transformer
prof naive       --clock-control none -k naive -- python3 $W naive
prof tiled       --clock-control none -k tiled -- python3 $W tiled
prof elementwise_dram_fp32 --clock-control none --levels dram --precisions fp32 --cc 9.0 -k regex:'elementwise|vectorized|add' -s 2 -c 1 -- python3 $W elementwise
ls -la "$OUT"
