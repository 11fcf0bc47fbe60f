#!/usr/bin/env python3
"""The tensor bridge on CUDA tensors, on each path this torch offers.

For "shim" and "offset" (torchferry.bridge.set_path): the view a plugin
would see (torchferry.bridge.view) must match the tensor's own metadata, an
op through that path must give torch's answer, the path's counter must move
and shim handles must balance. Then the cost per call of view(), of a noop
op and of the bare C++ conversion, side by side with cuda.core's
StridedMemoryView on the same tensors (where cuda-core imports), whose
fields must agree with ours.

Exit status: 0 passed, 1 some check failed, 3 skipped (no GPU or no
torchferry), with the reason on stdout.
"""

import argparse
import json
import sys
import time

EXIT_SKIPPED = 3
DLPACK_CODES = {  # torch dtype name -> (DLPack code, bits)
    "float32": (2, 32), "float16": (2, 16), "float64": (2, 64), "bfloat16": (4, 16),
    "int32": (0, 32), "int64": (0, 64), "int8": (0, 8), "uint8": (1, 8), "bool": (6, 8),
}


def per_call_ns(fn, iterations):
    fn()
    best = None
    for _ in range(3):  # best of three: the least disturbed run
        t0 = time.perf_counter_ns()
        for _ in range(iterations):
            fn()
        ns = (time.perf_counter_ns() - t0) / iterations
        best = ns if best is None else min(best, ns)
    return round(best, 1)


def sample_tensors(torch):
    base = torch.randn(48, 65, device="cuda")
    samples = {
        "contiguous float32": torch.randn(64, 128, device="cuda"),
        "transposed float16": torch.randn(32, 16, device="cuda", dtype=torch.float16).t(),
        "sliced bfloat16 (offset data)": torch.randn(8, 33, device="cuda",
                                                     dtype=torch.bfloat16)[:, 1:],
        "stepped float32": base[:, ::2],
        "expanded (stride 0)": torch.randn(1, 7, device="cuda").expand(5, 7),
        "0-dim float32": torch.tensor(3.5, device="cuda"),
        "int64": torch.arange(10, device="cuda"),
    }
    if torch.cuda.device_count() > 1:
        samples["float32 on cuda:1"] = torch.randn(9, 9, device="cuda:1")
    return samples


def check_view(torch, view, t):
    """Differences between the plugin's view of t and t itself."""
    problems = []
    want = {
        "data": t.data_ptr(),
        "shape": tuple(t.shape),
        "strides": tuple(t.stride()),
        "ndim": t.dim(),
    }
    for key, value in want.items():
        if key in view and (tuple(view[key]) if isinstance(value, tuple) else view[key]) != value:
            problems.append(f"{key} {view[key]} != {value}")
    device = view.get("device")
    if device is not None and tuple(device) != (2, t.device.index or 0):
        problems.append(f"device {device} != (2 (CUDA), {t.device.index})")
    dtype = view.get("dtype")
    name = str(t.dtype).replace("torch.", "")
    if isinstance(dtype, dict) and name in DLPACK_CODES:
        if (dtype.get("code"), dtype.get("bits")) != DLPACK_CODES[name]:
            problems.append(f"dtype {dtype} != {DLPACK_CODES[name]} for {name}")
    if view.get("contiguous") is not None and bool(view["contiguous"]) != t.is_contiguous():
        problems.append(f"contiguous {view['contiguous']} != {t.is_contiguous()}")
    return problems


def find_strided_memory_view():
    errors = []
    for module in ("cuda.core.utils", "cuda.core.experimental.utils", "cuda.core.experimental"):
        try:
            mod = __import__(module, fromlist=["StridedMemoryView"])
            return getattr(mod, "StridedMemoryView"), module, None
        except Exception as e:
            errors.append(f"{module}: {type(e).__name__}: {e}")
    return None, None, "; ".join(errors)


