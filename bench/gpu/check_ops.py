#!/usr/bin/env python3
"""The ops on a GPU: the conformance check, then what only a GPU shows.

1. conformance  torchferry.check.run_check(PLUGIN, device): the very check
                `python -m torchferry check PLUGIN --device cuda` runs, with
                its cases (check_cases.py), references (reference.py) and
                tolerances (check_cases.tolerance); each case is a row.
2. sizes        calls large enough to pick a CUDA kernel's other variants
                (a block per row in the reductions, the grid-stride loop,
                more inputs than one launch carries, cuBLAS-sized products,
                long key sequences), which check's case kinds keep small;
                and what the kinds do not build (strided out=, casts of the
                wide unsigned dtypes, values past int32 and int64, a bool
                attention mask): judged by torchferry.check.run_calls, as
                check judges a case, against the same references.
3. errors       embedding's id past the table: an error naming the id and
                the table's size, out left as it was.
4. GPU only     a user stream from torch.cuda.Stream(), named by stream= and
                as the current stream: the work is queued behind the
                stream's earlier work, and the call does not wait for it;
                tensors on cuda:1 while cuda:0 is current (with two GPUs); a
                broadcast of more than 2^31 elements (64-bit indexing).

Sections 2 - 4 call torchferry.ops in this process, so the host's own
preparation checks and shapes each call: a plugin file built on its own is
checked by putting it on TORCHFERRY_PLUGIN_PATH (TORCHFERRY_PLUGINS='*,-aten'
keeps the ATen fallback from serving in its place).

--device cpu runs sections 1 - 3 on CPU tensors and the CPU plugin: a dry run
of this script where there is no GPU.

Exit status: 0 all passed, 1 some failed, 3 skipped (no CUDA device or
torchferry does not import), with the reason on stdout.
"""

import argparse
import json
import sys
import time
import traceback

EXIT_SKIPPED = 3
FLOATS = ("float32", "float16", "bfloat16", "float64")


# --------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------


class Results:
    def __init__(self):
        self.rows = []

    def add(self, op, dtype, name, status, detail=""):
        self.rows.append({"op": op, "dtype": dtype, "case": name, "status": status,
                          "detail": detail[:600]})
        if status in ("fail", "error"):
            print(f"  {status.upper()}: {op} {dtype or ''} {name}: {detail[:600]}", flush=True)

    def summary(self):
        counts = {}
        for r in self.rows:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        return counts


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


# --------------------------------------------------------------------------
# 1. conformance
# --------------------------------------------------------------------------


def conformance(results, plugin, device, kinds=None, ops=None):
    """check's run over `plugin`'s kernels for `device`, a row a case."""
    from torchferry import check

    report = check.run_check(plugin, ops=ops, device=device, kinds=kinds)
    for problem in report["problems"]:
        results.add(None, None, f"check {plugin}", "fail", problem)
    for r in report["results"]:
        status = "fail" if r["status"] in check.FAILING else r["status"]
        results.add(r["op"], r["dtype"], f"check {r['kind']} (seed {r['seed']})", status, r["detail"])
    if not report["problems"] and not report["ok"]:
        results.add(None, None, f"check {plugin}", "fail", "no case was checked")
    return report


# --------------------------------------------------------------------------
# 2. sizes
# --------------------------------------------------------------------------


