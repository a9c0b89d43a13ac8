"""Build small PyTorch profiler (Kineto) traces at test time, in the real format: ``cpu_op``
events with ``Input Dims``/``Input type``/``Concrete Inputs``, the ``cudaLaunchKernel`` runtime
calls and ``kernel`` events sharing a ``correlation``, ``ac2g`` flow events and
``deviceProperties``."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any


class Trace:
    """A trace under construction: :meth:`op` opens nested operators, :meth:`kernel` launches."""

    def __init__(self, gpu: str = "NVIDIA H100 80GB HBM3", shapes: bool = True) -> None:
        self.events: list[dict[str, Any]] = []
        self.gpu, self.shapes = gpu, shapes
        self.ts = 1000.0
        self.corr = 100
        self.ext = 1

    def op(
        self,
        name: str,
        dims: list | None = None,
        types: list | None = None,
        concrete: list | None = None,
        dur: float = 100.0,
    ) -> dict[str, Any]:
        """A cpu_op starting now, lasting ``dur`` µs (children go inside)."""
        args: dict[str, Any] = {"External id": self.ext, "Record function id": 0}
        self.ext += 1
        if self.shapes and dims is not None:
            args["Input Dims"] = dims
            args["Input type"] = types or []
            if concrete is not None:
                args["Concrete Inputs"] = concrete
        e = {
            "ph": "X",
            "cat": "cpu_op",
            "name": name,
            "pid": 7,
            "tid": 7,
            "ts": self.ts,
            "dur": dur,
            "args": args,
        }
        self.events.append(e)
        self.ts += 1.0
        return e

    def kernel(
        self,
        name: str,
        dur_us: float,
        device: int = 0,
        grid: list[int] | None = None,
        block: list[int] | None = None,
        launch: bool = True,
        args: dict[str, Any] | None = None,
    ) -> None:
        """A cudaLaunchKernel now (on the CPU thread) and its kernel on the GPU, whose External id
        is the last operator's (``launch`` False: the kernel alone, no runtime call nor flow;
        ``args`` more kernel args, e.g. a collective's metadata)."""
        self.corr += 1
        call = {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 7,
            "tid": 7,
            "ts": self.ts,
            "dur": 2.0,
            "args": {"correlation": self.corr},
        }
        kern = {
            "ph": "X",
            "cat": "kernel",
            "name": name,
            "pid": device,
            "tid": 7,
            "ts": self.ts + 5000.0,
            "dur": dur_us,
            "args": {
                "device": device,
                "stream": 7,
                "correlation": self.corr,
                "External id": self.ext - 1,
                "grid": grid or [1, 1, 1],
                "block": block or [128, 1, 1],
                **(args or {}),
            },
        }
        flows = [
            {
                "ph": "s",
                "id": self.corr,
                "pid": 7,
                "tid": 7,
                "ts": self.ts,
                "cat": "ac2g",
                "name": "ac2g",
            },
            {
                "ph": "f",
                "id": self.corr,
                "pid": device,
                "tid": 7,
                "ts": self.ts + 5000.0,
                "cat": "ac2g",
                "name": "ac2g",
                "bp": "e",
            },
        ]
        self.events += [call, kern, *flows] if launch else [kern]
        self.ts += 3.0

    def transfer(self, name: str, dur_us: float, nbytes: int, device: int = 0) -> None:
        """A copy or memset on the GPU now (``name`` as Kineto writes it: ``Memcpy HtoD (Pageable
        -> Device)``, ``Memset (Device)``), of ``nbytes`` bytes."""
        self.events.append(
            {
                "ph": "X",
                "cat": "gpu_memset" if name.startswith("Memset") else "gpu_memcpy",
                "name": name,
                "pid": device,
                "tid": 7,
                "ts": self.ts + 5000.0,
                "dur": dur_us,
                "args": {"device": device, "stream": 7, "bytes": nbytes},
            }
        )
        self.ts += dur_us + 1.0

    def skip(self, us: float = 200.0) -> None:
        self.ts += us

    def write(self, path: Path) -> Path:
        doc = {
            "schemaVersion": 1,
            "deviceProperties": [
                {"id": i, "name": self.gpu, "computeMajor": 9, "computeMinor": 0, "numSms": 132}
                for i in (0, 1)
            ],
            "record_shapes": int(self.shapes),
            "traceEvents": self.events,
        }
        data = json.dumps(doc).encode()
        path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
        return path
