"""`python -m torchferry bench`: runs the sections, prints the Markdown report
on stdout, writes the results JSON and the PNG chart."""

import json
import os
import sys
import time
from dataclasses import dataclass

from . import env, peers, report
from . import section_aten, section_bridge, section_call, section_llama, section_loader, section_ops, section_view
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
}


@dataclass
class Context:
    quick: bool
    device: str
    settings: Settings
    peers: dict
    progress: Progress
    sync: object  # called at the end of each round on a GPU, else None


def torch_threads():
    """torch's intra-op threads for the run: 1 unless TORCHFERRY_BENCH_THREADS
    says otherwise. The CPU plugin runs each call on one thread, and on a
    shared machine a second torch thread waits for a free core at every
    parallel region, so one thread each is the comparison that holds."""
    text = os.environ.get("TORCHFERRY_BENCH_THREADS", "1")
    try:
        return max(1, int(text))
    except ValueError:
        return 1


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
            raise ValueError(f"unknown section {part!r}; expected one of {', '.join(SECTIONS)} or 1-6")
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
    threads = torch_threads()
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
    )
    info = env.collect(args.device)
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
            print("torchferry bench: no chart: none of sections 1-4 ran", file=sys.stderr)
    except Exception as e:  # matplotlib missing or failing: the JSON still stands
        print(f"torchferry bench: no chart ({type(e).__name__}: {e})", file=sys.stderr)
    print(f"torchferry bench: {info['seconds']} s; wrote {', '.join(written)}", file=sys.stderr)
    return 0
