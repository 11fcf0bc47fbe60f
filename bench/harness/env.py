"""Where a run happened: machine, Python, torch, torchferry's bridge and
plugins, and the version of every peer, so that two results files can be
told apart and compared."""

import datetime
import os
import platform
import sys
from importlib import metadata

# Distributions whose versions every results file records.
PEER_DISTRIBUTIONS = [
    "torch",
    "numpy",
    "nanobind",
    "apache-tvm-ffi",
    "cuda-core",
    "cuda-bindings",
    "matplotlib",
]


def distribution_version(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_average():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def machine():
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    return {
        "cpu": cpu_model(),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": usable,
        "arch": platform.machine(),
        "os": platform.platform(),
    }


def collect(device):
    import torch

    import torchferry
    from torchferry import _C, bridge, plugins

    info = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "load_average_at_start": load_average(),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "torchferry": torchferry.__version__,
        "device": device,
        "bridge": bridge.info(),
        "plugins": [
            {"name": p["name"], "version": p["version"], "kind": p["kind"], "kernels": len(p["kernels"])}
            for p in plugins.loaded()
        ],
        "skipped_plugins": plugins.skipped(),
        "load_seconds": _C._load_seconds(),
        "versions": {name: distribution_version(name) for name in PEER_DISTRIBUTIONS},
    }
    if device == "cuda":
        info["gpu"] = torch.cuda.get_device_name()
    return info


def summary_line(info):
    m = info["machine"]
    threads = info["torch_threads"]
    source = info.get("torch_threads_source")
    load = info.get("load_average_at_start")
    load_text = f", load average {load[0]:g} at start" if load else ""
    return (
        f"{info['date_utc']} · {m['cpu']}, {m['usable_cpus']} CPUs{load_text} ({m['os']}) · "
        f"Python {info['python']} · torch {info['torch']} ({threads} thread{'' if threads == 1 else 's'}"
        f"{', ' + source if source else ''}) · "
        f"torchferry {info['torchferry']}, bridge path {info['bridge']['path']} · "
        f"device {info['device']}" + (f" ({info['gpu']})" if info.get("gpu") else "")
    )
