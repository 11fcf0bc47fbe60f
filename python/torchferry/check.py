"""`python -m torchferry check PLUGIN`: does a plugin honour the op contracts?

PLUGIN is a plugin file, or the name of a plugin the loader finds (in
TORCHFERRY_PLUGIN_PATH, an entry point or the package). The plugin is loaded
alone, in a child process, exactly as the loader loads any plugin (a plugin
the loader refuses fails the check with the loader's reason). Every kernel
it registers is then called on the cases check_cases.py generates, for its
device and dtype, and each result is compared with the op's reference:
reference.REFERENCES for a built-in op (torch's own computation), the
vendor's `--reference [OP=]module:function` for an op the plugin declares
(and the output's shape and dtype, which the plugin's infer chose, against
the reference's). A case passes when every call in it matches within the
dtype's tolerance (check_cases.TOLERANCES) and leaves its inputs unchanged;
NotImplementedError (TF_ERROR_UNSUPPORTED) with a message counts as
unsupported, not as a failure; any other error, a wrong value, shape or
dtype is a failure.

--device cuda checks the kernels the plugin registers for CUDA, on CUDA
tensors, with the same cases, references and tolerances as on CPU: one
checker for every device. bench/gpu/check_ops.py runs it first and then what
only a GPU shows (user streams, a second GPU, more than 2^31 elements),
judging its own calls with run_calls, as a case here is judged.

Kernels run in child processes: one child runs the kernels in turn, and a
kernel that crashes it (or hangs past --timeout) is reported by name, with
the case it was running, and the next child goes on from the next kernel.
Every case draws its values from a generator seeded from --seed, the op,
the dtype and the kind, so the repro line printed for a failure runs the
same case again. A child's reports travel on a pipe of their own, not its
stdout, which its kernels may write to. Exit status: 0 when at least one
case passed and nothing failed, 1 on any failure, crash, hang or refusal, or
when no case was checked (every kernel unsupported, without a reference or
without an applicable case), 2 for bad arguments.
"""

import json
import os
import selectors
import signal
import subprocess
import sys
import time
import zlib

RESULT_MARK = "@@torchferry-check "

# What a table cell says for each outcome.
CELLS = {
    "pass": "ok",
    "fail": "FAIL",
    "unsupported": "unsup",
    "n/a": "-",
    "crash": "CRASH",
    "hang": "HANG",
    "no_reference": "noref",
    "reference_error": "refx",
}
FAILING = {"fail", "crash", "hang"}


def case_seed(seed, op, dtype, kind):
    """The seed of one case: the same for the same (seed, op, dtype, kind)
    in every process and on every machine."""
    return zlib.crc32(f"{seed}:{op}:{dtype}:{kind}".encode()) & 0x7FFFFFFF


# --- the child: loads the plugin, runs cases --------------------------------------


# The child's reports go to a pipe of their own, whose descriptor the parent
# names in the spec: a kernel that writes to stdout (a progress dot, a line
# without its newline, text that looks like a report) can neither drop a
# report nor forge one.
_report_fd = None


def _emit(record):
    data = (RESULT_MARK + json.dumps(record) + "\n").encode()
    while data:
        data = data[os.write(_report_fd, data):]


def _plugin_record(spec):
    """The loaded plugin that `spec` names ({'path': ...} or {'name': ...}),
    or the skipped entry that explains why it was not loaded."""
    from torchferry import plugins

    for p in plugins.loaded():
        if (spec.get("path") and os.path.realpath(p["path"]) == os.path.realpath(spec["path"])) or (
            spec.get("name") and p["name"] == spec["name"]
        ):
            return {"loaded": p}
    for s in plugins.skipped():
        same_path = spec.get("path") and s["path"] == spec["path"]
        if same_path or (spec.get("name") and s["name"] == spec["name"]):
            return {"skipped": s}
    return {}


def _child_list(spec):
    import torchferry

    found = _plugin_record(spec)
    schemas = {s["name"]: s for s in torchferry.ops.schemas()}
    loaded = [p["name"] for p in torchferry.plugins.loaded()]
    _emit({"type": "list", "found": found, "schemas": schemas, "others": loaded})


def _load_reference(text):
    import importlib

    module, _, function = text.partition(":")
    if not module or not function:
        raise ValueError(f"expected module:function, got {text!r}")
    target = importlib.import_module(module)
    for part in function.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise TypeError(f"{text} is a {type(target).__name__}, expected a callable")
    return target