def size_cases(make):
    """(op, name, calls) of the sizes that pick the CUDA kernels' other
    variants; make(shape) builds a tensor of the case's dtype and device."""
    yield "add", "4M contiguous (grid-stride loop)", [((make([1 << 22]), make([1 << 22])), {})]
    yield "mul", "row broadcast over [2048, 1000]", [((make([2048, 1000]), make([1000])), {})]
    for shape in ([8, 4096], [2, 3, 5000]):
        # A block per row (a warp per row below 1024).
        yield "rms_norm", f"{shape} (a block per row)", [((make(shape), make(shape[-1:])), {"eps": 1e-6})]
        yield "add_rms_norm", f"{shape} (a block per row)", [
            ((make(shape), make(shape), make(shape[-1:])), {"eps": 1e-6})]
    for shape, dim, why in (([4, 5000], -1, "a block per row"), ([64, 2048], 0, "a thread per row"),
                            ([3000, 16], 0, "strided dim, a block per row")):
        yield "softmax", f"{shape} dim={dim} ({why})", [((make(shape),), {"dim": dim})]
    yield "stack", "70 inputs (more than one launch carries)", [(([make([3, 4]) for _ in range(70)],), {"dim": 0})]
    yield "cat", "70 inputs (more than one launch carries)", [(([make([3, 4]) for _ in range(70)],), {"dim": 1})]
    yield "matmul", "512x1024 @ 1024x768", [((make([512, 1024]), make([1024, 768])), {})]
    q = make([2, 2, 3, 4, 70])
    kt = make([2, 2, 5, 70])[:, :, None].expand(2, 2, 3, 5, 70).transpose(-1, -2)
    yield "matmul", "GQA: 5-D q @ expanded K^T", [((q, kt), {})]
    yield "linear", "[8, 1024] x W[1024, 1024] + bias", [((make([8, 1024]), make([1024, 1024]), make([1024])), {})]
    for qs, ks in (([1, 8, 1, 64], [1, 8, 300, 64]), ([1, 2, 5, 128], [1, 2, 1000, 128])):
        calls = [((make(qs), make(ks), make(ks)), kw) for kw in
                 ({}, {"is_causal": True}, {"is_causal": True, "lower_right": True})]
        yield "scaled_dot_product_attention", f"{qs} x {ks} (several key chunks)", calls
    yield "rotary_embedding", "[2, 4, 5, 64] cos [5, 1, 32]", [
        ((make([2, 5, 4, 64]), make([5, 1, 32]), make([5, 1, 32])), kw) for kw in ({}, {"interleaved": True})]


WIDE_UNSIGNED = ("uint16", "uint32", "uint64")
ALL_DTYPES = FLOATS + ("int64", "int32", "int16", "int8", "uint8", "bool") + WIDE_UNSIGNED


def extra_cases(torch, device):
    """(op, dtype, name, calls) of what check's case kinds do not build:
    strided out=, casts to and from the wide unsigned dtypes, values past
    int32 and int64, a bool attention mask, crossed clamp bounds."""
    gen = torch.Generator().manual_seed(1234)

    def randn(*shape, dtype):
        return torch.randn(shape, generator=gen).to(dtype).to(device)

    def tensor(values, dtype):
        return torch.tensor(values, dtype=dtype).to(device)

    for dt in FLOATS:
        dtype = getattr(torch, dt)
        x = randn(40, 24, dtype=dtype)
        yield "exp", dt, "transposed out=", [((x,), {"out": torch.empty(24, 40, dtype=dtype, device=device).t()})]
        yield "clamp", dt, "min above max", [((x,), {"min": 2.25, "max": -1.5})]
        a, b = randn(33, 70, dtype=dtype), randn(70, 45, dtype=dtype)
        column_major = torch.empty(45, 33, dtype=dtype, device=device).t()
        yield "matmul", dt, "column-major out=", [((a, b), {"out": column_major})]
        yield "matmul", dt, "k = 0 into an out= of sevens", [
            ((a[:, :0], b[:0]), {"out": torch.full((33, 45), 7.0, dtype=dtype, device=device)})]
        # No unit stride anywhere: a refusal (unsupported) or a right answer.
        yield "matmul", dt, "no unit stride", [((randn(66, 140, dtype=dtype)[::2, ::2], b), {})]
        q, k, v = randn(2, 8, 3, 64, dtype=dtype), randn(2, 8, 40, 64, dtype=dtype), randn(2, 8, 40, 64, dtype=dtype)
        keep = torch.rand(3, 40, generator=gen) > 0.4
        keep[1] = False  # a fully masked row: 0, as in torch
        yield "scaled_dot_product_attention", dt, "bool mask, a fully masked row", [((q, k, v, keep.to(device)), {})]
    # Casts between every pair where one side is a wide unsigned dtype, of
    # values every destination holds (non-negative, below 100).
    for src in ALL_DTYPES:
        values = torch.arange(300).remainder(100).reshape(20, 15)
        x = (values.double() / 4 if src in FLOATS else values).to(getattr(torch, src)).to(device)
        for dst in ALL_DTYPES:
            if src in WIDE_UNSIGNED or dst in WIDE_UNSIGNED:
                out = torch.empty(20, 15, dtype=getattr(torch, dst), device=device)
                yield "cast", src, f"to {dst}", [((x,), {"out": out}), ((x.t(),), {"out": out.t()})]

    def cast(x, dst):
        return [((x,), {"out": torch.empty(x.shape, dtype=dst, device=device)})]

    big = tensor([2**63 + 2**40, 2**64 - 1, 3], torch.uint64)
    yield "cast", "uint64", "beyond int64 to float64", cast(big, torch.float64)
    yield "cast", "uint64", "beyond int64 to float32", cast(big, torch.float32)
    yield "cast", "float64", "to uint64 beyond int64", cast(tensor([2.0**63 + 2.0**40, 2.0**63, 5.5], torch.float64),
                                                         torch.uint64)
    yield "cast", "float32", "truncation toward zero", cast(tensor([-2.7, -0.5, 0.0, 0.5, 2.7, 1e9], torch.float32),
                                                           torch.int64)
    yield "cast", "float32", "to bool: x != 0", cast(tensor([float("nan"), 0.0, -0.0, 1e-30], torch.float32),
                                                    torch.bool)
    yield "cast", "int64", "beyond 2^24 to float32", cast(tensor([2**40 + 1, -3, 7], torch.int64), torch.float32)
    yield "clamp", "int64", "bounds beyond int32", [
        ((tensor([-(2**62), -5, 0, 5, 2**62], torch.int64),), {"min": -(2**40), "max": 2**40})]


