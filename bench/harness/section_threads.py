"""Section 8: scaling with threads. torch's intra-op thread count (which the
CPU plugin follows through the host's parallel service) swept from 1 to the
cores this process may use, for a memory-bound op, a compute-bound one and
the Llama decode step, torchferry beside torch at each count."""

import dataclasses
import math

import torch

import torchferry

from . import llama_decode as llama
from . import section_llama
from .results import Case, Section
from .timing import Variant, at_threads, compare, python_timer

FERRY, TORCH = "torchferry", "torch"
ADD_SHAPE = [4096, 4096]
LINEAR_SHAPE = [64, 4096, 4096]  # [m, K, N]: [64, 4096] by nn.Linear's [4096, 4096] weight
# One comparison's rounds at one count: the sweep has many, so each gets
# less than the other sections' budget.
CASE_BUDGET_S, QUICK_CASE_BUDGET_S = 2.0, 0.5


def thread_counts(most, quick=False):
    """1, 2, ... `most`: every count up to 8, then steps of about 1.5x
    (12, 16, 24, 32, ...), always ending at `most`, so that a many-core
    machine is swept in a reasonable time; --quick: the powers of two."""
    counts, n = [], 1
    while n < most:
        counts.append(n)
        if quick:
            n *= 2
        else:
            n = n + 1 if n < 8 else (n * 3 // 2 if n & (n - 1) == 0 else n * 4 // 3)
    return counts + [most]


def _add(device):
    x, y, out = (torch.randn(ADD_SHAPE, device=device) for _ in range(3))
    return (python_timer("tf.add(x, y, out=out)", tf=torchferry.ops, x=x, y=y, out=out),
            python_timer("torch.add(x, y, out=out)", torch=torch, x=x, y=y, out=out))


def _linear(device):
    m, k, n = LINEAR_SHAPE
    a = torch.randn([m, k], device=device)
    w = torch.randn([n, k], device=device) / math.sqrt(k)
    out = torch.empty([m, n], device=device)
    return (python_timer("tf.linear(a, w, out=out)", tf=torchferry.ops, a=a, w=w, out=out),
            python_timer("torch.matmul(a, b, out=out)", torch=torch, a=a, b=w.t(), out=out))


def _decode(config):
    def make(device):
        s = llama.setup(torch.float32, config, use_transformers=False)
        llama.check(s, torchferry.ops, prompt_len=4, steps=1)  # a wrong decoder is never timed
        return (section_llama._decoder_timer(s, torchferry.ops, None),
                section_llama._decoder_timer(s, llama.TorchOps, None))

    return make


def _workloads():
    """(name, what it stresses, make(device) -> (torchferry timer, torch timer))."""
    small, one_b = section_llama.SMALL, section_llama.ONE_B
    return [
        (f"add float32 {ADD_SHAPE}", "memory-bound", _add),
        (f"linear [{LINEAR_SHAPE[0]}, {LINEAR_SHAPE[1]}] × W^T [{LINEAR_SHAPE[2]}, {LINEAR_SHAPE[1]}] float32",
         "compute-bound", _linear),
        (f"llama decode, hidden {small.hidden_size}, float32", "calls dominate", _decode(small)),
        (f"llama decode, hidden {one_b.hidden_size} ({one_b.num_layers} layers), float32", "weights dominate",
         _decode(one_b)),
    ]


def _scaling_notes(section):
    """Each workload's speed-up from 1 thread to the most, both sides: the
    time at 1 over the time at the most (below 1: the most is slower)."""
    notes = []
    by_workload = {}
    for case in section.cases:
        by_workload.setdefault(case.label["workload"], []).append(case)
    for name, cases in by_workload.items():
        first, last = cases[0], cases[-1]
        parts = []
        for v in (FERRY, TORCH):
            a, b = first.results.get(v), last.results.get(v)
            if a is not None and b is not None and a.ok and b.ok and b.median_ns > 0:
                parts.append(f"{v} {a.median_ns / b.median_ns:.2f}×")
        if parts and first is not last:
            notes.append(f"{name}: speed-up from 1 to {last.label['threads']} threads (time at 1 over time at "
                         f"{last.label['threads']}; below 1: slower) " + ", ".join(parts))
    return notes


def run(ctx):
    counts = thread_counts(ctx.max_threads, ctx.quick)
    section = Section(
        8,
        "threads",
        "Scaling with threads",
        "ns per call from Python, torch's intra-op threads (`torch.set_num_threads`, which the CPU plugin "
        f"follows) at each count from 1 to {ctx.max_threads} (--max-threads; default the cores this process may "
        "use), set before each round outside its timed span. Reference: torch at the same count; torch's call "
        "for linear is `torch.matmul(a, W.t(), out=c)`, and the decoders are the example's on torchferry ops "
        "and on torch ops. A low share of the cores means a shared or busy machine as much as a kernel that "
        "does not scale: compare the two columns at each count."
        + (" --quick sweeps the powers of two and the most." if ctx.quick else ""),
        layout="wide",
    )
    if ctx.device != "cpu":
        section.skipped = "threads are a CPU matter: run it with --device cpu"
        return section
    budget = QUICK_CASE_BUDGET_S if ctx.quick else CASE_BUDGET_S
    settings = dataclasses.replace(ctx.settings, case_budget_s=min(ctx.settings.case_budget_s, budget))
    workloads = _workloads()
    todo = len(workloads) * len(counts)
    done = 0
    try:
        for name, kind, make in workloads:
            try:
                ferry, eager = make(ctx.device)
                reason = ""
            except Exception as e:  # a wrong or missing op: its rows say why
                ferry, eager, reason = None, None, f"{type(e).__name__}: {e}".splitlines()[0][:200]
            for n in counts:
                done += 1
                ctx.progress.update(f"{name} at {n}", done, todo)
                variants = [
                    Variant(FERRY, at_threads(n, ferry) if ferry else None, reason=reason),
                    Variant(TORCH, at_threads(n, eager) if eager else None, reason=reason),
                ]
                section.cases.append(
                    Case({"workload": name, "kind": kind, "threads": n}, compare(variants, settings), reference=TORCH)
                )
    finally:
        torch.set_num_threads(ctx.threads)
    section.notes += _scaling_notes(section)
    return section