def _clone(value):
    import torch

    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_clone(v) for v in value)
    if isinstance(value, dict):  # kwargs: the reference's out= must not leave the call's
        return {k: _clone(v) for k, v in value.items()}
    return value


def _tensors_of(args, kwargs):
    import torch

    found = []
    for value in list(args) + list(kwargs.values()):
        items = value if isinstance(value, (list, tuple)) else [value]
        found.extend(v for v in items if isinstance(v, torch.Tensor))
    return found


def compare(op, actual, expected):
    """None when `actual` matches `expected`, else what differs."""
    import torch

    from . import check_cases

    if expected is None or actual is None:
        return None if actual is expected else f"returned {type(actual).__name__}, expected {type(expected).__name__}"
    if not isinstance(actual, torch.Tensor):
        return f"returned {type(actual).__name__}, expected a Tensor"
    if actual.dtype != expected.dtype:
        return f"result dtype {actual.dtype}, expected {expected.dtype}"
    if tuple(actual.shape) != tuple(expected.shape):
        return f"result shape {list(actual.shape)}, expected {list(expected.shape)}"
    actual, expected = actual.cpu(), expected.cpu()
    if not expected.dtype.is_floating_point:
        if torch.equal(actual, expected):
            return None
        bad = (actual != expected).nonzero()[0].tolist()
        return f"at {bad}: {actual[tuple(bad)].item()}, expected {expected[tuple(bad)].item()} (exact)"
    rtol, atol = check_cases.tolerance(op, expected.dtype)
    try:
        torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
    except AssertionError as e:
        return " ".join(str(e).split())[:400]
    return None


def _run_case(op, calls, reference, reference_takes_out, in_place=(), names=(), written=("out",), out_ok=False):
    """(status, detail) of one case: every call against the reference.
    `in_place`: the positions of arguments the op updates in place, held to
    the reference's update of its own copy instead of staying unchanged.
    `names`: the positional arguments' names, `written`: the keyword
    arguments a kernel writes; every other byte near the tensors is guarded
    (check_guards). With `out_ok` (the op takes out=), a call that leaves
    the output to the host and passes runs again with a fresh out=, so
    that both ways to the kernel meet the guards."""
    import torch

    import torchferry

    from .check_guards import Guarded

    fn = torchferry.ops
    for part in op.split("::"):
        fn = getattr(fn, part)
    passed = unsupported = 0
    detail = ""
    calls = [(args, kwargs, f"call {i + 1} of {len(calls)}") for i, (args, kwargs) in enumerate(calls)]
    for args, kwargs, label in calls:
        given = args, kwargs
        ref_args, ref_kwargs = _clone(args), _clone(kwargs)
        if not reference_takes_out:
            ref_kwargs.pop("out", None)  # references take out= only where the schema declares it
        try:
            with torch.no_grad():
                expected = reference(*ref_args, **ref_kwargs)
        except Exception as e:
            return "reference_error", f"{label}: the reference raised {type(e).__name__}: {e}"
        guard = Guarded()
        args, kwargs = guard.move(args, kwargs, names)
        updated = [(args[i], ref_args[i]) for i in in_place]
        inputs = [t for t in _tensors_of(args, kwargs)
                  if t is not kwargs.get("out") and not any(t is u for u, _ in updated)]
        before = [t.clone() for t in inputs]
        guard.allow([t for t, _ in updated] + _tensors_of((), {k: v for k, v in kwargs.items() if k in written}))
        guard.snapshot()
        try:
            with guard.outputs():
                actual = fn(*args, **kwargs)
        except NotImplementedError as e:
            if not str(e).strip():
                return "fail", f"{label}: NotImplementedError without a message"
            unsupported += 1
            detail = detail or f"{label}: {e}"
            continue
        except Exception as e:
            return "fail", f"{label}: raised {type(e).__name__}: {e}"
        stray = guard.stray_write()
        if stray:
            return "fail", f"{label}: {stray}"
        if "out" in kwargs and actual is not kwargs["out"] and kwargs["out"] is not None:
            if not isinstance(actual, torch.Tensor) or actual.data_ptr() != kwargs["out"].data_ptr():
                return "fail", f"{label}: returned a tensor other than out="
        problem = compare(op, actual, expected)
        if problem:
            return "fail", f"{label}: {problem}"
        for i, (tensor, expected_update) in zip(in_place, updated):
            problem = compare(op, tensor, expected_update)
            if problem:
                return "fail", f"{label}: argument {i + 1}, updated in place: {problem}"
        for tensor, saved in zip(inputs, before):
            if any(tensor is o for o in [kwargs.get("out")]):
                continue
            aliased = "out" in kwargs and kwargs["out"] is not None and tensor.data_ptr() == kwargs["out"].data_ptr()
            if aliased:
                continue
            now, then = tensor.cpu(), saved.cpu()
            if now.dtype.is_floating_point:
                now, then = torch.nan_to_num(now, 1.0), torch.nan_to_num(then, 1.0)
            if not torch.equal(now, then):
                return "fail", f"{label}: the kernel wrote to an input"
        passed += 1
        if out_ok and "out" not in kwargs and isinstance(actual, torch.Tensor) and "with out=" not in label:
            fresh = torch.empty(actual.shape, dtype=actual.dtype, device=actual.device)
            calls.append((given[0], {**given[1], "out": fresh}, f"{label}, with out="))
    if passed:
        return "pass", detail
    if unsupported:
        return "unsupported", detail
    return "n/a", "no call"