def judged(results, op, dt, name, calls):
    """One row: `calls` judged by check.run_calls. A built-in op without a
    working reference fails here: its reference is reference.py's own."""
    from torchferry import check

    try:
        status, detail = check.run_calls(op, calls)
    except Exception as e:
        status, detail = "error", f"{type(e).__name__}: {e}"
    if status not in ("pass", "unsupported", "error"):
        status = "fail"
    results.add(op, dt, name, status, detail)


def sizes(results, device, served, wanted=None):
    """Section 2: the sizes in every float dtype the device's kernels carry,
    then the extra cases."""
    import torch

    from torchferry import check, check_cases

    for dt in FLOATS:
        dtype = getattr(torch, dt)
        gen = torch.Generator().manual_seed(check.case_seed(0, "sizes", dt, device))
        make = check_cases.tensor_factory("contiguous", dtype, device, gen)
        for op, name, calls in size_cases(make):
            if (not wanted or op in wanted) and dt in served.get(op, ()):
                judged(results, op, dt, name, calls)
        if device != "cpu":
            torch.cuda.empty_cache()
    for op, dt, name, calls in extra_cases(torch, device):
        if (not wanted or op in wanted) and dt in served.get(op, ()):
            judged(results, op, dt, name, calls)


# --------------------------------------------------------------------------
# 3. errors
# --------------------------------------------------------------------------


def embedding_range_check(torch, ops, results, device):
    """An id past the table is an error naming it and the table's size, and
    out keeps what it held."""
    table = torch.randn(50, 24, device=device)
    ids = torch.tensor([[3, 49], [50, 0]], device=device)
    out = torch.full((2, 2, 24), 7.0, device=device)
    name = "id 50 of a 50-row table"
    try:
        ops.embedding(ids, table, out=out)
        if out.is_cuda:
            torch.cuda.synchronize()
        results.add("embedding", "float32", name, "fail", "no error was raised")
        return
    except Exception as e:
        message = str(e)
    if out.is_cuda:
        torch.cuda.synchronize()
    if "50" not in message or "rows" not in message:
        results.add("embedding", "float32", name, "fail",
                    f"the error does not name the id and the table size: {message}")
    elif not bool((out == 7.0).all()):
        results.add("embedding", "float32", name, "fail", "out was written")
    else:
        results.add("embedding", "float32", name, "pass")


# --------------------------------------------------------------------------
# 4. GPU only
# --------------------------------------------------------------------------


def stream_probes(torch, device):
    """(op, args, kwargs, out) of the calls the stream checks make."""
    gen = torch.Generator().manual_seed(1234)

    def randn(*shape, dtype=torch.float32):
        return torch.randn(shape, generator=gen).to(dtype).to(device)

    x, y = randn(1 << 20), randn(1 << 20)
    yield "add", (x, y), {}, torch.empty_like(x)
    s = randn(256, 1000, dtype=torch.float16)
    yield "softmax", (s,), {"dim": -1}, torch.empty_like(s)
    a, b = randn(256, 512), randn(512, 128)
    yield "matmul", (a, b), {}, torch.empty(256, 128, device=device)
    xs = [randn(64, 64, dtype=torch.bfloat16) for _ in range(4)]
    yield "stack", (xs,), {"dim": 1}, torch.empty(64, 4, 64, dtype=torch.bfloat16, device=device)


