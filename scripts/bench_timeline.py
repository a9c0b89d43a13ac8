#!/usr/bin/env python3
"""Benchmark: reading a production timeline (issue 24) against plain ``json.load`` of the same file.

Generates, with a fixed seed, a PyTorch profiler (Kineto) trace of N kernel events (default
1,000,000) with what a real one has around them (a ``cpu_op`` per launch and a parent op per two,
the ``cuda_runtime`` launch, the two ``ac2g`` flow events, a ``ProfilerStep`` annotation per 1,000
launches) and an Nsight Systems SQLite export of as many kernels (kernel, runtime and NVTX tables).
Each reader runs in a subprocess of its own; its peak memory is its peak resident set (``VmHWM``,
Linux) less its resident set before reading, with pandas and the reader imported.

Targets: ``read_timeline`` of the Kineto trace in at most the time of ``json.load`` of the same
file, peak memory (above the interpreter with pandas imported) at most twice the file's size;
``ncuroof.api.analyze_trace`` of it (issue 41: the cpu_ops carry shapes, operators with analytic
work) in at most 1.5 times the time of ``read_timeline``.

    .venv/bin/python scripts/bench_timeline.py [--kernels N] [--dir DIR] [--kineto-only]
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

SEED = 24
NAMES = (
    "ampere_sgemm_128x64_tn",
    (
        "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous"
        " namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar,"
        " at::native::detail::ClampLimits)::{lambda()#1}::operator()()"
        " const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>"
        " >(int, float, at::detail::Array<char*, 2>)"
    ),
    (
        "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4::Params)"  # noqa: E501
    ),
    "triton_poi_fused_add_cos_sin_0",
    (
        "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float,"
        " at::native::MeanOps<float, float, float, float>, unsigned int, float, 4>"
        " >(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned"
        " int, float, 4>)"
    ),
)
OPS = (
    ("aten::linear", "aten::addmm"),
    ("aten::clamp", "aten::clamp_"),
    ("aten::conv2d", "aten::cudnn_convolution"),
    ("triton_op", "triton_poi_fused_add_cos_sin_0"),
    ("aten::mean", "aten::mean"),
)
CPU_PID, LAUNCH_GAP_US = 4242, 20.0
_BF16 = '"c10::BFloat16"'
# The shapes record_shapes=True gives each operator (Input Dims, Input type, Concrete Inputs), as
# args text; issue 41's analytic work is made from them.
SHAPES = {
    "aten::linear": (
        "[[64, 1024], [256, 1024], [256]]",
        f"[{_BF16}, {_BF16}, {_BF16}]",
        '["", "", ""]',
    ),
    "aten::addmm": (
        "[[256], [64, 1024], [1024, 256], [], []]",
        f'[{_BF16}, {_BF16}, {_BF16}, "Scalar", "Scalar"]',
        '["", "", "", "1", "1"]',
    ),
    "aten::clamp": ("[[4096, 64], [], []]", '["float", "Scalar", "Scalar"]', '["", "0", "6"]'),
    "aten::clamp_": ("[[4096, 64], [], []]", '["float", "Scalar", "Scalar"]', '["", "0", "6"]'),
    "aten::conv2d": (
        "[[8, 64, 56, 56], [64, 64, 3, 3], [64], [], [], [], []]",
        '["float", "float", "float", "ScalarList", "ScalarList", "ScalarList", "Int"]',
        '["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "1"]',
    ),
    "aten::cudnn_convolution": (
        "[[8, 64, 56, 56], [64, 64, 3, 3]]",
        '["float", "float"]',
        '["", ""]',
    ),
    "triton_op": ("[[10, 10]]", '["float"]', '[""]'),
    "triton_poi_fused_add_cos_sin_0": ("[[10, 10]]", '["float"]', '[""]'),
    "aten::mean": (
        "[[64, 4096], [], [], []]",
        '["float", "", "Bool", ""]',
        '["", "[1]", "False", ""]',
    ),
}


def _shape_args(op: str) -> str:
    dims, types, concrete = SHAPES[op]
    return f', "Input Dims": {dims}, "Input type": {types}, "Concrete Inputs": {concrete}'


def _event(ph_cat: str, name: str, pid: int, tid: int, ts: float, dur: float, args: str) -> str:
    """One event as Kineto writes it: one line per group of fields, args on lines of their own."""
    return (
        f'  {{\n    "ph": "X", "cat": "{ph_cat}", "name": {json.dumps(name)}, "pid": {pid}, "tid":'
        f' {tid},\n    "ts": {ts:.3f}, "dur": {dur:.3f},\n    "args": {{\n      {args}\n   '
        " }\n  }"
    )


def _flow(ph: str, corr: int, pid: int, tid: int, ts: float) -> str:
    end = ', "bp": "e"' if ph == "f" else ""
    return (
        f'  {{\n    "ph": "{ph}", "id": {corr}, "pid": {pid}, "tid": {tid}, "ts": {ts:.3f},\n   '
        f' "cat": "ac2g", "name": "ac2g"{end}\n  }}'
    )


def _launch(i: int, t: float, rng: random.Random) -> list[str]:
    """The events of launch ``i`` whose CPU side starts at ``t`` µs: child op, runtime
    call, flows, kernel."""
    k = rng.randrange(len(NAMES))
    ext, corr, stream = 2 * i + 1, 10 * i + 7, 7 + (i % 3)
    dur = rng.uniform(2.0, 40.0)
    grid, block = f"[{rng.choice((1, 80, 864, 4096))}, 1, 1]", f"[{rng.choice((128, 256))}, 1, 1]"
    gpu_ts = t + 8.0 + rng.uniform(0.0, 5.0)
    return [
        _event(
            "cpu_op",
            OPS[k][1],
            CPU_PID,
            CPU_PID,
            t + 1.0,
            9.0,
            f'"External id": {ext}, "Record function id": 0, "Ev Idx": {3 * i}'
            + _shape_args(OPS[k][1]),
        ),
        _event(
            "cuda_runtime",
            "cudaLaunchKernel",
            CPU_PID,
            CPU_PID,
            t + 2.0,
            6.0,
            f'"External id": {ext}, "cbid": 211, "correlation": {corr}',
        ),
        _flow("s", corr, CPU_PID, CPU_PID, t + 2.0),
        _event(
            "kernel",
            NAMES[k],
            0,
            stream,
            gpu_ts,
            dur,
            f'"External id": {ext}, "queued": 0, "device": 0, "context": 1, "stream": {stream},'
            f' "correlation": {corr}, "registers per thread": 32, "shared memory": 0, "grid":'
            f' {grid}, "block": {block}, "est. achieved occupancy %": 50',
        ),
        _flow("f", corr, 0, stream, gpu_ts),
    ]


def write_kineto(path: Path, n: int) -> None:
    """A Kineto trace of ``n`` kernel launches, seeded by :data:`SEED`."""
    rng = random.Random(SEED)
    head = (
        '{\n  "schemaVersion": 1,\n  "deviceProperties": [\n    {"id": 0, "name": "NVIDIA'
        ' A100-SXM4-80GB", "computeMajor": 8, "computeMinor": 0, "numSms": 108}\n  ],\n '
        ' "traceEvents": [\n'
    )
    with path.open("w") as fh:
        fh.write(head)
        first = True
        for i in range(0, n, 2):
            t = i * LAUNCH_GAP_US
            parent = OPS[rng.randrange(len(OPS))][0]
            parts = [
                _event(
                    "cpu_op",
                    parent,
                    CPU_PID,
                    CPU_PID,
                    t,
                    2 * LAUNCH_GAP_US - 1.0,
                    f'"External id": {2 * i}, "Record function id": 0, "Ev Idx": {3 * i + 1}'
                    + _shape_args(parent),
                )
            ]
            if i % 1000 == 0:
                parts.insert(
                    0,
                    _event(
                        "user_annotation",
                        f"ProfilerStep#{i // 1000}",
                        CPU_PID,
                        CPU_PID,
                        t,
                        1000 * LAUNCH_GAP_US - 0.5,
                        f'"External id": {10**9 + i}, "Record function id": 0',
                    ),
                )
            for j in range(i, min(i + 2, n)):
                parts += _launch(j, t + (j - i) * LAUNCH_GAP_US, rng)
            fh.write(("" if first else ",\n") + ",\n".join(parts))
            first = False
        fh.write('\n  ],\n  "traceName": "bench_timeline.json"\n}\n')


#: The tables and columns of an nsys SQLite export that the reader uses.
NSYS_SCHEMA = """
    CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT);
    CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT, deviceId INT, contextId INT, streamId INT, correlationId INT,
        globalPid INT, demangledName INT, shortName INT, mangledName INT, gridX INT, gridY INT, gridZ INT,
        blockX INT, blockY INT, blockZ INT);
    CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INT, end INT, eventClass INT, globalTid INT, correlationId INT, nameId INT);
    CREATE TABLE NVTX_EVENTS (start INT, end INT, eventType INT, rangeId INT, category INT, color INT, text TEXT,
        globalTid INT, endGlobalTid INT, textId INT, domainId INT);
