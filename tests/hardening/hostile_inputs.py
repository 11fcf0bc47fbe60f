"""Hostile inputs to every op and to the bridge: each must be rejected cleanly.

"Cleanly" means: the call raises the exception a user would expect (never
SystemError, never a crash, never success), with a message, and afterwards the
process still computes correctly and every shim handle created was deleted.

Each input runs in a child forked from this process, so that one that kills
the process is reported as such and the others still run. Prints one line per
input and last:
    hostile inputs: N tried, M rejected cleanly
Exit status 0 only when M == N. Run it under any build of torchferry (the
AddressSanitizer run in tests/hardening/run.sh uses it too).
"""

import os
import signal
import sys
import warnings

import numpy as np
import torch

import torchferry
from torchferry import bridge, ops, plugins

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from forged_dlpack import Forged  # noqa: E402

warnings.filterwarnings("ignore")

REFUSED = (TypeError, ValueError, IndexError, NotImplementedError, OverflowError)
CASES = []


def hostile(name, call, expected=REFUSED, or_result=None):
    """`call` must raise one of `expected`; with `or_result`, returning a
    tensor equal to or_result() (torch's answer) is clean as well."""
    CASES.append((name, call, expected, or_result))


def f32(*shape):
    return torch.randn(*shape)


def np32(*shape):
    return np.ones(shape, dtype=np.float32)


class WrapperTensor(torch.Tensor):
    """A wrapper subclass: overrides __torch_dispatch__, as FakeTensor does."""

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return NotImplemented


class DlpackRaises:
    def __dlpack__(self, *args, **kwargs):
        raise RuntimeError("this producer refuses to export")


class DlpackReturnsInt:
    def __dlpack__(self, *args, **kwargs):
        return 5


class DlpackNotCallable:
    __dlpack__ = 5


x4 = f32(4)
i4 = torch.arange(4, dtype=torch.int32)

# --- not tensors at all ------------------------------------------------------
hostile("abs(None)", lambda: ops.abs(None))
hostile("abs(3.5)", lambda: ops.abs(3.5))
hostile("abs('text')", lambda: ops.abs("text"))
hostile("abs([1, 2, 3])", lambda: ops.abs([1.0, 2.0, 3.0]))
hostile("abs(object())", lambda: ops.abs(object()))
hostile("noop(tensor, 'text')", lambda: ops.noop(x4, "text"))
hostile("bridge.view(None)", lambda: bridge.view(None))

# --- arguments and keywords --------------------------------------------------
hostile("abs() with no argument", lambda: ops.abs())
hostile("abs(x, x): too many positionals", lambda: ops.abs(x4, x4))
hostile("abs(x, bogus=1)", lambda: ops.abs(x4, bogus=1))
hostile("abs(x, out=3)", lambda: ops.abs(x4, out=3))
hostile("abs(x, stream=5) on the cpu", lambda: ops.abs(x4, stream=5))
hostile("cast(x) without out", lambda: ops.cast(x4))
hostile("noop(2**20 + 1 tensors)", lambda: ops.noop(*([x4] * (2**20 + 1))))
hostile("stack(2**20 + 1 tensors)", lambda: ops.stack([x4] * (2**20 + 1)))

# --- dtypes, layouts and devices torchferry does not carry -------------------
hostile("abs(complex64)", lambda: ops.abs(torch.ones(4, dtype=torch.complex64)))
hostile("abs(uint16)", lambda: ops.abs(torch.ones(4, dtype=torch.uint16)))
hostile("abs(float8_e4m3fn)", lambda: ops.abs(torch.ones(4).to(torch.float8_e4m3fn)))
hostile("abs(qint8)", lambda: ops.abs(torch.quantize_per_tensor(x4, 0.1, 0, torch.qint8)))
hostile("abs(sparse_coo)", lambda: ops.abs(x4.to_sparse()))
hostile("abs(sparse_csr)", lambda: ops.abs(f32(2, 2).to_sparse_csr()))
hostile("abs(nested tensor)",
        lambda: ops.abs(torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])))
hostile("abs(meta)", lambda: ops.abs(torch.empty(4, device="meta")))
hostile("abs(wrapper subclass)",
        lambda: ops.abs(torch.Tensor._make_subclass(WrapperTensor, torch.ones(2))))
hostile("abs(storage resized to 0 bytes, as FSDP frees it)",
        lambda: ops.abs(_freed_storage()))
hostile("exp(int32)", lambda: ops.exp(i4))
hostile("exp(bool)", lambda: ops.exp(torch.ones(4, dtype=torch.bool)))
hostile("silu_and_mul(int32)", lambda: ops.silu_and_mul(torch.ones(2, 4, dtype=torch.int32)))
hostile("softmax(int64)", lambda: ops.softmax(torch.ones(4, dtype=torch.int64)))
hostile("matmul(int32)", lambda: ops.matmul(torch.ones(2, 2, dtype=torch.int32),
                                           torch.ones(2, 2, dtype=torch.int32)))


