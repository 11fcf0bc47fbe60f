"""Section 6: the loader. Time to discover, open, validate and register every
plugin (as the core measures it at import, in fresh processes), what
`import torchferry` costs after torch, and one registry lookup."""

import json
import subprocess
import sys

from torchferry import _C

from .results import Case, Section
from .timing import Result, Variant, compare

FRESH = """
import json, time
t0 = time.perf_counter()
import torch
t1 = time.perf_counter()
import torchferry
t2 = time.perf_counter()
from torchferry import _C, plugins
print(json.dumps({"import_torch_s": t1 - t0, "import_torchferry_s": t2 - t1,
                  "load_s": _C._load_seconds(), "plugins": len(plugins.loaded())}))
"""


def _fresh_processes(count, progress):
    runs, errors = [], []
    for i in range(count):
        progress.update("fresh process", i + 1, count)
        proc = subprocess.run([sys.executable, "-c", FRESH], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        except (ValueError, IndexError):
            errors.append(f"status {proc.returncode}: {proc.stderr.strip()[-300:]}")
    return runs, errors


def run(ctx):
    section = Section(
        6,
        "loader",
        "Loader",
        "Plugin loading: discover, dlopen, negotiate, validate and register every plugin, timed by the core "
        "at import (`_C._load_seconds()`), median over fresh processes; `import torchferry` after torch in "
        "the same processes. Lookup: one uncached registry Find in a C++ loop (`_C._time_lookup`), in "
        "rounds. ns per load / per import / per lookup; no reference.",
    )
    count = 1 if ctx.quick else 5
    runs, errors = _fresh_processes(count, ctx.progress)
    results = {}
    fresh_note = f"{len(runs)} fresh process(es), {runs[0]['plugins'] if runs else '?'} plugins loaded"
    if runs:
        results["load all plugins (fresh process)"] = Result.from_samples(
            "load all plugins (fresh process)", [r["load_s"] * 1e9 for r in runs], fresh_note
        )
        results["import torchferry after torch"] = Result.from_samples(
            "import torchferry after torch", [r["import_torchferry_s"] * 1e9 for r in runs], fresh_note
        )
    else:
        reason = "fresh processes failed: " + "; ".join(errors[:2])
        for name in ("load all plugins (fresh process)", "import torchferry after torch"):
            results[name] = Result(name, "skipped", reason=reason)
    results["load all plugins (this process)"] = Result.from_samples(
        "load all plugins (this process)", [_C._load_seconds() * 1e9], "one sample: at this run's import"
    )
    ctx.progress.update("registry lookup")
    results.update(compare([Variant("registry lookup", _C._time_lookup, note="Find(add, cpu, float32)")], ctx.settings))
    section.cases.append(
        Case({}, results, reference=None, extra={"fresh_processes": runs, "fresh_process_errors": errors})
    )
    return section