def make_smv(smv_class, t):
    """A StridedMemoryView of t without stream ordering (stream_ptr=-1),
    through whichever constructor this cuda-core version offers."""
    if hasattr(smv_class, "from_dlpack"):
        return lambda: smv_class.from_dlpack(t, stream_ptr=-1)
    return lambda: smv_class(t, stream_ptr=-1)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--iterations", type=int, default=20000)
    args = parser.parse_args(argv)
    report = {"status": "skipped", "paths": {}, "cuda_core": {}}
    failures = []

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
    if not torch.cuda.is_available():
        return finish(EXIT_SKIPPED, "skipped",
                      f"torch {torch.__version__} sees no CUDA device; the bridge checks "
                      "need CUDA tensors")
    try:
        import torchferry
        import torchferry.bridge as bridge
        import torchferry.ops as ops
    except Exception as e:
        return finish(EXIT_SKIPPED, "skipped", f"torchferry does not import: "
                      f"{type(e).__name__}: {e}")
    try:
        report["info"] = bridge.info()
    except Exception as e:
        report["info"] = f"unavailable: {e}"
    print(f"bridge: {report['info']}", flush=True)

    samples = sample_tensors(torch)
    timing_tensor = samples["contiguous float32"]
    n = args.iterations
    for path in ("shim", "offset"):
        entry = report["paths"].setdefault(path, {})
        try:
            bridge.set_path(path)
        except Exception as e:
            entry["available"] = False
            entry["reason"] = f"{type(e).__name__}: {e}"
            print(f"{path}: unavailable here: {entry['reason']}", flush=True)
            continue
        entry["available"] = True
        bridge.reset_path_counts()
        checks = {}
        for name, t in samples.items():
            problems = []
            try:
                view = bridge.view(t)
                problems += check_view(torch, view, t)
                if view.get("path") not in (None, path):
                    problems.append(f"view came through {view.get('path')}, not {path}")
                if t.dtype.is_floating_point:
                    out = torch.empty(t.shape, dtype=t.dtype, device=t.device)
                    ops.add(t, t, alpha=2.0, out=out)
                    torch.cuda.synchronize(t.device)
                    expected = torch.add(t, t, alpha=2.0)
                    torch.testing.assert_close(out, expected, rtol=2e-2, atol=1e-2)
                ops.noop(t)
            except Exception as e:
                problems.append(f"{type(e).__name__}: {e}")
            checks[name] = "ok" if not problems else "; ".join(problems)
            if problems:
                failures.append(f"{path}/{name}: {checks[name]}")
        counts = bridge.path_counts()
        entry["checks"] = checks
        entry["counts"] = counts
        if counts.get(path, 0) == 0:
            failures.append(f"{path}: its counter did not move ({counts})")
        if counts.get("shim_handles_created") != counts.get("shim_handles_deleted"):
            failures.append(f"{path}: shim handles unbalanced ({counts})")
        out = torch.empty_like(timing_tensor)
        entry["ns_per_view"] = per_call_ns(lambda: bridge.view(timing_tensor), n)
        entry["ns_per_noop"] = per_call_ns(lambda: ops.noop(timing_tensor), n)
        entry["ns_per_add_call"] = per_call_ns(
            lambda: ops.add(timing_tensor, timing_tensor, out=out), n // 10)
        time_bridge = getattr(torchferry._C, "_time_bridge", None)
        if time_bridge is not None:
            entry["ns_per_conversion_cpp"] = round(time_bridge(timing_tensor, n * 10), 1)
        print(f"{path}: {entry}", flush=True)
    try:
        bridge.set_path("auto")
    except Exception:
        pass

    # cuda.core's StridedMemoryView on the same tensors.
    smv_class, module, why = find_strided_memory_view()
    cc = report["cuda_core"]
    if smv_class is None:
        cc["available"] = False
        cc["reason"] = why
        print(f"cuda.core: StridedMemoryView unavailable ({why})", flush=True)
    else:
        cc["available"] = True
        cc["module"] = module
        try:
            import cuda.core

            cc["version"] = getattr(cuda.core, "__version__", "?")
        except Exception:
            pass
        agree = {}
        for name, t in samples.items():
            try:
                smv = make_smv(smv_class, t)()
                view = bridge.view(t)
                strides = smv.strides
                shape = tuple(smv.shape)
                problems = []
                if int(smv.ptr) != view["data"]:
                    problems.append(f"ptr {smv.ptr:#x} != {view['data']:#x}")
                if shape != tuple(view["shape"]):
                    problems.append(f"shape {shape} != {tuple(view['shape'])}")
                if strides is not None and tuple(strides) != tuple(view["strides"]):
                    problems.append(f"strides {tuple(strides)} != {tuple(view['strides'])}")
                agree[name] = "ok" if not problems else "; ".join(problems)
                if problems:
                    failures.append(f"cuda.core/{name}: {agree[name]}")
            except Exception as e:
                # A dtype cuda-core cannot express (bfloat16 in older versions)
                # is its limit, not our failure.
                agree[name] = f"cuda.core could not view it: {type(e).__name__}: {e}"
        cc["fields_agree"] = agree
        try:
            cc["ns_per_strided_memory_view"] = per_call_ns(make_smv(smv_class, timing_tensor),
                                                           max(1000, n // 4))
        except Exception as e:
            cc["timing_error"] = f"{type(e).__name__}: {e}"
        cc["ns_per_torchferry_view"] = {
            p: report["paths"][p].get("ns_per_view") for p in report["paths"]
        }
        cc["ns_per_dlpack_capsule"] = per_call_ns(lambda: timing_tensor.__dlpack__(), n // 4)
        print(f"cuda.core: {cc}", flush=True)

    report["failures"] = failures
    for f in failures:
        print(f"  FAIL: {f}", flush=True)
    return finish(1 if failures else 0, "fail" if failures else "pass")


if __name__ == "__main__":
    sys.exit(main())