def _takes_out(schema):
    return " out)" in schema["schema"].split("->")[0]


def _names(schema):
    """(positional argument names, keyword arguments a kernel writes,
    whether the op takes out=)."""
    positional = [a["name"] for a in schema["args"] if not a["kwarg_only"]]
    written = {"out"} | {a["name"] for a in schema["args"] if a["kwarg_only"] and a["written"]}
    # Every built-in op takes out= (ops.py); a declared op where its schema says.
    out_ok = schema["declared_by"] is None or any(a["name"] == "out" for a in schema["args"])
    return positional, written, out_ok


def _in_place(schema):
    return [i for i, a in enumerate(schema["args"]) if a["written"] and not a["kwarg_only"]]


def run_calls(op, calls):
    """(status, detail) of `calls` ([(args, kwargs), ...]) of the built-in op
    `op` in this process, judged as a case of the check is: against
    reference.REFERENCES, within check_cases.tolerance, inputs unchanged.
    For cases of a caller's own making (bench/gpu/check_ops.py's sizes)."""
    import torchferry

    from . import reference

    schema = {s["name"]: s for s in torchferry.ops.schemas()}[op]
    return _run_case(op, calls, reference.REFERENCES[op], _takes_out(schema), _in_place(schema),
                     *_names(schema))


def _child_run(spec):
    """Runs spec['kernels'] (from spec['start']), one record per case."""
    import torch

    import torchferry

    from . import check_cases, reference

    schemas = {s["name"]: s for s in torchferry.ops.schemas()}
    references = {}
    for op, text in spec.get("references", {}).items():
        references[op] = text
    for index, (op, device, dtype_name) in enumerate(spec["kernels"]):
        if index < spec.get("start", 0):
            continue
        dtype = getattr(torch, dtype_name)
        schema = schemas.get(op)
        declared = bool(schema and schema["declared_by"])
        ref = None
        ref_error = None
        if declared:
            text = references.get(op) or references.get("")
            if text:
                try:
                    ref = _load_reference(text)
                except Exception as e:
                    ref_error = f"--reference {text}: {type(e).__name__}: {e}"
        else:
            ref = reference.REFERENCES.get(op)
        gen_fn = check_cases.GENERATORS.get(op)
        if gen_fn is None and schema is not None:
            gen_fn = check_cases.schema_generator(schema["schema"], alias_ok=schema["aliasing"] == "exact")
        # Sums of extremes overflow or not by the order of summation, and
        # float32 references cannot hold float64's: no extremes there.
        extremes = not check_cases.accumulates(op) and op not in check_cases.FLOAT32_REFERENCES
        _emit({"type": "kernel", "index": index})
        for kind in spec["kinds"]:
            seed = case_seed(spec["seed"], op, dtype_name, kind)
            record = {"type": "case", "index": index, "op": op, "device": device, "dtype": dtype_name,
                      "kind": kind, "seed": seed}
            if ref is None:
                status = "reference_error" if ref_error else "no_reference"
                why = ref_error or (f"declared op: name its reference with --reference {op}=module:function"
                                    if declared else f"reference.py has no reference for {op}")
                _emit({**record, "status": status, "detail": why})
                continue
            gen = torch.Generator().manual_seed(seed)
            make = check_cases.tensor_factory(kind, dtype, device, gen, extremes=extremes,
                                                 special_dtype=torch.float32 if dtype == torch.float64 and op in
                                                 check_cases.FLOAT32_REFERENCES else None)
            try:
                calls = gen_fn(kind, make)
            except Exception as e:
                _emit({**record, "status": "n/a", "detail": f"no case: {type(e).__name__}: {e}"})
                continue
            if calls is None:
                _emit({**record, "status": "n/a", "detail": "the kind does not apply to the op"})
                continue
            _emit({**record, "type": "start"})
            status, detail = _run_case(op, calls, ref, _takes_out(schema), _in_place(schema), *_names(schema))
            _emit({**record, "status": status, "detail": detail})
    _emit({"type": "done"})