def _freed_storage():
    t = f32(4)
    t.untyped_storage().resize_(0)
    return t


# --- out= that cannot be written ---------------------------------------------
hostile("abs(x, out=wrong shape)", lambda: ops.abs(x4, out=f32(5)))
hostile("abs(x, out=wrong dtype)", lambda: ops.abs(x4, out=torch.empty(4, dtype=torch.float64)))
hostile("abs(x, out=expanded)", lambda: ops.abs(x4, out=torch.empty(1).expand(4)))
hostile("abs(x, out=partly overlapping x)", lambda: _partial_overlap(ops.abs))
hostile("add(x, y, out=x transposed)", lambda: _transposed_alias())
hostile("cast(x, out=x)", lambda: ops.cast(x4, out=x4))
hostile("matmul(a, b, out=a)", lambda: (lambda a: ops.matmul(a, f32(3, 3), out=a))(f32(3, 3)))
hostile("stack([x, y], out=overlapping x)",
        lambda: (lambda b: ops.stack([b[:2], b[2:4]], out=b[:4].view(2, 2)))(f32(8)))
hostile("abs(x, out=requires_grad)", lambda: ops.abs(x4, out=torch.zeros(4, requires_grad=True)),
        RuntimeError)
hostile("add(x requiring grad, y)", lambda: ops.add(f32(4).requires_grad_(), x4), RuntimeError)
hostile("abs(numpy, out=read-only numpy)", lambda: ops.abs(np32(4), out=_read_only(np32(4))))
hostile("abs(numpy) with no out to allocate", lambda: ops.abs(np32(4)))
hostile("abs(expand to 2**40 elements)", lambda: ops.abs(torch.empty(1).expand(2**40)),
        (RuntimeError, MemoryError))


def _partial_overlap(op):
    base = f32(8)
    return op(base[:4], out=base[1:5])


def _transposed_alias():
    x = f32(3, 3)
    return ops.add(x, x, out=x.t())


def _read_only(a):
    a.flags.writeable = False
    return a


# --- shapes, dims and scalars ------------------------------------------------
hostile("add(x, y): shapes that do not broadcast", lambda: ops.add(f32(3), f32(4)))
hostile("add(float32, float64)", lambda: ops.add(x4, torch.ones(4, dtype=torch.float64)))
hostile("add(x, y, alpha='a')", lambda: ops.add(x4, x4, alpha="a"))
hostile("add(int, int, alpha=1.5)", lambda: ops.add(i4, i4, alpha=1.5))
hostile("add(int, int, alpha=2**70)", lambda: ops.add(i4, i4, alpha=2**70))
hostile("mul of 17-dim tensors", lambda: ops.mul(torch.ones([1] * 17), torch.ones([1] * 17)))
hostile("clamp(x) with no bound", lambda: ops.clamp(x4))
hostile("clamp(x, min='a')", lambda: ops.clamp(x4, min="a"))
hostile("clamp(int, min=0.5)", lambda: ops.clamp(i4, min=0.5))
hostile("clamp(x, min=tensor that does not broadcast)", lambda: ops.clamp(x4, min=f32(3)))
hostile("stack([])", lambda: ops.stack([]))
hostile("stack(tensor)", lambda: ops.stack(x4))
hostile("stack([x, y]) of different shapes", lambda: ops.stack([x4, f32(5)]))
hostile("stack([x, None])", lambda: ops.stack([x4, None]))
hostile("stack([x, x], dim=5)", lambda: ops.stack([x4, x4], dim=5))
hostile("stack([x, x], dim=-2**63)", lambda: ops.stack([x4, x4], dim=-(2**63)))
hostile("stack([x], dim='0')", lambda: ops.stack([x4], dim="0"))
hostile("silu_and_mul(odd last dim)", lambda: ops.silu_and_mul(f32(2, 3)))
hostile("silu_and_mul(0-dim)", lambda: ops.silu_and_mul(torch.tensor(1.0)))
hostile("rms_norm(x, weight of the wrong size)", lambda: ops.rms_norm(f32(2, 4), f32(3)))
hostile("rms_norm(x, w, eps='a')", lambda: ops.rms_norm(f32(2, 4), f32(4), eps="a"))
hostile("rms_norm(0-dim)", lambda: ops.rms_norm(torch.tensor(1.0), f32(1)))
hostile("softmax(x, dim=5)", lambda: ops.softmax(f32(2, 3), dim=5))
hostile("softmax(x, dim=1.5)", lambda: ops.softmax(f32(2, 3), dim=1.5))
hostile("softmax(x, dim=2**70)", lambda: ops.softmax(x4, dim=2**70))
hostile("matmul(1-D, 1-D) of sizes 4 and 3", lambda: ops.matmul(x4, f32(3)))
hostile("matmul: inner sizes differ", lambda: ops.matmul(f32(2, 3), f32(4, 2)))
hostile("matmul(4-D, 4-D), batches 2 and 3", lambda: ops.matmul(f32(2, 1, 2, 2), f32(3, 1, 2, 2)))
hostile("matmul: batches 2 and 3", lambda: ops.matmul(f32(2, 2, 2), f32(3, 2, 2)))
_empty_batch = (torch.ones(0, 4, 2), torch.ones(2, 3))
hostile("matmul of a batch of 0 by a 2-D operand", lambda: ops.matmul(*_empty_batch),
        or_result=lambda: torch.matmul(*_empty_batch))
