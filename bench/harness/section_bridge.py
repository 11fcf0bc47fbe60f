"""Section 1: the bridge alone, per tensor, timed in a C++ loop with the GIL
held (`torchferry._C._time_bridge`): read the tensor into a plugin's view and
release it, on each path, for tensors of rank 1, 2 and 4."""

import torch

from torchferry import _C, bridge

from .results import Case, Section, Target
from .timing import Variant, compare

SHAPES = {1: [4096], 2: [8, 512], 4: [2, 4, 8, 64]}


def paths():
    """(the path torchferry chooses, [every other path this torch offers])."""
    bridge.set_path("auto")  # path() names the forced path while one is
    auto = bridge.path()
    others = [p for p in ("offset", "shim") if p != auto and (p != "shim" or bridge.shim_available())]
    return auto, others


def on_path(path, timer):
    """`timer`, run with the bridge forced to `path` (restored by the caller
    with set_path('auto') when the comparison ends)."""

    def run(k):
        bridge.set_path(path)
        return timer(k)

    return run


def _path_timer(path, tensor):
    def run(k):
        bridge.set_path(path)
        return _C._time_bridge(tensor, k)

    return run


def _path_variant(path, tensor):
    if path == "shim" and not bridge.shim_available():
        return Variant(
            "shim",
            reason=f"torch {torch.__version__} lacks torch_tensor_from_pyobject (the shim needs torch >= 2.14)",
        )
    try:
        bridge.set_path(path)
    except Exception as e:
        return Variant(path, reason=f"path unavailable: {e}")
    return Variant(path, _path_timer(path, tensor))


def run(ctx):
    section = Section(
        1,
        "bridge",
        "Bridge only",
        "ns per tensor: read into a plugin's view and release, in a C++ loop with the GIL held "
        "(`_C._time_bridge`, float32). Reference: the offset path, same rank. `dlpack` is the path "
        "non-torch objects take (a numpy array of the same shape); `exchange API` is torch's DLPack C "
        "exchange API timed the same way in the nanobind peer (not a torchferry path).",
        layout="wide",
    )
    peers = ctx.peers
    try:
        for i, (rank, shape) in enumerate(SHAPES.items()):
            ctx.progress.update(f"rank {rank}", i + 1, len(SHAPES))
            t = torch.randn(shape, device=ctx.device)
            variants = [_path_variant("offset", t), _path_variant("shim", t)]
            if ctx.device != "cpu":
                variants.append(Variant("dlpack (numpy)", reason="numpy arrays live on the CPU"))
            elif not peers["numpy"].ok:
                variants.append(Variant("dlpack (numpy)", reason=peers["numpy"].reason))
            else:
                arr = t.numpy().copy()
                variants.append(Variant("dlpack (numpy)", lambda k, a=arr: _C._time_bridge(a, k)))
            ex = peers["dlpack-exchange-api"]
            if ex.ok:
                nb = peers["nanobind"].value
                variants.append(
                    Variant("exchange API", lambda k, t=t: nb.time_exchange(t, k), note=f"{ex.value} form")
                )
            else:
                variants.append(Variant("exchange API", reason=ex.reason))
            results = compare(variants, ctx.settings)
            section.cases.append(
                Case(
                    {"rank": rank, "shape": str(shape)},
                    results,
                    reference="offset",
                    targets=[
                        Target("offset", "max_ns", 15, "offset ≤ 15 ns"),
                        Target("shim", "max_ns", 80, "shim ≤ 80 ns"),
                    ],
                )
            )
    finally:
        bridge.set_path("auto")
    return section