def child_main(argv):
    global _report_fd
    spec = json.loads(argv[0])
    _report_fd = spec["report_fd"]
    if spec["mode"] == "list":
        _child_list(spec)
    else:
        _child_run(spec)
    return 0


# --- the parent: chooses, spawns, tabulates ---------------------------------------


def _plugin_environment(plugin):
    """(spec, env) that load `plugin` alone: a file by path, a name by the
    loader's own search, with every other plugin deselected."""
    env = {k: v for k, v in os.environ.items() if k != "TORCHFERRY_PLUGINS"}
    # A bare word is a plugin name even when a folder of that name is here.
    looks_like_file = os.sep in plugin or plugin.endswith(".so") or os.path.isfile(plugin)
    if looks_like_file:
        path = os.path.abspath(plugin)
        name = os.path.basename(path)
        name = name[: -len(".so")] if name.endswith(".so") else name
        name = name[len("torchferry_"):] if name.startswith("torchferry_") else name
        env["TORCHFERRY_PLUGIN_PATH"] = path
        env["TORCHFERRY_PLUGINS"] = name
        return {"path": path}, env
    env["TORCHFERRY_PLUGINS"] = plugin
    return {"name": plugin}, env


def _spawn(spec, env, timeout):
    """Runs one child; yields its records (from its report pipe) and then
    ('exit', returncode, stderr tail, hung). What the child writes to stdout
    is read and dropped: it is the kernels' to write."""
    read_fd, write_fd = os.pipe()
    cmd = [sys.executable, "-c", "import sys; from torchferry.check import child_main; "
           "sys.exit(child_main(sys.argv[1:]))", json.dumps({**spec, "report_fd": write_fd})]
    try:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True, pass_fds=(write_fd,))
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)  # the child's copy is the only writer: its exit ends the reports
    reports = os.fdopen(read_fd, "rb", buffering=0)
    sel = selectors.DefaultSelector()
    sel.register(reports, selectors.EVENT_READ, "reports")
    sel.register(proc.stdout, selectors.EVENT_READ, "out")
    sel.register(proc.stderr, selectors.EVENT_READ, "err")
    buffers = {"reports": b"", "out": b"", "err": b""}
    open_streams = 3
    hung = False
    deadline = time.monotonic() + timeout
    while open_streams:
        events = sel.select(max(0.0, deadline - time.monotonic()))
        if not events:
            hung = True
            os.killpg(proc.pid, signal.SIGKILL)
            break
        for key, _ in events:
            chunk = os.read(key.fileobj.fileno(), 65536)
            if not chunk:
                sel.unregister(key.fileobj)
                open_streams -= 1
                continue
            if key.data == "out":
                continue  # the kernels' output, not the check's
            buffers[key.data] += chunk
            if key.data == "reports":
                deadline = time.monotonic() + timeout  # progress: a case finished
                *lines, buffers["reports"] = buffers["reports"].split(b"\n")
                for line in lines:
                    text = line.decode("utf-8", "backslashreplace")
                    if text.startswith(RESULT_MARK):
                        try:
                            yield json.loads(text[len(RESULT_MARK):])
                        except ValueError:
                            pass  # garbled: the case it belonged to counts as without a result
    reports.close()
    proc.wait()
    yield ("exit", proc.returncode, buffers["err"].decode("utf-8", "backslashreplace")[-2000:], hung)


def _exit_text(returncode, hung, timeout):
    if hung:
        return f"no result within {timeout:g} s (killed)"
    if returncode < 0:
        try:
            return f"the process died of {signal.Signals(-returncode).name}"
        except ValueError:
            return f"the process died of signal {-returncode}"
    return f"the process exited with status {returncode}"


