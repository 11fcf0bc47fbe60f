"""Side-by-side timing: every variant of a comparison runs in this process,
warm-up first, then interleaved rounds (A B C, B C A, C A B, ...) of many
iterations each. A round gives one sample in ns per call; a variant's figure
is the median of its samples and its spread half the interquartile range.

A timer is a function `timer(k) -> ns per call over k calls`. Python-level
timers run a statement in a compiled `timeit` loop (garbage collection off,
names bound as fast locals), so every Python-level figure includes the same
loop overhead, reported on its own where it matters. Native timers (C++
loops) time themselves.
"""

import statistics
import time
import timeit
from dataclasses import dataclass, field


@dataclass
class Settings:
    rounds: int  # rounds per comparison, when the budget allows
    min_rounds: int  # never fewer, whatever the budget
    round_s: float  # aim of one variant's round, in seconds
    warmup_s: float  # warm-up per variant, in seconds
    case_budget_s: float  # aim for one comparison's rounds, all variants

    @staticmethod
    def for_run(quick):
        # Short rounds, many of them: on a shared machine a round that loses
        # its core to another process is an outlier the median drops, and
        # the shorter the round the fewer rounds are hit.
        if quick:
            return Settings(rounds=7, min_rounds=3, round_s=0.001, warmup_s=0.003, case_budget_s=0.25)
        return Settings(rounds=41, min_rounds=5, round_s=0.002, warmup_s=0.03, case_budget_s=6.0)


@dataclass
class Variant:
    """One thing to time. `timer` is None when it cannot run here; `reason`
    then says why, and the row is reported as skipped."""

    name: str
    timer: object = None
    reason: str = ""
    note: str = ""


@dataclass
class Result:
    name: str
    status: str  # "ok" or "skipped"
    reason: str = ""
    note: str = ""
    median_ns: float = None
    p25_ns: float = None
    p75_ns: float = None
    min_ns: float = None
    iterations_per_round: int = 0
    samples_ns: list = field(default_factory=list)

    @property
    def ok(self):
        return self.status == "ok"

    @property
    def spread_ns(self):
        """Half the interquartile range."""
        return (self.p75_ns - self.p25_ns) / 2 if self.ok else None

    @staticmethod
    def from_samples(name, samples_ns, note="", iterations_per_round=1):
        """A Result from samples taken some other way (one per process, say)."""
        s = list(samples_ns)
        q = statistics.quantiles(s, n=4, method="inclusive") if len(s) > 1 else [s[0]] * 3
        return Result(
            name,
            "ok",
            note=note,
            median_ns=statistics.median(s),
            p25_ns=q[0],
            p75_ns=q[2],
            min_ns=min(s),
            iterations_per_round=iterations_per_round,
            samples_ns=[round(x, 2) for x in s],
        )

    @staticmethod
    def from_dict(d):
        return Result(
            d["name"],
            d["status"],
            reason=d.get("reason", ""),
            note=d.get("note", ""),
            median_ns=d.get("median_ns"),
            p25_ns=d.get("p25_ns"),
            p75_ns=d.get("p75_ns"),
            min_ns=d.get("min_ns"),
            iterations_per_round=d.get("iterations_per_round", 0),
            samples_ns=d.get("samples_ns", []),
        )

    def as_dict(self):
        return {
            "name": self.name,
            "status": self.status,
            "reason": self.reason,
            "note": self.note,
            "median_ns": self.median_ns,
            "p25_ns": self.p25_ns,
            "p75_ns": self.p75_ns,
            "spread_ns": self.spread_ns,
            "min_ns": self.min_ns,
            "rounds": len(self.samples_ns),
            "iterations_per_round": self.iterations_per_round,
            "samples_ns": self.samples_ns,
        }


def python_timer(stmt, sync=None, **names):
    """A timer for `stmt`, with `names` as fast locals of the timing loop.
    `sync` (e.g. torch.cuda.synchronize) runs once at the end of each round,
    inside the timed span, so that queued device work is paid for."""
    # timeit's own locals start with one underscore: ours must not collide.
    setup = "\n".join(f"{n} = _bench_{n}" for n in names) or "pass"
    timer = timeit.Timer(stmt, setup=setup, globals={f"_bench_{n}": v for n, v in names.items()})

    def run(k):
        start = time.perf_counter_ns()
        timer.timeit(k)
        if sync is not None:
            sync()
        return (time.perf_counter_ns() - start) / k

    return run


def at_threads(threads, timer):
    """`timer` with torch held at `threads` intra-op threads for its rounds.
    The count is set before the timed span: variants at different counts can
    share interleaved rounds, and the switch is never in a figure. The CPU
    plugin's kernels follow the same count (the host's parallel service
    reads torch's)."""
    import torch

    def run(k):
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
        return timer(k)

    return run


def _describe(error):
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".strip().rstrip(":")


def _warm_up(timer, warmup_s):
    """Runs `timer` for about `warmup_s` and returns its last ns per call."""
    k, spent, ns = 1, 0.0, timer(1)
    while True:
        start = time.perf_counter()
        ns = timer(k)
        took = time.perf_counter() - start
        spent += took
        if spent >= warmup_s:
            return ns
        if took < warmup_s / 8:
            k *= 4


def compare(variants, settings):
    """Times every variant in interleaved rounds; returns {name: Result} in
    the order given. A variant that raises, in warm-up or later, becomes a
    skipped Result with the error as its reason; the others carry on."""
    results = {}
    live = []  # (variant, iterations per round, estimated ns per call)
    for v in variants:
        if v.timer is None:
            results[v.name] = Result(v.name, "skipped", reason=v.reason or "not available", note=v.note)
            continue
        try:
            ns = _warm_up(v.timer, settings.warmup_s)
        except Exception as e:  # a peer failing at run time is reported, not fatal
            results[v.name] = Result(v.name, "skipped", reason=f"failed at run time: {_describe(e)}", note=v.note)
            continue
        k = max(1, int(settings.round_s * 1e9 / max(ns, 1.0)))
        live.append((v, k, ns))
        results[v.name] = None  # keeps the caller's order
    round_cost_s = sum(k * ns for _, k, ns in live) / 1e9
    rounds = settings.rounds
    if round_cost_s > 0 and rounds * round_cost_s > settings.case_budget_s:
        rounds = max(settings.min_rounds, int(settings.case_budget_s / round_cost_s))
    samples = {v.name: [] for v, _, _ in live}
    failed = {}
    for r in range(rounds):
        order = live[r % len(live):] + live[: r % len(live)] if live else []
        for v, k, _ in order:
            if v.name in failed:
                continue
            try:
                samples[v.name].append(v.timer(k))
            except Exception as e:
                failed[v.name] = f"failed at run time: {_describe(e)}"
    for v, k, _ in live:
        if v.name in failed:
            results[v.name] = Result(v.name, "skipped", reason=failed[v.name], note=v.note)
            continue
        results[v.name] = Result.from_samples(v.name, samples[v.name], v.note, k)
    return results
