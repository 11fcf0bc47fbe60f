"""Eight Python threads calling ops at once, on shared inputs, a shared out
tensor (one row per thread) and private tensors; small calls that keep the GIL
and long ones that drop it, calls that allocate their out and calls the
checks refuse. Afterwards:

  - every result is bit for bit the one the same call gave on one thread, and
    close to torch's own;
  - the shared inputs are unchanged;
  - the bridge's path counters hold exactly the conversions the calls made
    (each call's count measured alone first), and every shim handle created
    was deleted.

It also shows that long kernels release the GIL (core/python/dispatch.cc,
kReleaseGilWork: above 65536 elements of work a CPU kernel runs without it):
a pure-Python thread must make progress while another thread is inside one.

    python tests/hardening/threads.py [ROUNDS] [--no-gil-check]

Prints a line starting with "threads: " for the summary; exit status 0 only
when everything holds.
"""

import os
import sys
import threading
import time

import torch

import torchferry
from torchferry import bridge, ops

THREADS = 8


def build(rounds):
    torch.manual_seed(0)
    shared = {
        "x": torch.randn(64),
        "big": torch.randn(1 << 17),  # abs of it: 131072 elements of work
        "m": torch.randn(8, 64),
        "a": torch.randn(16, 32),
        "out": torch.zeros(THREADS, 64),  # one row per thread
    }
    private = []
    for t in range(THREADS):
        private.append({
            "y": torch.randn(64),
            "b": torch.randn(32, 8),
            "out": torch.empty(64),
            "big_out": torch.empty(1 << 17),
            "wrong": torch.empty(3),
        })

    def calls(t):
        s, p = shared, private[t]
        return [
            ("add(out=)", lambda: ops.add(s["x"], p["y"], alpha=float(t), out=p["out"]),
             lambda: p["out"].clone(), lambda: torch.add(s["x"], p["y"], alpha=float(t))),
            ("mul(out=shared row)", lambda: ops.mul(s["x"], p["y"], out=s["out"][t]),
             lambda: s["out"][t].clone(), lambda: s["x"] * p["y"]),
            ("abs(long, GIL released)", lambda: ops.abs(s["big"], out=p["big_out"]),
             lambda: p["big_out"].clone(), lambda: s["big"].abs()),
            ("softmax", lambda: ops.softmax(s["m"], dim=-1), None,
             lambda: torch.softmax(s["m"], dim=-1)),
            ("matmul", lambda: ops.matmul(s["a"], p["b"]), None, lambda: s["a"] @ p["b"]),
            ("stack", lambda: ops.stack([s["x"], p["y"]], dim=1), None,
             lambda: torch.stack([s["x"], p["y"]], dim=1)),
            ("clamp(tensor bound)", lambda: ops.clamp(s["x"], min=p["y"]), None,
             lambda: torch.clamp(s["x"], min=p["y"])),
            ("noop", lambda: ops.noop(s["x"], p["y"], s["m"]), None, None),
            ("refused", lambda: _refused(s["x"], p["wrong"]), None, None),
        ]

    return shared, calls


def _refused(x, wrong):
    try:
        ops.add(x, x, out=wrong)
    except ValueError:
        return None
    raise AssertionError("a call with a wrong out was accepted")


def conversions(fn):
    """Conversions one call makes, counted alone."""
    bridge.reset_path_counts()
    fn()
    c = bridge.path_counts()
    return c["shim"] + c["offset"] + c["dlpack"] + c["exchange"]


