"""The PNG chart: bars for sections 1 to 4, and for section 8 the time of
each workload against the thread count, torchferry beside torch
(matplotlib, no display needed)."""

import textwrap


def _bars(ax, labels, values, title, xlabel, lines=(), colors=None):
    ys = list(range(len(labels)))
    ax.barh(ys, values, color=colors or "#4C72B0")
    ax.set_yticks(ys)
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    if values and min(values) > 0:
        from matplotlib.ticker import FuncFormatter, NullFormatter

        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.6g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
    # The reference lines are named in the axis label: a legend would hide bars.
    styles = [("--", "dashed"), (":", "dotted"), ("-.", "dash-dot")]
    names = []
    for i, (x, text) in enumerate(lines):
        style, style_name = styles[i % len(styles)]
        ax.axvline(x, color="#C44E52", linestyle=style, linewidth=1)
        names.append(f"{style_name}: {text}")
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(xlabel + ("; red " + ", ".join(names) if names else ""), fontsize=8)
    for y, v in zip(ys, values):
        ax.text(v, y, f" {v:,.0f}" if v >= 100 else f" {v:.3g}", va="center", fontsize=6)
    if values and min(values) > 0:
        low, high = ax.get_xlim()
        ax.set_xlim(low, high * 1.6)  # room for the value beside the longest bar


def _ok_rows(section, with_label=True):
    labels, values = [], []
    for case in section.cases:
        prefix = ", ".join(
            f"{k} {v}" if isinstance(v, (int, float)) else str(v) for k, v in case.label.items() if k != "shape"
        ) if with_label else ""
        for name, r in case.results.items():
            if r.ok and not name.startswith("("):
                labels.append(f"{prefix}: {name}" if prefix else name)
                values.append(r.median_ns)
    return labels, values


THREADS = 8  # the section plotted as lines, one panel per workload


def _workloads(section):
    """{workload: {variant: ([threads], [ns])}}, in the section's order."""
    out = {}
    for case in section.cases:
        lines = out.setdefault(case.label["workload"], {})
        for name, r in case.results.items():
            if r.ok:
                xs, ys = lines.setdefault(name, ([], []))
                xs.append(case.label["threads"])
                ys.append(r.median_ns)
    return out


def _scaling(ax, workload, lines):
    styles = {"torchferry": ("#4C72B0", "o"), "torch": ("#C44E52", "s")}
    for name, (xs, ys) in lines.items():
        color, marker = styles.get(name, (None, "^"))
        ax.plot(xs, [y / 1e3 for y in ys], marker=marker, color=color, label=name, linewidth=1, markersize=3)
    from matplotlib.ticker import FuncFormatter

    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.6g}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:,.3g}"))
    ax.set_xticks(sorted({x for xs, _ in lines.values() for x in xs}))
    ax.set_xlabel("threads", fontsize=8)
    ax.set_ylabel("µs per call (log)", fontsize=8)
    ax.set_title(workload, fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(True, which="both", linewidth=0.3)
    ax.legend(fontsize=7)


def write(path, sections, subtitle):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_number = {s.number: s for s in sections if not s.skipped and s.cases}
    panels = [n for n in (1, 2, 3, 4) if n in by_number]
    workloads = _workloads(by_number[THREADS]) if THREADS in by_number else {}
    panels += [(THREADS, w) for w in workloads]
    if not panels:
        return False
    heights = []
    for n in panels:
        if isinstance(n, tuple):
            heights.append(2.6)
            continue
        rows = len(by_number[n].cases) if n == 4 else len(_ok_rows(by_number[n])[0])
        heights.append(max(2.0, 0.18 * rows + 1.0))
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, sum(heights) + 0.5), gridspec_kw={"height_ratios": heights})
    if len(panels) == 1:
        axes = [axes]
    for ax, n in zip(axes, panels):
        if isinstance(n, tuple):
            _scaling(ax, f"{THREADS}. {by_number[THREADS].title}: {n[1]}", workloads[n[1]])
            continue
        s = by_number[n]
        if n == 4:
            labels, values, colors = [], [], []
            for case in s.cases:
                r = case.ratio("torchferry")
                if r is not None:
                    labels.append(f"{case.label['op']} {case.label['dtype']} {case.label['shape']}")
                    values.append(r)
                    goal = case.extra.get("limit") or (1.05 if case.extra.get("large") else 0.5)
                    colors.append("#55A868" if r <= goal else "#DD8452")
            _bars(ax, labels, values, f"{n}. {s.title}: torchferry time / torch eager time (green: target met)",
                  "ratio (log; lower is better)", lines=[(0.5, "0.5× (small-shape target)"), (1.0, "torch eager")],
                  colors=colors)
        else:
            labels, values = _ok_rows(s, with_label=n != 2)
            lines = [(15, "offset 15 ns"), (80, "shim 80 ns")] if n == 1 else []
            _bars(ax, labels, values, f"{n}. {s.title}", "ns per call (log)", lines=lines)
    total = sum(heights)
    fig.suptitle(textwrap.fill(subtitle, 130), fontsize=8)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / total))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