hostile("matmul of a 2-D operand by a batch of 0",
        lambda: ops.matmul(torch.ones(4, 2), torch.ones(0, 2, 3)),
        or_result=lambda: torch.matmul(torch.ones(4, 2), torch.ones(0, 2, 3)))

# --- DLPack producers that misbehave -----------------------------------------
hostile("__dlpack__ raises", lambda: ops.noop(DlpackRaises()))
hostile("__dlpack__ returns an int", lambda: ops.noop(DlpackReturnsInt()))
hostile("__dlpack__ is not callable", lambda: ops.noop(DlpackNotCallable()))
hostile("capsule of the wrong name", lambda: ops.noop(Forged(capsule_name=b"not_dltensor")))
hostile("numpy complex64", lambda: ops.abs(np.ones(4, np.complex64), out=np.ones(4, np.complex64)))
hostile("numpy datetime64", lambda: ops.noop(np.array(["2020-01-01"], dtype="datetime64[D]")))
hostile("DLPack dtype with 4 lanes", lambda: ops.noop(Forged(lanes=4)))
hostile("DLPack dtype code 9", lambda: ops.noop(Forged(code=9)))
hostile("DLPack device 7 (vulkan)", lambda: ops.noop(Forged(device=7)))
hostile("DLPack 2-D tensor without strides", lambda: ops.noop(Forged(shape=(2, 2), strides=None)))
hostile("DLPack read-only versioned tensor as out",
        lambda: ops.abs(np32(4), out=Forged(versioned=True, read_only=True)))
hostile("DLPack negative ndim", lambda: ops.noop(Forged(shape=(), ndim=-1)))
hostile("DLPack negative size", lambda: ops.abs(Forged(shape=(-4,)), out=np32(4)))
hostile("DLPack negative size, out aliasing it",
        lambda: (lambda f: ops.abs(f, out=f))(Forged(shape=(-4,))))
hostile("DLPack sizes whose product overflows int64",
        lambda: (lambda f: ops.abs(f, out=f))(Forged(shape=(2**62, 4))))
hostile("DLPack non-empty tensor with a NULL data pointer",
        lambda: ops.abs(Forged(null_data=True), out=np32(4)))
hostile("DLPack producer whose deleter runs Python, in a call refused later",
        lambda: _python_deleter_refused(), ValueError)


def _python_deleter_refused():
    """The deleter runs when the refused call releases its tensors; Python
    code must not run with the refusal's exception pending."""
    producer = Forged(python_deleter=True)
    try:
        ops.abs(producer, out=np32(5))  # out of the wrong shape
    finally:
        if producer.deleted != 1:
            raise AssertionError(f"the deleter ran {producer.deleted} times; expected once")


# --- generated: argument names, DLPack versions and exceptions, int ranges ---
# A fixed seed, so that a run repeats the last one; each case is its own child.
_rng = __import__("random").Random(20261201)


def _odd_name(rng):
    """A keyword name mixing ASCII, lone surrogates, NUL, astral characters."""
    pools = [(0x61, 0x7A), (0xD800, 0xDFFF), (0, 0x1F), (0x80, 0xFF), (0x1F600, 0x1F64F)]
    return "".join(chr(rng.randint(*rng.choice(pools))) for _ in range(rng.randint(1, 12)))


for _i in range(40):
    _name = _odd_name(_rng)
    hostile(f"keyword name #{_i} {_name.encode('utf-8', 'backslashreplace')[:24]!r}",
            lambda n=_name: ops.add(f32(2), f32(2), **{n: 1}), expected=TypeError)

for _i in range(12):
    _version = (_rng.choice([0, 2, 3, 2**31, 2**32 - 1]), _rng.randint(0, 2**32 - 1))
    hostile(f"DLPack versioned tensor claiming version {_version}",
            lambda v=_version: ops.abs(Forged(versioned=True, version=v), out=f32(4)),
            expected=BufferError)


