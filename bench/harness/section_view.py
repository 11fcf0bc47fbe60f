"""Section 2: tensor to native view at the Python level, per call: what it
costs a Python caller to get one tensor's metadata into native code with
each library."""

import torch
import torch.utils.dlpack

import torchferry
from torchferry import bridge

from .results import Case, Section, Target
from .section_bridge import on_path, paths
from .timing import Variant, compare, python_timer

SHAPE = [8, 4096]
REFERENCE = "torchferry.bridge.view"
NOOP = "torchferry.ops.noop(x)"


def variants(ctx, x):
    sync = ctx.sync
    peers = ctx.peers
    auto, others = paths()
    vs = [
        Variant(REFERENCE, on_path(auto, python_timer("view(x)", sync, view=bridge.view, x=x)),
                note=f"{auto} path; returns a TensorView; its fields are built when read"),
    ]
    for p in others:
        vs.append(Variant(f"torchferry.bridge.view [{p}]", on_path(p, python_timer("view(x)", sync, view=bridge.view, x=x))))
    vs.append(
        Variant(NOOP, on_path(auto, python_timer("noop(x)", sync, noop=torchferry.ops.noop, x=x)),
                note=f"{auto} path; the view reaches a plugin kernel")
    )
    vs.append(Variant("x.__dlpack__()", python_timer("x.__dlpack__()", sync, x=x), note="capsule made and freed"))
    vs.append(
        Variant("torch.utils.dlpack.to_dlpack(x)",
                python_timer("to_dlpack(x)", sync, to_dlpack=torch.utils.dlpack.to_dlpack, x=x))
    )
    ex = peers["dlpack-exchange-api"]
    if ex.ok:
        vs.append(Variant("DLPack C exchange API", python_timer("f(x)", sync, f=peers["nanobind"].value.exchange_arg, x=x),
                          note=f"{ex.value} form, called from a nanobind function taking a handle"))
    else:
        vs.append(Variant("DLPack C exchange API", reason=ex.reason))
    nb = peers["nanobind"]
    vs.append(
        Variant("nanobind ndarray argument", python_timer("f(x)", sync, f=nb.value.ndarray_arg, x=x),
                note=f"nanobind {nb.version}")
        if nb.ok
        else Variant("nanobind ndarray argument", reason=nb.reason)
    )
    tvm = peers["apache-tvm-ffi"]
    vs.append(
        Variant("apache-tvm-ffi tensor argument", python_timer("f(x)", sync, f=tvm.value[1], x=x),
                note=f"tvm-ffi {tvm.version}, a typed function taking one TensorView")
        if tvm.ok
        else Variant("apache-tvm-ffi tensor argument", reason=tvm.reason)
    )
    cc = peers["cuda-core"]
    vs.append(
        Variant("cuda.core StridedMemoryView", python_timer("smv(x, stream_ptr=-1)", sync, smv=cc.value, x=x),
                note=f"cuda-core {cc.version}")
        if cc.ok
        else Variant("cuda.core StridedMemoryView", reason=cc.reason)
    )
    vs.append(
        Variant(
            "attribute protocol",
            python_timer("x.data_ptr(); x.shape; x.stride(); x.dtype; x.device", sync, x=x),
            note="data_ptr(), shape, stride(), dtype, device read from Python",
        )
    )
    vs.append(Variant("(timing loop alone)", python_timer("pass", sync), note="included in every row above"))
    return vs


def run(ctx):
    section = Section(
        2,
        "view",
        "Python-level tensor to native view",
        f"ns per call from Python, one float32 tensor of shape {SHAPE}, each call a statement in a "
        f"compiled timing loop. Reference: `{REFERENCE}` on the path torchferry chose.",
    )
    x = torch.randn(SHAPE, device=ctx.device)
    ctx.progress.update("all views", 1, 1)
    try:
        results = compare(variants(ctx, x), ctx.settings)
    finally:
        bridge.set_path("auto")
    case = Case(
        {"shape": str(SHAPE)},
        results,
        reference=REFERENCE,
        targets=[
            Target("cuda.core StridedMemoryView", "min_ratio", 10, "view ≥ 10× faster than cuda.core's"),
            Target("nanobind ndarray argument", "min_ratio", 3, "view ≥ 3× faster than a nanobind ndarray cast"),
        ],
    )
    section.cases.append(case)
    section.notes.append(_against_noop(case))
    return section


def _against_noop(case):
    """The same ratios against ops.noop(x): a view that reaches native code
    without `bridge.view` building a Python dict of it."""
    noop = case.results.get(NOOP)
    if noop is None or not noop.ok:
        return f"`{NOOP}` did not run, so there is no second comparison"
    parts = []
    for name in ("cuda.core StridedMemoryView", "nanobind ndarray argument", "apache-tvm-ffi tensor argument",
                 "DLPack C exchange API", "attribute protocol"):
        r = case.results.get(name)
        if r is not None and r.ok:
            parts.append(f"{name} {r.median_ns / noop.median_ns:.2f}×")
    return (
        f"Against `{NOOP}` instead ({noop.median_ns:,.0f} ns; no dict built, and a kernel call included): "
        + ", ".join(parts)
    )