def _list(spec, env, timeout):
    for record in _spawn({**spec, "mode": "list"}, env, timeout):
        if isinstance(record, tuple):
            _, code, err, hung = record
            raise RuntimeError(f"loading the plugin: {_exit_text(code, hung, timeout)}\n{err}")
        if record["type"] == "list":
            return record
    raise RuntimeError("loading the plugin: the child gave no answer")


def run_check(plugin, ops=None, device="cpu", seed=0, references=(), kinds=None, dtypes=None,
              timeout=120.0, out=sys.stdout):
    """Checks `plugin`; returns the report (a dict) that --json writes."""
    from . import check_cases

    spec, env = _plugin_environment(plugin)
    report = {"plugin": plugin, "device": device, "seed": seed, "results": [], "problems": []}
    try:
        listing = _list(spec, env, timeout)
    except RuntimeError as e:  # the plugin's entry or init took the process down
        report["problems"].append(str(e))
        report["ok"] = False
        return report
    found = listing["found"]
    if "loaded" not in found:
        if "skipped" in found:
            report["problems"].append(f"the loader refused the plugin: {found['skipped']['reason']}")
        else:
            where = spec.get("path") or f"a plugin named '{plugin}'"
            report["problems"].append(
                f"expected {where} to load; the loader found none (it loaded: "
                f"{', '.join(listing['others']) or 'nothing'}); check the name, TORCHFERRY_PLUGIN_PATH "
                "or the entry point")
        report["ok"] = False
        return report
    p = found["loaded"]
    report["name"] = p["name"]
    report["version"] = p["version"]
    report["path"] = p["path"]
    kernels = [tuple(k) for k in p["kernels"] if k[1] == device]
    if ops:
        unknown = sorted(set(ops) - {k[0] for k in p["kernels"]})
        if unknown:
            raise ValueError(f"--ops: {p['name']} registers no kernel for {', '.join(unknown)}; it registers "
                             f"{', '.join(sorted({k[0] for k in p['kernels']}))}")
        kernels = [k for k in kernels if k[0] in ops]
    if dtypes:
        kernels = [k for k in kernels if k[2] in dtypes]
    if not kernels:
        raise ValueError(f"nothing to check: {p['name']} registers no kernel for device {device}"
                         + (f", ops {', '.join(ops)}" if ops else "") + (f", dtypes {', '.join(dtypes)}" if dtypes
                                                                         else ""))
    refs = {}
    for text in references:
        op, sep, target = text.rpartition("=")
        try:
            _load_reference(target)  # here first, so that a typo is an argument error
        except Exception as e:
            raise ValueError(f"--reference {target}: {type(e).__name__}: {e}") from None
        refs[op if sep else ""] = target
    kinds = list(kinds or check_cases.CASE_KINDS)
    report["kinds"] = kinds
    report["kernels"] = [list(k) for k in kernels]
    start = 0
    while start < len(kernels):
        run_spec = {**spec, "mode": "run", "kernels": kernels, "start": start, "kinds": kinds, "seed": seed,
                    "references": refs}
        current = None  # the case started and not finished
        last_kernel = start
        done = False
        for record in _spawn(run_spec, env, timeout):
            if isinstance(record, tuple):
                _, code, err, hung = record
                if done:
                    break
                why = _exit_text(code, hung, timeout)
                crashed = current or {"op": kernels[last_kernel][0], "device": kernels[last_kernel][1],
                                      "dtype": kernels[last_kernel][2], "kind": "(loading)",
                                      "seed": None, "index": last_kernel}
                report["results"].append({**crashed, "type": "case", "status": "hang" if hung else "crash",
                                          "detail": why + (f"; stderr: {err.strip()[-300:]}" if err.strip() else "")})
                start = crashed["index"] + 1
                break
            if record["type"] == "kernel":
                last_kernel = record["index"]
            elif record["type"] == "start":
                current = record
            elif record["type"] == "case":
                current = None
                report["results"].append(record)
            elif record["type"] == "done":
                done = True
        else:
            break
        if done:
            break
    _add_missing(report, kernels, kinds)
    report["checked"] = sum(r["status"] == "pass" for r in report["results"])
    report["ok"] = report["checked"] > 0 and not any(r["status"] in FAILING for r in report["results"])
    return report