"""  # noqa: E501


def write_nsys(path: Path, n: int) -> None:
    """An Nsight Systems SQLite export of ``n`` kernel launches: the tables and
    columns the reader uses."""
    path.unlink(missing_ok=True)
    con = sqlite3.connect(path)
    con.executescript(NSYS_SCHEMA)
    con.executemany(
        "INSERT INTO StringIds VALUES (?, ?)",
        [(i, s) for i, s in enumerate(NAMES)] + [(99, "cudaLaunchKernel")],
    )
    con.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA A100-SXM4-80GB')")
    tid, gap = (4242 << 24) + 4242, 20_000
    kernels, runtime = nsys_launches(n, tid, gap)
    con.executemany(
        f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ({','.join('?' * 16)})", kernels
    )
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, ?, ?)", runtime)
    # an NVTX push/pop range (event type 59) "step S" per 1000 launches
    steps = [
        (s * 1000 * gap, (s + 1) * 1000 * gap - 1, f"step {s}", tid) for s in range(n // 1000 + 1)
    ]
    con.executemany(
        "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId)"
        " VALUES (?, ?, 59, ?, ?, 0)",
        steps,
    )
    con.commit()
    con.close()


def nsys_launches(n: int, tid: int, gap: int) -> tuple[list[tuple], list[tuple]]:
    """The rows of ``n`` kernels, one every ``gap`` ns, and of their launch calls
    on thread ``tid``."""
    rng = random.Random(SEED)
    kernels, runtime = [], []
    for i in range(n):
        k, t = rng.randrange(len(NAMES)), i * gap
        start = t + 8_000 + rng.randrange(5_000)
        end = start + rng.randrange(2_000, 40_000)
        grid = rng.choice((1, 80, 864))
        # device, context, stream, correlation, process; the name in three spellings; grid, block
        ids = (0, 1, 7 + i % 3, i + 1, 4242 << 24)
        kernels.append((start, end, *ids, k, k, k, grid, 1, 1, 256, 1, 1))
        runtime.append((t + 2_000, t + 8_000, 1, tid, i + 1, 99))
    return kernels, runtime


# Each reader: what it imports (before the memory baseline), then what is timed.
READERS = {
    "json.load": (
        "import json",
        "d = json.load(open(P)); n = sum(1 for e in d['traceEvents'] if e.get('cat') == 'kernel')",
    ),
    "read_timeline": (
        "from ncuroof.parser.timeline import read_timeline",
        "n = len(read_timeline(P))",
    ),
    # issue 41: the trace alone, operators with analytic work (the trace's A100 datasheet)
    "analyze_trace": (
        "from ncuroof import api",
        "n = int(api.analyze_trace(P, write=False).operators['launches'].sum())",
    ),
    "sql_sum": (
        "import sqlite3",
        (
            "n = sqlite3.connect(P).execute('SELECT COUNT(*), SUM(end - start) FROM"
            " CUPTI_ACTIVITY_KIND_KERNEL').fetchone()[0]"
        ),
    ),
    "sql_frame": (
        "import sqlite3",
        (
            "n = len(pandas.read_sql_query('SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL',"
            " sqlite3.connect(P)))"
        ),
    ),
}
# Memory from /proc/self/status: VmHWM is this process's own peak, where ru_maxrss on Linux starts
# from the parent's peak at fork (the parent wrote the files: it would hide the readers' peaks).
CHILD = """
import sys, time
import pandas
{setup}

