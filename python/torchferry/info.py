"""`python -m torchferry info`: what torchferry found in this process."""

import json
import os
import platform
import sys

import torch

import torchferry
from . import _C, environment


def _env_text(name):
    """An environment variable as the loader reads it (bytes), decoded the way
    the loader's own text reaches Python: b'caf\\xe9' reads 'caf\\\\xe9', so that
    `info` can print and JSON-encode whatever the variable holds."""
    return os.environb.get(os.fsencode(name), b"").decode("utf-8", "backslashreplace")


def _environment():
    """The TORCHFERRY_ variables set in this process, as the loader reads them."""
    names = sorted(os.fsdecode(k) for k in os.environb if k.startswith(b"TORCHFERRY_"))
    return {name: _env_text(name) for name in names}


def _setting_text(name, value):
    """'NAME=value (values: what NAME means)'."""
    entry = environment.entry(name)
    return f"{name}={value} ({environment.describe(entry)})" if entry else f"{name}={value}"


def _versions():
    """The versions and places every `info` shows, started or not."""
    return {
        "torchferry": torchferry.__version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "torch": torch.__version__,
        "torch_path": os.path.dirname(torch.__file__),
    }


def collect_unstarted():
    """What `info` can show when the bridge did not start (torchferry.STARTUP_ERROR):
    no plugin loaded, so there are only the versions, the places and the
    variables, one of which the error names."""
    return {
        **_versions(),
        "startup_error": torchferry.STARTUP_ERROR,
        "environment": _environment(),
        "package_dir": torchferry.PLUGIN_DIR,
        "built_dir": torchferry.BUILT_PLUGIN_DIR,
    }


def render_unstarted(data):
    lines = [
        f"torchferry {data['torchferry']} on Python {data['python']} ({data['platform']})",
        f"torch {data['torch']} at {data['torch_path']}",
        "bridge path: none: the bridge did not start",
        f"  why: {data['startup_error']}",
        "plugins: none loaded (they load once the bridge starts); searched in "
        f"{data['package_dir']}, then {data['built_dir']}",
        "environment: "
        + (", ".join(_setting_text(k, v) for k, v in data["environment"].items()) or "no TORCHFERRY_ variable set"),
    ]
    return "\n".join(lines)


def collect():
    """Everything `info` shows, as plain data."""
    from . import bridge, plugins

    return {
        **_versions(),
        "bridge": bridge.info(),
        "path_counts": bridge.path_counts(),
        # host->parallel_for's backend, threads now, regions per backend.
        "parallel": _C._parallel_info(),
        "plugin_search": {
            "TORCHFERRY_PLUGIN_PATH": _env_text("TORCHFERRY_PLUGIN_PATH"),
            "TORCHFERRY_PLUGINS": _env_text("TORCHFERRY_PLUGINS"),
            # Set, but not read: this process is privileged (see render()).
            "ignored": _C._ignored_environment(),
            "privileged": _C._secure_execution(),
            "entry_points": plugins.entry_points(),
            "package_dir": torchferry.PLUGIN_DIR,
            # build-aten's folder for this torch: searched last, when it
            # existed at import and the process is not privileged.
            "built_dir": torchferry.BUILT_PLUGIN_DIR,
            "built_dir_searched": torchferry._BUILT_PLUGIN_DIR_GIVEN and not _C._secure_execution(),
        },
        "abi": _C.ABI_VERSION,
        "load_seconds": _C._load_seconds(),
        "plugins": plugins.loaded(),
        "declared_ops": [
            {"name": o["name"], "schema": o["schema"], "declared_by": o["declared_by"]}
            for o in torchferry.ops.schemas()
            if o["declared_by"]
        ],
        "compile": torchferry.COMPILE_UNAVAILABLE or "on: every op is a torch custom op (torch.ops.torchferry)",
        "skipped": plugins.skipped(),
        "shadowed": plugins.shadowed(),
    }


def _built_dir_text(search):
    """The build-aten folder's place in the search line, when searched."""
    return f", then {search['built_dir']}" if search.get("built_dir_searched") else ""