def check_threads(rounds):
    shared, calls = build(rounds)
    originals = {k: v.clone() for k, v in shared.items() if k != "out"}
    expected_values = {}
    per_call = {}
    problems = []
    for t in range(THREADS):
        for name, call, result, reference in calls(t):
            per_call[(t, name)] = conversions(call)
            got = result() if result else call()
            if got is not None:
                expected_values[(t, name)] = got.clone()
                want = reference()
                if not torch.allclose(got, want, rtol=1e-4, atol=1e-5):
                    problems.append(f"{name} differs from torch on one thread")

    errors = []
    done = [0] * THREADS

    def worker(t):
        try:
            mine = calls(t)
            for _ in range(rounds):
                for name, call, result, _ in mine:
                    got = call()
                    if result is not None:
                        got = result()
                    want = expected_values.get((t, name))
                    if want is not None and not torch.equal(got, want):
                        errors.append(f"thread {t}: {name} gave a different result")
                    done[t] += 1
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(f"thread {t}: {type(e).__name__}: {e}")

    bridge.reset_path_counts()
    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    start = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    seconds = time.perf_counter() - start
    counts = bridge.path_counts()
    total_calls = sum(done)
    expected = sum(per_call[(t, name)] for t in range(THREADS)
                   for name, *_ in calls(t)) * rounds
    counted = counts["shim"] + counts["offset"] + counts["dlpack"] + counts["exchange"]
    problems += errors[:5]
    if counted != expected:
        problems.append(f"path counters hold {counted} conversions; the calls made {expected}")
    if counts["shim_handles_created"] != counts["shim_handles_deleted"]:
        problems.append(f"{counts['shim_handles_created']} shim handles created, "
                        f"{counts['shim_handles_deleted']} deleted")
    for key, value in originals.items():
        if not torch.equal(shared[key], value):
            problems.append(f"shared input '{key}' was changed")
    for t in range(THREADS):
        if not torch.equal(shared["out"][t], expected_values[(t, "mul(out=shared row)")]):
            problems.append(f"row {t} of the shared out is wrong")
    path = bridge.path()
    summary = (f"{THREADS} threads x {rounds} rounds, {total_calls} calls on shared and private "
               f"tensors in {seconds:.1f} s: "
               + ("results exact" if not errors and not any("differs" in p for p in problems)
                  else "RESULTS WRONG")
               + f", counters exact ({path}: {counted} of {expected} conversions"
               + (f", shim handles {counts['shim_handles_created']} created = "
                  f"{counts['shim_handles_deleted']} deleted" if path == "shim" else "")
               + ")")
    return problems, summary


def check_gil_release(calls=20):
    """A pure-Python thread counts while this one runs kernels.

    The switch interval is set far beyond the test's length, so the counting
    thread runs only when this one gives the GIL away of its own accord: the
    counter can move during a call only if that call released the GIL (the
    counter yields with sleep(0) so that this thread gets it back at once).
    Long kernels (2 * 4M elements of work) must let it move; short ones
    (2 * 1000) must not, as core/python/dispatch.cc keeps the GIL for them.
    """
    big = [torch.randn(1 << 22) for _ in range(3)]
    small = [torch.randn(1000) for _ in range(3)]
    ticks = [0]
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks[0] += 1
            if ticks[0] % 64 == 0:
                time.sleep(0)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(100.0)
    counter = threading.Thread(target=count)
    counter.start()
    moved = {"long": 0, "short": 0}
    try:
        time.sleep(0.05)  # let the counter start
        for kind, (a, b, out) in (("long", big), ("short", small)):
            for _ in range(calls):
                before = ticks[0]
                ops.add(a, b, out=out)
                if ticks[0] != before:
                    moved[kind] += 1
    finally:
        stop.set()
        counter.join()
        sys.setswitchinterval(interval)
    ok = moved["long"] > 0 and moved["short"] == 0
    return ok, (f"GIL released by long kernels (another Python thread ran during "
                f"{moved['long']} of {calls}) and kept by short ones (ran during "
                f"{moved['short']} of {calls})")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    rounds = int(args[0]) if args else 200
    problems, summary = check_threads(rounds)
    gil_text = "GIL not checked"
    if "--no-gil-check" not in sys.argv:
        gil_ok, gil_text = check_gil_release()
        if not gil_ok:
            problems.append("the GIL was not released as core/python/dispatch.cc says: " + gil_text)
    for p in problems:
        print("FAIL " + p)
    print("threads: " + summary + "; " + gil_text)
    return 1 if problems else 0


if __name__ == "__main__":
    print(f"torch {torch.__version__}, torchferry from {os.path.dirname(torchferry.__file__)}, "
          f"bridge path {bridge.path()}")
    sys.exit(main())