def stream_checks(torch, ops, results, device):
    """On a torch.cuda.Stream: the result is right, the kernel was queued
    behind the stream's earlier work (not run on another stream), and the
    call returned without waiting for that work. Both ways of naming the
    stream: stream=s, and torch.cuda.stream(s) as the current stream."""
    from torchferry import check, reference

    stream = torch.cuda.Stream()
    # About 0.25 s at 2 GHz (longer while clocks ramp up): ages against a
    # launch, which takes microseconds once the warm-up below is done.
    sleep_cycles = int(5e8)
    for how in ("stream=s", "current stream"):
        for op, args, kwargs, out in stream_probes(torch, device):
            dt = dtype_name(out.dtype)
            name = f"user stream ({how})"
            call_kwargs = {**kwargs, "out": out, "stream": stream if how == "stream=s" else None}
            try:
                # Warm up on this stream first: first-use work (module load,
                # cuBLAS workspace) may legitimately wait once.
                stream.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(stream):
                    getattr(ops, op)(*args, **call_kwargs)
                torch.cuda.synchronize()
                out.fill_(float("nan"))
                torch.cuda.synchronize()
                with torch.cuda.stream(stream):
                    torch.cuda._sleep(sleep_cycles)
                    t0 = time.perf_counter()
                    getattr(ops, op)(*args, **call_kwargs)
                    call_s = time.perf_counter() - t0
                still_busy = not stream.query()
                # Read `out` on the default stream without waiting for s.
                early = out.clone()
                torch.cuda.synchronize()
                problems = []
                wrong = check.compare(op, out, reference.REFERENCES[op](*args, **kwargs))
                if wrong:
                    problems.append(wrong)
                if call_s > 0.1:
                    problems.append(f"the call took {call_s:.3f} s: it waited for the stream")
                if not still_busy:
                    problems.append("the stream was idle right after the call: the kernel "
                                    "may have run elsewhere, or the call synchronised")
                if not bool(early.isnan().all()):
                    problems.append("out was already written when read on another stream "
                                    "before the user stream's earlier work finished")
                if problems:
                    results.add(op, dt, name, "fail", "; ".join(problems))
                else:
                    results.add(op, dt, name, "pass", f"call {call_s * 1e6:.0f} us while the stream slept")
            except Exception as e:
                results.add(op, dt, name, "error", f"{type(e).__name__}: {e}")


def other_device_check(torch, ops, results):
    """With two GPUs: tensors on cuda:1 while cuda:0 is current."""
    from torchferry import check

    if torch.cuda.device_count() < 2:
        results.add("add", "float32", "tensors on cuda:1", "skipped", "one GPU")
        return
    x = torch.randn(1000, device="cuda:1")
    y = torch.randn(1000, device="cuda:1")
    try:
        with torch.cuda.device(0):
            got = ops.add(x, y)
        torch.cuda.synchronize(1)
        wrong = check.compare("add", got, x + y)
        results.add("add", "float32", "tensors on cuda:1", "fail" if wrong else "pass", wrong or "")
    except Exception as e:
        results.add("add", "float32", "tensors on cuda:1", "fail", f"{e}")