class _DlpackRaisesThis:
    def __init__(self, exc):
        self.exc = exc

    def __dlpack__(self, *args, **kwargs):
        raise self.exc


for _exc in (KeyboardInterrupt("from __dlpack__"), SystemExit(3), MemoryError("from __dlpack__"),
             TypeError("a TypeError of its own"), BufferError("busy")):
    hostile(f"__dlpack__ raises {type(_exc).__name__}",
            lambda e=_exc: ops.abs(f32(4), out=_DlpackRaisesThis(e)),
            expected=(type(_exc),) if not isinstance(_exc, BufferError) else TypeError)

for _dtype in (torch.int8, torch.int16, torch.int32, torch.uint8):
    _info = torch.iinfo(_dtype)
    for _value in (_info.max + 1, _info.min - 1 if _info.min else -_info.max - 1, 2**63, -2**70):
        hostile(f"clamp {_dtype} with min={_value}",
                lambda d=_dtype, v=_value: ops.clamp(torch.zeros(4, dtype=d), min=v),
                expected=OverflowError)


# --- the bridge and plugins from Python --------------------------------------
hostile("bridge.set_path('bogus')", lambda: bridge.set_path("bogus"))
hostile("bridge.set_path(None)", lambda: bridge.set_path(None))
hostile("plugins.set_option on an unknown plugin", lambda: plugins.set_option("nope", "k", "v"))
hostile("plugins.set_option on a plugin without options",
        lambda: plugins.set_option("cpu", "k", "v"))


def still_works():
    """The process computes correctly and holds no shim handle afterwards."""
    x = torch.tensor([-1.5, 2.0, -0.0, 3.25])
    out = torch.empty(4)
    ops.add(x, x, alpha=2.0, out=out)
    if out.tolist() != [-4.5, 6.0, 0.0, 9.75]:
        return f"add computes {out.tolist()} afterwards"
    if ops.abs(x).tolist() != [1.5, 2.0, 0.0, 3.25]:
        return "abs computes wrongly afterwards"
    counts = bridge.path_counts()
    if counts["shim_handles_created"] != counts["shim_handles_deleted"]:
        return (f"{counts['shim_handles_created']} shim handles created but "
                f"{counts['shim_handles_deleted']} deleted")
    return None


def run_one(call, expected, or_result):
    """In the child: '' when the input was rejected cleanly, else why not."""
    try:
        result = call()
    except SystemError as e:
        return f"SystemError (an exception lost inside the C code): {e}"
    except expected as e:
        if not str(e):
            return f"{type(e).__name__} without a message"
        problem = still_works()
        return f"rejected with {type(e).__name__}, but {problem}" if problem else ""
    except BaseException as e:  # noqa: BLE001 - anything else is the finding
        names = " or ".join(t.__name__ for t in (expected if isinstance(expected, tuple)
                                                  else (expected,)))
        return f"raised {type(e).__name__} ({str(e)[:200]}); expected {names}"
    if or_result is not None:
        want = or_result()
        if (isinstance(result, torch.Tensor) and result.shape == want.shape
                and torch.equal(result, want)):
            return still_works() or ""
        shape = tuple(result.shape) if isinstance(result, torch.Tensor) else type(result).__name__
        return f"returned {shape}; expected torch's {tuple(want.shape)} or a refusal"
    return "accepted: no exception"


def main():
    clean = 0
    for name, call, expected, or_result in CASES:
        sys.stdout.flush()
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            try:
                answer = run_one(call, expected, or_result)
            except BaseException as e:  # noqa: BLE001
                answer = f"the check itself failed: {e!r}"
            os.write(write_end, ("R" + answer).encode())
            os.close(write_end)
            os._exit(0)
        os.close(write_end)
        chunks = []
        while True:
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(read_end)
        _, status = os.waitpid(pid, 0)
        answer = b"".join(chunks).decode(errors="replace")
        if os.WIFSIGNALED(status):
            why = f"the process died of {signal.Signals(os.WTERMSIG(status)).name}"
        elif os.WEXITSTATUS(status) != 0 or not answer.startswith("R"):
            why = f"the process exited with status {os.WEXITSTATUS(status)} (a sanitizer report?)"
        else:
            why = answer[1:]
        if why:
            print(f"FAIL {name}: {why}")
        else:
            clean += 1
            print(f"ok   {name}")
    summary = f"hostile inputs: {len(CASES)} tried, {clean} rejected cleanly"
    print(summary)
    count_file = os.environ.get("TF_HARDENING_COUNT_FILE")
    if count_file:
        with open(count_file, "w") as f:
            f.write(summary + "\n")
    return 0 if clean == len(CASES) else 1


if __name__ == "__main__":
    print(f"torch {torch.__version__}, torchferry from {os.path.dirname(torchferry.__file__)}, "
          f"bridge path {bridge.path()}")
    sys.exit(main())