def _kernel_summary(kernels):
    """'abs: cpu float32 float16 ...' lines, one per op and device."""
    by_key = {}
    for op, device, dtype in kernels:
        by_key.setdefault((op, device), []).append(dtype)
    return [f"{op} [{device}]: {' '.join(dtypes)}" for (op, device), dtypes in sorted(by_key.items())]


def _entry_point_summary(entries):
    """'name=path, ...' of the torchferry.plugins entry points that named a path."""
    named = [f"{e['name']}={e['path']}" for e in entries if e["path"]]
    return ", ".join(named) or "none"


IGNORED_WHY = (
    "this process runs with privileges its caller may lack (setuid, setgid or file capabilities), "
    "so the environment does not choose the code it loads, as glibc ignores LD_LIBRARY_PATH there"
)


def _search_setting(search, name):
    """'NAME=value', '(unset)', or the value marked as ignored."""
    value = search[name] or "(unset)"
    return f"{name}={value}" + (" (ignored)" if name in search.get("ignored", ()) else "")


def _shadowed_summary(shadowed):
    """'cpu over aten: 120, cpu over example_c: 2': shadowed kernels per
    (winner, loser) pair, most first."""
    pairs = {}
    for s in shadowed:
        key = (s["winner"], s["loser"])
        pairs[key] = pairs.get(key, 0) + 1
    ranked = sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{winner} over {loser}: {n}" for (winner, loser), n in ranked)


def _bridge_details(data):
    b = data["bridge"]
    cal = b["offset_calibration"]
    return [
        f"  libtorch: {b['libtorch']}",
        f"  libtorch_cuda: {b['libtorch_cuda'] or '(not loaded: CPU-only torch)'}",
        f"  shim (torch_tensor_from_pyobject): {'available' if b['shim_available'] else 'absent'}",
        f"  exchange (DLPack C exchange API): {'available' if b['exchange']['available'] else 'absent'}: "
        f"{b['exchange']['detail']}",
        f"  offset calibration: {'ok' if cal['ok'] else 'FAILED'}: {cal['detail']}",
        f"  calibrated layout: {cal['layout'] or 'none (calibration failed)'}",
        f"  negative-bit check: {b['neg_bit_check']}",
        f"  version counter: {b['version_counter']}",
        f"  storage check: {b['storage_check']}",
        f"  tensor metadata: {b['tensor_meta']}",
        f"  grad check: {b['grad_check']}",
        f"  output allocation: {b['out_alloc']['route']}: {b['out_alloc']['reason']}",
        "  conversions: " + ", ".join(f"{k}={v}" for k, v in data["path_counts"].items()),
    ] + ([_cost_line(data["path_costs"])] if data.get("path_costs") else [])


