"""The Markdown report: a header naming the run, one table per section, the
reasons for every skipped row beneath its table, and the targets."""

from .env import summary_line


def ns(value):
    if value is None:
        return "—"
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.1f}"


def ratio_text(r):
    return "—" if r is None else f"{r:.2f}×"


def cell(case, name, no_ratio):
    """'median ±spread (ratio)' for a wide table."""
    r = case.results.get(name)
    if r is None:
        return ""
    if not r.ok:
        return "skipped"
    text = f"{ns(r.median_ns)} ±{ns(r.spread_ns)}"
    if name in case.references():
        return text + " (ref)"
    if name in no_ratio or case.ratio(name) is None:
        return text
    return f"{text} ({ratio_text(case.ratio(name))})"


def target_text(target, case):
    met = target.met(case)
    if met is None:
        return f"{target.text}: n/a"
    m = target.measured(case)
    if target.kind == "max_ns":
        measured = f"{ns(m)} ns"
    elif target.kind == "max_share":
        over = target.denominator(case)
        measured = f"{ns(m * case.results[over].median_ns)} ns, {ratio_text(m)} of {over}"
    else:
        measured = ratio_text(m)
    return f"{target.text}: {measured} {'✓' if met else '✗'}"


def escape(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(escape(c) for c in row) + " |" for row in rows]
    return lines


def _skips(section):
    """Each distinct (variant, reason) once."""
    seen = {}
    for case in section.cases:
        for name, r in case.results.items():
            if not r.ok:
                seen.setdefault((name, r.reason), None)
    return [f"- skipped: **{name}**: {reason}" for name, reason in seen]


def wide(section):
    variants = []
    # The fullest case first: a column that only some rows have keeps its
    # place beside its pair rather than after the columns every row has.
    for case in sorted(section.cases, key=lambda c: -len(c.results)):
        variants += [n for n in case.results if n not in variants]
    label_keys = list(section.cases[0].label) if section.cases else []
    has_targets = any(c.targets for c in section.cases)
    header = label_keys + [f"{section.headers.get(v, v)} (ns)" for v in variants] + (["targets"] if has_targets else [])
    rows = []
    for case in section.cases:
        row = [str(case.label[k]) for k in label_keys]
        row += [cell(case, v, section.no_ratio) for v in variants]
        if has_targets:
            row.append("; ".join(target_text(t, case) for t in case.targets))
        rows.append(row)
    return table(header, rows)


def long(section):
    label_keys = list(section.cases[0].label) if section.cases else []
    header = label_keys + ["variant", "median ns", "± ns", "× ref", "target", "note"]
    rows = []
    for case in section.cases:
        for name, r in case.results.items():
            targets = [t for t in case.targets if t.variant == name]
            row = [str(case.label[k]) for k in label_keys]
            if r.ok:
                ratio = "ref" if name in case.references() else ratio_text(case.ratio(name))
                row += [name, ns(r.median_ns), ns(r.spread_ns), ratio]
            else:
                row += [name, "skipped", "", ""]
            row.append("; ".join(target_text(t, case) for t in targets))
            row.append(r.note if r.ok else r.reason)
            rows.append(row)
    return table(header, rows)


def section_lines(section):
    lines = [f"### {section.number}. {section.title}", "", section.method, ""]
    if section.skipped:
        return lines + [f"**Skipped**: {section.skipped}", ""]
    lines += wide(section) if section.layout == "wide" else long(section)
    extra = _skips(section) if section.layout == "wide" else []
    if extra or section.notes:
        lines.append("")
        lines += extra + [f"- {n}" for n in section.notes]
    lines.append("")
    return lines


def label_text(label):
    """'abs, float32, [8, 4096]'; a leading number keeps its name: 'tensors 3'."""
    items = list(label.items())
    parts = [str(v) for _, v in items]
    if items and isinstance(items[0][1], (int, float)):
        parts[0] = f"{items[0][0]} {items[0][1]}"
    return ", ".join(parts)


def targets_summary(sections):
    rows = []
    for s in sections:
        for case in s.cases:
            for t in case.targets:
                met = t.met(case)
                if met is None:
                    continue
                label = label_text(case.label)
                rows.append((s.number, t.text, label, met, t.need))
    if not rows:
        return []
    lines = ["### Targets (goals, not assertions)", ""]
    by_goal = {}
    need = {}
    for number, text, label, met, n in rows:
        by_goal.setdefault((number, text), []).append((label, met))
        if n is not None:
            need[(number, text)] = n
    out = []
    for (number, text), items in by_goal.items():
        missed = [label for label, met in items if not met]
        status = f"met in {len(items) - len(missed)} of {len(items)}"
        if (number, text) in need:
            # A goal over a group: so many of its cases, not every one.
            n = need[(number, text)]
            status += f" (goal: ≥ {n} of {len(items)} {'✓' if len(items) - len(missed) >= n else '✗'})"
        if missed:
            status += "; missed: " + "; ".join(missed[:8]) + (" …" if len(missed) > 8 else "")
        out.append([str(number), text, status])
    return lines + table(["§", "target", "result"], out) + [""]


def markdown(info, sections, peers, settings_text):
    lines = [
        "## torchferry bench",
        "",
        summary_line(info),
        "",
        settings_text,
        "",
        "Peers: "
        + "; ".join(
            f"{name} {p.version or ''}".strip() + ("" if p.ok else " (unavailable)") for name, p in peers.items()
        ),
        "",
        "Cells: median ±half the interquartile range over the rounds, in ns per call; (×) = median over "
        "the reference's median from the same rounds (> 1: slower than the reference).",
        "",
    ]
    for s in sections:
        lines += section_lines(s)
    lines += targets_summary(sections)
    return "\n".join(lines)
