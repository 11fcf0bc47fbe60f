"""Leak check, in one process: 1,000,000 conversions on each bridge path this
torch has (shim, offset, and dlpack from a numpy array), then 1,000,000 calls
of each of noop, add(out=), add (allocating its out) and a call refused by the
checks. Resident memory (/proc/self/statm) is read after a warm-up and at the
end of each; it must grow by less than 1 MiB per run, and the shim handles
created must equal those deleted.

    python tests/hardening/leak.py [ITERATIONS]

Prints one line per run and last a line starting with "leak: " for the
summary. Exit status 0 only when every run passes.
"""

import gc
import os
import sys
import time

import numpy as np
import torch

import torchferry
from torchferry import _C, bridge, ops

LIMIT = 1 << 20  # bytes
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def measure(run, iterations):
    """RSS growth in bytes over `iterations`, after a warm-up of a tenth."""
    run(max(iterations // 10, 1000))
    gc.collect()
    before = rss()
    start = time.perf_counter()
    run(iterations)
    seconds = time.perf_counter() - start
    gc.collect()
    return rss() - before, seconds


def calls(fn):
    def run(n):
        for _ in range(n):
            fn()
    return run


def refused(fn):
    def run(n):
        for _ in range(n):
            try:
                fn()
            except ValueError:
                pass
            else:
                raise AssertionError("the refused call was accepted")
    return run


def main():
    iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    label = f"{iterations:.0e}".replace("+0", "")
    paths = []
    for path in ("shim", "offset", "exchange"):
        try:
            bridge.set_path(path)
            paths.append(path)
        except RuntimeError as e:
            print(f"skip {path}: {str(e).splitlines()[0]}")
    bridge.set_path("auto")
    auto = bridge.path()

    t = torch.randn(4, 8)
    array = np.ones((4, 8), dtype=np.float32)
    x, y, out = torch.randn(16), torch.randn(16), torch.empty(16)
    wrong = torch.empty(3)
    # (name, bridge path for torch tensors, run(n))
    runs = [(f"{p} conversions", p, lambda n: _C._time_bridge(t, n)) for p in paths]
    runs += [
        ("dlpack conversions", "auto", lambda n: _C._time_bridge(array, n)),
        ("noop calls", "auto", calls(lambda: ops.noop(x))),
        ("add(out=) calls", "auto", calls(lambda: ops.add(x, y, out=out))),
        ("add calls allocating out", "auto", calls(lambda: ops.add(x, y))),
        ("refused add calls", "auto", refused(lambda: ops.add(x, y, out=wrong))),
    ]

    failed = False
    parts = []
    created = deleted = 0
    for name, path, run in runs:
        bridge.set_path(path)
        bridge.reset_path_counts()
        grown, seconds = measure(run, iterations)
        counts = bridge.path_counts()
        created += counts["shim_handles_created"]
        deleted += counts["shim_handles_deleted"]
        ok = grown < LIMIT and counts["shim_handles_created"] == counts["shim_handles_deleted"]
        failed |= not ok
        shown = "numpy" if name.startswith("dlpack") else path if path != "auto" else auto
        print(f"{'ok  ' if ok else 'FAIL'} {name} ({shown}): "
              f"RSS {grown / 1024:+.0f} KiB over {iterations} in {seconds:.1f} s; shim handles "
              f"created {counts['shim_handles_created']}, deleted {counts['shim_handles_deleted']}")
        parts.append(f"{name} {grown / 1024:+.0f} KiB")
    bridge.set_path("auto")
    print(f"leak: torch {torch.__version__.split('+')[0]} ({auto} path), {label} each: "
          + ", ".join(parts) + ("; " if not failed else " (some over +1024 KiB or unbalanced); ")
          + f"shim handles created {created} = deleted {deleted}"
          + ("" if created == deleted else " MISMATCH"))
    return 1 if failed else 0


if __name__ == "__main__":
    print(f"torch {torch.__version__}, torchferry from {os.path.dirname(torchferry.__file__)}")
    sys.exit(main())
