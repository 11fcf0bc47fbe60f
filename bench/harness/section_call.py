"""Section 3: Python to kernel. `torchferry.ops.noop` with 1, 3 and 8 tensors
(bridge, checks, dispatch, a kernel that reads every view) against an
apache-tvm-ffi function taking the same tensors and reading every view."""

import torch

import torchferry
from torchferry import bridge

from .results import Case, Section, Target
from .timing import Variant, compare, python_timer

SHAPE = [8, 4096]
COUNTS = (1, 3, 8)


def run(ctx):
    section = Section(
        3,
        "call",
        "Python to kernel",
        f"ns per call from Python; float32 tensors of shape {SHAPE}. Reference: `torchferry.ops.noop` on "
        "the path torchferry chose; the tvm-ffi peer is a typed C++ function of as many `TensorView`s.",
        layout="wide",
    )
    tvm = ctx.peers["apache-tvm-ffi"]
    auto = bridge.path()
    for i, n in enumerate(COUNTS):
        ctx.progress.update(f"{n} tensors", i + 1, len(COUNTS))
        tensors = {f"t{j}": torch.randn(SHAPE, device=ctx.device) for j in range(n)}
        call = f"f({', '.join(tensors)})"
        variants = [Variant("torchferry noop", python_timer(call, ctx.sync, f=torchferry.ops.noop, **tensors),
                            note=f"{auto} path")]
        if auto != "shim" and bridge.shim_available():
            def on_shim(k, t=python_timer(call, ctx.sync, f=torchferry.ops.noop, **tensors)):
                bridge.set_path("shim")
                try:
                    return t(k)
                finally:
                    bridge.set_path("auto")

            variants.append(Variant("torchferry noop [shim]", on_shim))
        if tvm.ok:
            variants.append(Variant("tvm-ffi function", python_timer(call, ctx.sync, f=tvm.value[n], **tensors),
                                    note=f"tvm-ffi {tvm.version}"))
        else:
            variants.append(Variant("tvm-ffi function", reason=tvm.reason))
        targets = []
        if n == 3:
            targets.append(Target("tvm-ffi function", "min_ratio", 2.5, "noop(3 tensors) ≥ 2.5× faster than tvm-ffi's"))
        section.cases.append(Case({"tensors": n}, compare(variants, ctx.settings), "torchferry noop", targets))
    return section
