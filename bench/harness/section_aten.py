"""Section 5: the ATen fallback plugin's strategies (from_blob, source, pool)
against calling the ATen op directly from Python.

The CPU plugin outranks the fallback, so this section runs in a child
process started with TORCHFERRY_PLUGINS=-cpu,-example_c: there the aten
plugin serves the ops. The child prints the section as JSON on stdout; its
progress line goes to the inherited stderr.
"""

import json
import os
import subprocess
import sys

from .results import Case, Section
from .timing import Settings, Variant, compare, python_timer

OPS = ("abs", "add", "rms_norm")
STRATEGIES = ("from_blob", "source", "pool")
SHAPES = ([1, 4096], [8, 4096], [1, 8192])
QUICK_SHAPES = ([8, 4096],)
DIRECT = "torch direct"
CHILD_PLUGINS = "-cpu,-example_c"
TITLE = "ATen plugin strategies"


def _method(quick):
    return (
        "ns per call from Python, in a child process with "
        f"`TORCHFERRY_PLUGINS={CHILD_PLUGINS}` so that the aten fallback serves the ops; the strategy is "
        "switched with `plugins.set_option('aten', 'strategy', ...)` before each round. Reference: the "
        "ATen op called directly from Python (`torch.abs(x, out=y)`, `torch.add(x, y, out=z)`, "
        "`F.rms_norm(x, (n,), w, eps)`)." + (" --quick runs one shape." if quick else "")
    )


# --- in the child ------------------------------------------------------------


def _why_no_aten(plugins, plugin_dir):
    for s in plugins.skipped():
        if s["name"] == "aten" or "torchferry_aten" in os.path.basename(s["path"]):
            return f"the aten plugin was skipped: {s['reason']}"
    return (
        f"no aten plugin was found (no torchferry_aten*.so in {plugin_dir} or TORCHFERRY_PLUGIN_PATH); "
        "it is built only where torch's C++ headers are found at build time"
    )


def _strategy_timer(plugins, strategy, timer):
    def run(k):
        plugins.set_option("aten", "strategy", strategy)
        return timer(k)

    return run


def measure(quick, device, progress):
    import torch
    import torch.nn.functional as F

    import torchferry
    from torchferry import plugins

    sync = torch.cuda.synchronize if device == "cuda" else None
    settings = Settings.for_run(quick)
    section = Section(5, "aten", TITLE, _method(quick), layout="wide")
    if "aten" not in {p["name"] for p in plugins.loaded()}:
        section.skipped = _why_no_aten(plugins, torchferry.PLUGIN_DIR)
        return section
    strategy_error = {}
    for s in STRATEGIES:
        try:
            plugins.set_option("aten", "strategy", s)
        except Exception as e:
            strategy_error[s] = f"the aten plugin refused strategy {s}: {e}"
    shapes = QUICK_SHAPES if quick else SHAPES
    todo = [(op, dt, shape) for op in OPS for dt in (torch.float16, torch.float32) for shape in shapes]
    statements = {
        "abs": ("tf.abs(x, out=out)", "torch.abs(x, out=out)"),
        "add": ("tf.add(x, y, out=out)", "torch.add(x, y, out=out)"),
        "rms_norm": ("tf.rms_norm(x, w, 1e-6, out=out)", "F.rms_norm(x, (n,), w, 1e-6)"),
    }
    for i, (op, dtype, shape) in enumerate(todo):
        dname = str(dtype).replace("torch.", "")
        progress.update(f"{op} {dname} {shape}", i + 1, len(todo))
        names = {
            "x": torch.randn(shape, dtype=dtype, device=device),
            "y": torch.randn(shape, dtype=dtype, device=device),
            "w": torch.randn(shape[-1:], dtype=dtype, device=device),
            "out": torch.empty(shape, dtype=dtype, device=device),
            "n": shape[-1],
            "tf": torchferry.ops,
            "torch": torch,
            "F": F,
        }
        ferry, direct = statements[op]
        served_by = plugins.kernel_for(op, device, dname)
        variants = [Variant(DIRECT, python_timer(direct, sync, **names))]
        for s in STRATEGIES:
            if served_by != "aten":
                variants.append(Variant(f"aten {s}", reason=f"{op} {dname} on {device} is served by {served_by}, not aten"))
            elif s in strategy_error:
                variants.append(Variant(f"aten {s}", reason=strategy_error[s]))
            else:
                variants.append(Variant(f"aten {s}", _strategy_timer(plugins, s, python_timer(ferry, sync, **names))))
        section.cases.append(
            Case({"op": op, "dtype": dname, "shape": str(shape)}, compare(variants, settings), reference=DIRECT)
        )
    return section


def child_main(argv):
    from .progress import Progress

    import torch

    options = json.loads(argv[0])
    torch.set_num_threads(options.get("threads", 1))
    progress = Progress()
    progress.start -= options.get("elapsed", 0.0)
    progress.section = "5 aten strategies (child)"
    try:
        section = measure(options["quick"], options["device"], progress)
    except Exception as e:  # reported by the parent as the section's skip reason
        section = Section(5, "aten", TITLE, _method(options["quick"]), skipped=f"failed: {type(e).__name__}: {e}")
    print(json.dumps(section.as_dict()))
    return 0


# --- in the parent -----------------------------------------------------------


def run(ctx):
    env = dict(os.environ, TORCHFERRY_PLUGINS=CHILD_PLUGINS)
    import torch

    options = json.dumps(
        {
            "quick": ctx.quick,
            "device": ctx.device,
            "threads": torch.get_num_threads(),
            "elapsed": ctx.progress.elapsed(),
        }
    )
    ctx.progress.update("starting a child process")
    proc = subprocess.run(
        [sys.executable, "-m", "torchferry.bench.section_aten", options],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    ctx.progress.forget_width()
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    try:
        section = Section.from_dict(json.loads(last))
    except (ValueError, KeyError):
        section = Section(
            5,
            "aten",
            TITLE,
            _method(ctx.quick),
            skipped=f"the child process exited with status {proc.returncode} and no results "
            f"(last output: {last[-300:]!r})",
        )
    return section


if __name__ == "__main__":
    sys.exit(child_main(sys.argv[1:]))