def _add_missing(report, kernels, kinds):
    """A failure for every case of a kernel that ran to the end whose report
    never came back: a case the parent did not hear about was not checked,
    and must not pass by its absence."""
    heard = {(r["index"], r["kind"]) for r in report["results"]}
    died = {r["index"] for r in report["results"] if r["status"] in ("crash", "hang")}
    for index, (op, device, dtype) in enumerate(kernels):
        if index in died:
            continue
        for kind in kinds:
            if (index, kind) not in heard:
                report["results"].append({"type": "case", "index": index, "op": op, "device": device,
                                          "dtype": dtype, "kind": kind, "seed": None, "status": "fail",
                                          "detail": "no result came back for this case"})


def render(report, plugin_arg):
    """The table: op x dtype rows, a column per case kind, and every failure
    with the command that runs its case again."""
    lines = []
    if report["problems"]:
        lines.extend(f"check {plugin_arg}: FAILED: {p}" for p in report["problems"])
        return "\n".join(lines)
    lines.append(f"check {report['name']} {report['version']} ({report['path']}) on {report['device']}, "
                 f"seed {report['seed']}: {len(report['kernels'])} kernels")
    kinds = report["kinds"]
    rows = {}
    for r in report["results"]:
        rows.setdefault((r["op"], r["dtype"]), {})[r["kind"]] = r
    head = ["op", "dtype"] + kinds
    table = [head]
    for (op, dtype), cells in rows.items():
        table.append([op, dtype] + [CELLS[cells[k]["status"]] if k in cells else
                                    (CELLS["crash"] if any(c["kind"] == "(loading)" for c in cells.values())
                                     else "") for k in kinds])
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    for row in table:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    failures = [r for r in report["results"] if r["status"] in FAILING]
    notes = sorted({r["detail"] for r in report["results"] if r["status"] in ("no_reference", "reference_error")})
    lines.append("")
    lines.append("cells: " + ", ".join(f"{v} {k}" for k, v in CELLS.items()))
    for note in notes:
        lines.append(f"note: {note}")
    counts = {status: sum(r["status"] == status for r in report["results"]) for status in CELLS}
    if not failures and not counts["pass"]:
        # Nothing compared with a reference: the run says nothing of the plugin.
        lines.append(f"FAILED: no case was checked (0 passed, {counts['unsupported']} unsupported, "
                     f"{counts['no_reference'] + counts['reference_error']} without a reference, "
                     f"{counts['n/a']} not applicable); expected at least one case to run and match")
        return "\n".join(lines)
    if not failures:
        lines.append(f"PASSED: no case failed ({counts['pass']} passed, {counts['unsupported']} unsupported)")
        return "\n".join(lines)
    lines.append(f"FAILED: {len(failures)} case(s)")
    for r in failures:
        lines.append(f"  {r['op']} {r['dtype']} {r['kind']}: {r['status']}: {r['detail']}")
    first = failures[0]
    repro = (f"python -m torchferry check {plugin_arg} --device {report['device']} --ops {first['op']} "
             f"--dtypes {first['dtype']} --seed {report['seed']}")
    if first["kind"] != "(loading)":
        repro += f" --cases {first['kind']}"
    lines.append(f"first failing case (seed {first['seed']}), again: {repro}")
    return "\n".join(lines)


def main(args):
    from . import check_cases

    def split(text):
        return [t.strip() for t in text.split(",") if t.strip()] if text else None

    kinds = split(args.cases)
    unknown = sorted(set(kinds or ()) - set(check_cases.CASE_KINDS))
    if unknown:
        print(f"check: unknown case kind(s) {', '.join(unknown)}; expected some of "
              f"{', '.join(check_cases.CASE_KINDS)}", file=sys.stderr)
        return 2
    if args.json:
        # Before the run, not after minutes of it.
        from .user_error import writable_file

        writable_file(args.json, "--json", "name a file in a folder you can write to")
    try:
        report = run_check(args.plugin, ops=split(args.ops), device=args.device, seed=args.seed,
                           references=args.reference or (), kinds=kinds, dtypes=split(args.dtypes),
                           timeout=args.timeout)
    except (ValueError, RuntimeError) as e:
        print(f"check: {e}".encode("utf-8", "backslashreplace").decode("utf-8"), file=sys.stderr)
        return 2
    # A path argument may hold bytes that are not UTF-8: shown escaped.
    text = render(report, args.plugin)
    print(text.encode("utf-8", "backslashreplace").decode("utf-8"))
    if args.json:
        try:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=2)
        except OSError as e:
            print(f"check: could not write --json {args.json}: {e}", file=sys.stderr)
            return 2
    return 0 if report["ok"] else 1