def render(data, verbose=False):
    """The summary a person reads first: torch, the bridge path and why,
    plugins loaded and skipped (with their whole reasons), declared ops, and
    shadowed kernels counted per pair of plugins. `verbose` adds the bridge's
    calibration and probes, every kernel, and every shadowed kernel."""
    b = data["bridge"]
    lines = [
        f"torchferry {data['torchferry']} on Python {data['python']} ({data['platform']})",
        f"torch {data['torch']} at {data['torch_path']}",
        f"bridge path: {b['path']}",
        f"  why: {b['reason']}",
    ]
    p = data["parallel"]
    lines += [
        f"parallel_for: {p['backend']}, {p['threads']} thread{'s' if p['threads'] != 1 else ''} "
        f"(TORCHFERRY_PARALLEL={environment.entry('TORCHFERRY_PARALLEL')['values']})",
        f"  why: {p['reason']}",
        f"  regions: torch={p['counts']['torch']}, host={p['counts']['host']}, inline={p['counts']['inline']}",
    ]
    if verbose:
        lines += _bridge_details(data)
    lines += [
        f"torch.compile: {data['compile']}",
        "",
        f"plugins (host ABI {data['abi']}; loaded in {data['load_seconds'] * 1e3:.2f} ms; search: "
        f"{_search_setting(data['plugin_search'], 'TORCHFERRY_PLUGIN_PATH')}, "
        f"then entry points ({_entry_point_summary(data['plugin_search']['entry_points'])}), "
        f"then {data['plugin_search']['package_dir']}"
        f"{_built_dir_text(data['plugin_search'])}; "
        f"{_search_setting(data['plugin_search'], 'TORCHFERRY_PLUGINS')}):",
    ]
    ignored = data["plugin_search"].get("ignored")
    if ignored:
        lines.append(f"  ignored {', '.join(ignored)}: {IGNORED_WHY}")
    if not data["plugins"]:
        lines.append("  none")
    for p in data["plugins"]:
        lines.append(
            f"  {p['name']} {p['version']} ({p['kind']}, ABI {p['abi']}, "
            f"{len(p['kernels'])} kernels) {p['path']}{_version_skips(p, data['abi'])}"
        )
        if p["declared_ops"]:
            lines.append(f"    declares: {', '.join(p['declared_ops'])}")
        if verbose:
            lines.extend(f"    skipped {s['kernel']}: {s['reason']}" for s in p["skipped_kernels"])
            lines.extend("    " + line for line in _kernel_summary(p["kernels"]))
    lines.append(f"skipped plugins: {len(data['skipped']) or 'none'}")
    for s in data["skipped"]:
        lines.append(f"  {s['path']}: {s['reason']}")
    lines.append(f"ops declared by plugins: {len(data['declared_ops']) or 'none'}")
    for o in data["declared_ops"]:
        namespace, _, name = o["name"].partition("::")
        lines.append(f"  torchferry.ops.{namespace}.{name}: {o['schema']} (first declared by {o['declared_by']})")
    shadowed = data["shadowed"]
    lines.append(
        f"shadowed kernels: {len(shadowed) or 'none'}" + (f" ({_shadowed_summary(shadowed)})" if shadowed else "")
    )
    if verbose:
        for s in shadowed:
            lines.append(f"  {s['op']} [{s['device']}] {s['dtype']}: {s['loser']} loses to {s['winner']}")
    else:
        lines.append("")
        lines.append("(`python -m torchferry info --verbose`: the bridge's calibration, every kernel and every shadowed one)")
    return "\n".join(lines)


def _version_skips(plugin, host_abi):
    """'; 2 kernels skipped, newer than this host's ABI 1.1: embedding
    (cpu, float32), ...': a newer plugin's kernels this host's minor lacks."""
    skipped = plugin["skipped_kernels"]
    if not skipped:
        return ""
    kernels = ", ".join(s["kernel"] for s in skipped)
    return (
        f"; {len(skipped)} kernel{'s' if len(skipped) > 1 else ''} skipped, newer than this host's "
        f"ABI {host_abi}: {kernels} (--verbose: why)"
    )


def _cost_line(costs):
    """'offset 13 ns, shim 70 ns, exchange 120 ns, torch's shim pair alone 57 ns'."""
    parts = [f"{name} {ns:.0f} ns" for name, ns in costs.items() if name != "torch's shim pair"]
    pair = costs.get("torch's shim pair")
    if pair is not None:
        parts.append(f"torch's shim pair alone {pair:.0f} ns")
    return (
        "  cost per tensor, measured now (a [8, 512] float32 tensor read and released in a C++ loop; "
        "bench section 1 measures it carefully): " + ", ".join(parts)
    )


def main(as_json=False, verbose=False):
    if torchferry.STARTUP_ERROR is not None:
        # A user's setting, not a fault: what is known goes to stdout, the
        # one line naming the variable and its fix to stderr.
        data = collect_unstarted()
        print(json.dumps(data, indent=2) if as_json else render_unstarted(data))
        print(f"python -m torchferry info: {torchferry.STARTUP_ERROR}", file=sys.stderr)
        return 2
    from . import bridge

    data = collect()
    if verbose:
        data["path_costs"] = bridge.path_costs()
    print(json.dumps(data, indent=2) if as_json else render(data, verbose=verbose))
    return 0