def vm(key):
    with open('/proc/self/status') as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key + ':'))

P = sys.argv[1]
base = vm('VmRSS')
t0, c0 = time.perf_counter(), time.process_time()
{code}
dt, dc = time.perf_counter() - t0, time.process_time() - c0
print(n, dt, dc, base, vm('VmHWM'))
"""


def measure(reader: str, path: Path) -> tuple[int, float, float, float]:
    """(items read, wall seconds, CPU seconds, peak RSS growth in bytes) of one reader in a fresh
    interpreter. CPU time is the steadier measure on a shared machine."""
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            CHILD.format(setup=READERS[reader][0], code=READERS[reader][1]),
            str(path),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return int(out[0]), float(out[1]), float(out[2]), float(out[4]) - float(out[3])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=1_000_000)
    ap.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="where to write the generated files (default: a temporary folder)",
    )
    ap.add_argument(
        "--kineto-only", action="store_true", help="skip the Nsight Systems export's readers"
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        trace, db = Path(tmp) / "bench_timeline.json", Path(tmp) / "bench_timeline.sqlite"
        write_kineto(trace, args.kernels)
        size = trace.stat().st_size
        print(f"Kineto trace: {args.kernels:,} kernels, {size / 1e6:,.0f} MB")
        got = {}
        for reader in ("json.load", "read_timeline", "analyze_trace"):
            n, t, c, m = got[reader] = measure(reader, trace)
            assert n == args.kernels, (reader, n)
            print(
                f"  {reader:14s} {t:7.2f} s wall {c:7.2f} s CPU  peak +{m / 1e6:7,.0f} MB"
                f" ({m / size:.2f}x file)"
            )
        (_, t0, c0, _), (_, t1, c1, m1) = got["json.load"], got["read_timeline"]
        print(
            f"  read_timeline / json.load: wall {t1 / t0:.2f}, CPU {c1 / c0:.2f} (target <= 1);"
            f" memory / file {m1 / size:.2f} (target <= 2)"
        )
        _, t2, c2, m2 = got["analyze_trace"]
        print(
            f"  analyze_trace / read_timeline: wall {t2 / t1:.2f}, CPU {c2 / c1:.2f} (target <="
            f" 1.5); memory / file {m2 / size:.2f}"
        )
        if args.kineto_only:
            return
        write_nsys(db, args.kernels)
        dbsize = db.stat().st_size
        print(f"nsys SQLite export: {args.kernels:,} kernels, {dbsize / 1e6:,.0f} MB")
        cpu = {}
        for reader in ("sql_sum", "sql_frame", "read_timeline"):
            n, t, cpu[reader], m = measure(reader, db)
            assert n == args.kernels, (reader, n)
            print(
                f"  {reader:14s} {t:7.2f} s wall {cpu[reader]:7.2f} s CPU  peak +{m / 1e6:7,.0f} MB"
                f" ({m / dbsize:.2f}x file)"
            )
        print(
            "  CPU time read_timeline / sql_frame (SELECT * FROM the kernel table into pandas) = "
            f"{cpu['read_timeline'] / cpu['sql_frame']:.2f}"
        )


if __name__ == "__main__":
    main()