def big_index_check(torch, ops, results):
    """More than 2^31 elements through the strided path: 64-bit indexing."""
    name = ">2^31 elements (broadcast)"
    free, _ = torch.cuda.mem_get_info()
    rows, cols = (1 << 16) + 1, (1 << 15) + 1  # 2^31 + 3 * 2^15 + 1 elements
    need = rows * cols * 2 * 3 + (1 << 30)
    if free < need:
        results.add("add", "float16", name, "skipped", f"needs {need >> 30} GiB free, found {free >> 30} GiB")
        return
    x = torch.ones(rows, 1, dtype=torch.float16, device="cuda").expand(rows, cols)
    y = torch.full((1, cols), 2.0, dtype=torch.float16, device="cuda")
    out = torch.empty(rows, cols, dtype=torch.float16, device="cuda")
    try:
        ops.add(x, y, out=out)
        torch.cuda.synchronize()
        # Compared in place: a second copy of the result would not fit.
        bad = int((out != 3).sum())
        results.add("add", "float16", name, "fail" if bad else "pass",
                    f"{bad} of {out.numel()} elements differ from 1 + 2 = 3" if bad else "")
    except Exception as e:
        results.add("add", "float16", name, "error", f"{type(e).__name__}: {e}")
    del out
    torch.cuda.empty_cache()


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                        help="cpu: a dry run without a GPU (default cuda)")
    parser.add_argument("--plugin", help="the plugin the conformance check runs over "
                        "(default: the device's own, cuda or cpu)")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--ops", default="all", help="comma-separated ops (default all)")
    parser.add_argument("--cases", help="the conformance check's case kinds (default all)")
    parser.add_argument("--no-big", action="store_true",
                        help="skip the case of more than 2^31 elements")
    args = parser.parse_args(argv)

    report = {"status": "skipped", "cases": []}

    def finish(code, status, reason=""):
        report["status"] = status
        if reason:
            report["reason"] = reason
            print(f"{status.upper()}: {reason}", flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=1)
        return code

    try:
        import torch
    except Exception as e:
        return finish(EXIT_SKIPPED, "skipped", f"torch does not import: {e}")
    report["torch"] = torch.__version__
    report["torch_cuda"] = torch.version.cuda
    on_cpu = args.device == "cpu"
    if not on_cpu and not torch.cuda.is_available():
        return finish(EXIT_SKIPPED, "skipped",
                      f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no CUDA "
                      "device; the CUDA op checks need an NVIDIA GPU")
    report["device"] = args.device
    report["gpu"] = "none (cpu dry run)" if on_cpu else torch.cuda.get_device_name(0)
    report["capability"] = "-" if on_cpu else ".".join(map(str, torch.cuda.get_device_capability(0)))
    # Compare against full float32 products, as the plugin computes them.
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        import torchferry
        from torchferry import ops, plugins
    except Exception as e:
        traceback.print_exc()
        return finish(EXIT_SKIPPED, "skipped", f"torchferry does not import: {type(e).__name__}: {e}")
    print(f"torchferry {getattr(torchferry, '__version__', '?')}; GPU {report['gpu']} "
          f"(sm {report['capability']}), torch {torch.__version__}", flush=True)

    results = Results()
    wanted = None if args.ops == "all" else set(args.ops.split(","))
    kinds = args.cases.split(",") if args.cases else None
    plugin = args.plugin or args.device
    t0 = time.time()
    print(f"1. conformance: torchferry check {plugin} --device {args.device}", flush=True)
    try:
        conformance(results, plugin, args.device, kinds, sorted(wanted) if wanted else None)
    except ValueError as e:  # the plugin serves none of --ops on the device
        results.add(None, None, f"check {plugin}", "fail", str(e))
    # Which plugin serves each (op, dtype) in this process, and which dtypes
    # the device's kernels carry.
    served = {}
    for p in plugins.loaded():
        for op, device, dt in p["kernels"]:
            if device == args.device:
                served.setdefault(op, {}).setdefault(dt, plugins.kernel_for(op, device, dt))
    print("2. sizes", flush=True)
    sizes(results, args.device, served, wanted)
    if wanted is None or "embedding" in wanted:
        print("3. errors", flush=True)
        embedding_range_check(torch, ops, results, args.device)
    if not on_cpu:
        print("4. GPU only: streams, a second GPU, >2^31 elements", flush=True)
        stream_checks(torch, ops, results, args.device)
        other_device_check(torch, ops, results)
        if not args.no_big and (wanted is None or "add" in wanted):
            big_index_check(torch, ops, results)

    report["cases"] = results.rows
    report["summary"] = results.summary()
    report["served_by"] = served
    report["seconds"] = round(time.time() - t0, 1)
    not_own = sorted(f"{op}/{dt}={p}" for op, d in served.items() for dt, p in d.items()
                     if p not in (None, args.device))
    if not_own:
        report["not_served_by_" + args.device] = not_own
        print(f"NOTE: served by another plugin: {', '.join(not_own)}", flush=True)
    failed = sum(v for k, v in report["summary"].items() if k in ("fail", "error"))
    print(f"{len(results.rows)} cases in {report['seconds']} s: {report['summary']}", flush=True)
    return finish(1 if failed else 0, "fail" if failed else "pass")


if __name__ == "__main__":
    sys.exit(main())
