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
    offered = {"offset": True, "shim": bridge.shim_available(), "exchange": bridge.info()["exchange"]["available"]}
    others = [p for p in ("offset", "shim", "exchange") if p != auto and offered[p]]
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
    if path == "exchange" and not bridge.info()["exchange"]["available"]:
        return Variant("exchange", reason=bridge.info()["exchange"]["detail"])
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
        "(`_C._time_bridge`, float32). Reference: the offset path, same rank. `torch's shim pair alone` "
        "is torch_tensor_from_pyobject + aoti_torch_delete_tensor_object timed in the same kind of loop "
        "(`_C._time_shim_pair`): the shim path less it is torchferry's own work per tensor, which the "
        "target holds to the offset path's. `dlpack` is the path non-torch objects take (a numpy array "
        "of the same shape); `exchange API` is torch's DLPack C exchange API timed the same way in the "
        "nanobind peer.",
        layout="wide",
    )
    peers = ctx.peers
    try:
        for i, (rank, shape) in enumerate(SHAPES.items()):
            ctx.progress.update(f"rank {rank}", i + 1, len(SHAPES))
            t = torch.randn(shape, device=ctx.device)
            variants = [_path_variant("offset", t), _path_variant("shim", t), _path_variant("exchange", t)]
            # The floor under the shim path: torch's conversion and delete
            # alone, so that shim - pair is torchferry's own share.
            if bridge.shim_available():
                variants.append(Variant("torch's shim pair alone", lambda k, t=t: _C._time_shim_pair(t, k)))
            else:
                variants.append(
                    Variant("torch's shim pair alone", reason=f"torch {torch.__version__} lacks torch_tensor_from_pyobject")
                )
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
                        Target(
                            "shim",
                            "max_share",
                            1.0,
                            "shim − torch's shim pair ≤ offset",
                            minus="torch's shim pair alone",
                        ),
                    ],
                )
            )
    finally:
        bridge.set_path("auto")
    return section
