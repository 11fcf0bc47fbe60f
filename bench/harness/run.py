"""`python -m torchferry bench`: runs the sections, prints the Markdown report
on stdout, writes the results JSON and the PNG chart."""

import json
import os
import sys
import time
from dataclasses import dataclass

from . import env, peers, report
from . import (
    section_aten,
    section_bridge,
    section_call,
    section_llama,
    section_loader,
    section_ops,
    section_threads,
    section_view,
)
from .progress import Progress
from .results import Section
from .timing import Settings

SECTIONS = {
    "bridge": (1, section_bridge),
    "view": (2, section_view),
    "call": (3, section_call),
    "ops": (4, section_ops),
    "aten": (5, section_aten),
    "loader": (6, section_loader),
    "llama": (7, section_llama),
    "threads": (8, section_threads),
}


@dataclass
class Context:
    quick: bool
    device: str
    settings: Settings
    peers: dict
    progress: Progress
    sync: object  # called at the end of each round on a GPU, else None
    threads: int = 1  # torch's intra-op threads for the run's main columns
    max_threads: int = 1  # the threads section sweeps 1 .. this


def torch_threads(default):
    """torch's intra-op threads for the run: `default`, torch's own count
    (every core, as a user runs it), unless TORCHFERRY_BENCH_THREADS names
    another. The CPU plugin follows the same count through the host's
    parallel service, so one setting holds both sides."""
    text = os.environ.get("TORCHFERRY_BENCH_THREADS", "")
    try:
        return max(1, int(text)) if text.strip() else default
    except ValueError:
        return default


def usable_cpus():
    """The cores this process may run on: its affinity mask where the OS
    has one (a container's share, not the host's count), else os.cpu_count()."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def parse_sections(text):
    """'all', or names and numbers: 'bridge,4,loader'."""
    if text in (None, "", "all"):
        return list(SECTIONS)
    by_number = {str(n): key for key, (n, _) in SECTIONS.items()}
    chosen = []
    for part in text.split(","):
        part = part.strip()
        key = by_number.get(part, part)
        if key not in SECTIONS:
            raise ValueError(f"unknown section {part!r}; expected one of {', '.join(SECTIONS)} or 1-{len(SECTIONS)}")
        if key not in chosen:
            chosen.append(key)
    return sorted(chosen, key=lambda k: SECTIONS[k][0])


def settings_text(quick, settings):
    return (
        f"Mode: {'--quick (smoke run: fewer rounds and shapes)' if quick else 'full'}; "
        f"each comparison in one process, variants interleaved in up to {settings.rounds} rounds "
        f"(at least {settings.min_rounds}) of ~{settings.round_s * 1e3:g} ms each after "
        f"~{settings.warmup_s * 1e3:g} ms of warm-up per variant."
    )


def output_paths(args):
    out_dir = args.out_dir or "bench-results"
    json_path = args.json or os.path.join(out_dir, "bench.json")
    plot_path = args.plot or os.path.join(out_dir, "bench.png")
    return json_path, plot_path


def _failed_section(key, error):
    number, module = SECTIONS[key]
    title = (module.__doc__ or key).split(":")[1].split(".")[0].strip() if ":" in (module.__doc__ or "") else key
    return Section(number, key, title, "", skipped=f"failed: {type(error).__name__}: {error}")


def main(args):
    import torch

    try:
        chosen = parse_sections(args.sections)
    except ValueError as e:
        print(f"torchferry bench: {e}", file=sys.stderr)
        return 2
    if args.device == "cuda" and not torch.cuda.is_available():
        print("torchferry bench: --device cuda needs a CUDA device; torch sees none", file=sys.stderr)
        return 2
    # Before the run, not after minutes of it.
    from torchferry.user_error import writable_file

    json_path, plot_path = output_paths(args)
    writable_file(json_path, "--json" if args.json else "--out-dir", "name a file in a folder you can write to",
                  create=True)
    writable_file(plot_path, "--plot" if args.plot else "--out-dir", "name a file in a folder you can write to",
                  create=True)
    # Read before anything sets it: torch's own default, the count a user gets.
    threads = torch_threads(torch.get_num_threads())
    torch.set_num_threads(threads)
    settings = Settings.for_run(args.quick)
    progress = Progress()
    progress.begin("peers")
    ctx = Context(
        quick=args.quick,
        device=args.device,
        settings=settings,
        peers=peers.load(),
        progress=progress,
        sync=torch.cuda.synchronize if args.device == "cuda" else None,
        threads=threads,
        max_threads=getattr(args, "max_threads", None) or usable_cpus(),
    )
    info = env.collect(args.device)
    info["torch_threads_source"] = (
        "TORCHFERRY_BENCH_THREADS" if os.environ.get("TORCHFERRY_BENCH_THREADS", "").strip() else "torch's default"
    )
    info["max_threads"] = ctx.max_threads
    info["peers"] = {name: p.as_dict() for name, p in ctx.peers.items()}
    sections = []
    for key in chosen:
        number, module = SECTIONS[key]
        progress.begin(f"{number} {key}")
        start = time.monotonic()
        try:
            section = module.run(ctx)
        except Exception as e:  # one broken section must not cost the others
            section = _failed_section(key, e)
        finally:
            # A section that timed other counts leaves the run's own behind it.
            torch.set_num_threads(threads)
        section.seconds = time.monotonic() - start
        sections.append(section)
    progress.done()
    info["load_average_at_end"] = env.load_average()
    info["seconds"] = round(progress.elapsed(), 1)

    text = report.markdown(info, sections, ctx.peers, settings_text(args.quick, settings))
    print(text)

    json_path, plot_path = output_paths(args)
    results = {
        "meta": info,
        "settings": {"quick": args.quick, **settings.__dict__},
        "sections": [s.as_dict() for s in sections],
        "markdown": text,
    }
    for path in (json_path, plot_path):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(json_path, "w") as f:
        json.dump(results, f, indent=1)
    written = [json_path]
    try:
        from . import plot

        if plot.write(plot_path, sections, env.summary_line(info)):
            written.append(plot_path)
        else:
            print("torchferry bench: no chart: none of sections 1-4 or 8 ran", file=sys.stderr)
    except Exception as e:  # matplotlib missing or failing: the JSON still stands
        print(f"torchferry bench: no chart ({type(e).__name__}: {e})", file=sys.stderr)
    print(f"torchferry bench: {info['seconds']} s; wrote {', '.join(written)}", file=sys.stderr)
    return 0
