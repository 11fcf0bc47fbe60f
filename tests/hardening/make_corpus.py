"""Writes the seed corpora under tests/hardening/corpus/, one folder per fuzz
target, from the readable descriptions below. Each fuzz target reads its input
front to back (fuzz/byte_reader.h), one field per read; a seed spells those
fields out in the order the target reads them, so that fuzzing starts from
every case worth having instead of from nothing.

    python tests/hardening/make_corpus.py          # rewrites the seed files
    python tests/hardening/make_corpus.py --check  # are they what it writes?

The op an op byte picks comes from loader/op_table.h, read here as the fuzz
targets read it (kOpTable's order), so a new op moves no seed onto another.
"""

import os
import re
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

OP_TABLE = os.path.join(HERE, "..", "..", "loader", "op_table.h")


def _op_table():
    """The built-in ops of loader/op_table.h in table order, the order the
    fuzz targets pick them in (an op byte b names kOpTable[b % kNumOps]):
    (name, schema, geometry) each. An entry opens with its schema, one or
    more adjacent string literals, and names one Geometry::."""
    with open(OP_TABLE, encoding="utf-8") as f:
        table = f.read().split("kOpTable[] = {", 1)[1].split("\n};", 1)[0]
    starts = [m.start() for m in re.finditer(r"^    \{", table, flags=re.M)]
    ops = []
    for start, end in zip(starts, starts[1:] + [len(table)]):
        entry = table[start:end]
        m = re.match(r'    \{((?:\s*"(?:[^"\\]|\\.)*")+)\s*,', entry)
        geometry = re.findall(r"\bGeometry::(k[A-Za-z]+)", entry)
        if m is None or len(geometry) != 1:
            raise ValueError(f"loader/op_table.h: cannot read the entry {entry[:60]!r}")
        schema = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1)))
        ops.append((schema.split("(", 1)[0], schema, geometry[0]))
    return ops


OP_TABLE_ENTRIES = _op_table()
OPS = [name for name, _, _ in OP_TABLE_ENTRIES]


def op_of_seed(name):
    """The op a call_args seed's file name says (the longest op name it
    starts with, then "_"), or None."""
    named = [op for op in OPS if name.startswith(op + "_")]
    return max(named, key=len) if named else None

# --- fuzz_descriptor ---------------------------------------------------------
# Dtype indices into kKnownDtypes: 0 float32, 1 float64, 2 float16, 3 bfloat16,
# 4 int8, 5 int16, 6 int32, 7 int64, 8 uint8, 9 bool, 10 uint16, 11 uint32,
# 12 uint64.


def u16(v):
    return struct.pack("<H", v)


def u32(v):
    return struct.pack("<I", v)


def i32(v):
    return struct.pack("<i", v)


def u64(v):
    return struct.pack("<Q", v)


def kernel(op=0, device=0, dtype=0, raw_dtype=None, fn=1, own_size=None):
    """One kernel entry (at most 32 in a seed): op is an index into the op
    list (or None for NULL,
    or bytes for a made-up name); device is the choice byte (0 cpu, 1 cuda,
    2 cuda_host, 3 rocm, 4 meta) or ('raw', value)."""
    b = bytes([0]) + u16(own_size) if own_size is not None else bytes([1])
    if op is None:
        b += bytes([0])
    elif isinstance(op, bytes):
        b += bytes([1, len(op)]) + op
    else:
        b += bytes([2, op])
    if isinstance(device, tuple):
        b += bytes([5]) + i32(device[1])
    else:
        b += bytes([device])
    b += bytes([dtype])
    if raw_dtype is not None:
        code, bits, lanes = raw_dtype
        b += bytes([0, code, bits]) + u16(lanes)
    else:
        b += bytes([1])
    b += bytes([1 if fn else 0])
    return b


def descriptor(host_minor=0, size=7, major=0, minor=0, name=b"cpu", valid_name=False,
               version=2, kind=0, count=None, stride=0, null_kernels=False, kernels=(),
               null_descriptor=False, version_bytes=None, rewrites=(), ops=()):
    """size/major/minor/version/kind/stride are the choice bytes the target
    reads (see fuzz_descriptor.cc); count None means len(kernels). Bytes in
    version_bytes (any, but NUL) are the version. rewrites: what an init
    then changes in an accepted descriptor, each the bytes of one rewrite
    (see rewrite()). ops: at most two op declarations (see op_decl())."""
    if version_bytes is not None:
        half = len(version_bytes) // 2
        version = bytes([1, half, len(version_bytes) - half]) + version_bytes
    b = bytes([host_minor, size])
    b += bytes([major]) if not isinstance(major, tuple) else bytes([3]) + u32(major[1])
    b += bytes([minor]) if not isinstance(minor, tuple) else bytes([3]) + u32(minor[1])
    if name is None:
        b += bytes([0])
    elif name == b"cpu":
        b += bytes([1, 0, 0])
    else:
        b += bytes([1, 1 if valid_name else 2, len(name)]) + name
    b += bytes([version]) if isinstance(version, int) else version
    b += bytes([kind]) if not isinstance(kind, tuple) else bytes([3]) + i32(kind[1])
    n = len(kernels) if count is None else count
    if n == "max+1":
        b += bytes([5])
    elif isinstance(n, tuple):
        b += bytes([4]) + u64(n[1])
    else:
        b += bytes([1, n])
    b += bytes([stride]) if not isinstance(stride, tuple) else bytes([6]) + u16(stride[1])
    b += bytes([0 if null_kernels else 1])
    for i, k in enumerate(kernels):
        b += k if i > 0 else k[1:]  # kernels[0] reads no own-size choice
    b += bytes([len(ops)]) + b"".join(ops)
    b += bytes([0 if null_descriptor else 1])
    if rewrites:
        b += bytes([len(rewrites)]) + b"".join(rewrites)
    return b


def op_decl(name=0, arg=None, doc=0):
    """One ABI 1.1 op declaration. name: DeclName's choice (0 'fz::f', 1
    'lambda::f', 2 'fz::__class__', 3 '__all__::g', 4 '__name__::f', 5
    'fz::import') or bytes after 'fz::'; arg: None for (Tensor x), else
    ArgName's choice (0 scale, 1 lambda, 2 __debug__); doc: None, 0 ('a
    doc'), bytes (any, but NUL), or (n, tail): 1019 + n bytes 'a' (n < 8),
    then tail (1 to 6 bytes) across the 1023-byte limit."""
    b = bytes([name]) if isinstance(name, int) else bytes([7, len(name)]) + name
    b += bytes([1]) if arg is None else bytes([0, arg])
    if doc is None:
        return b + bytes([0])
    if doc == 0:
        return b + bytes([1, 0])
    if isinstance(doc, bytes):
        return b + bytes([1, 1, len(doc)]) + doc
    n, tail = doc
    return b + bytes([1, 2, n, len(tail) - 1]) + tail


# Rewrite choices (fuzz_descriptor.cc): 0 fn NULL, 1 fn swapped, 2
# kernel_data, 3 op, 4 device, 5 dtype, 6 a later kernel's struct_size, 7
# fewer kernels, 8 name, 9 version, 10 kind, 11 minor, 12 set_option. The
# kernel-level ones read the kernel's index first (when there are kernels).


def rewrite(what, *args, kernel=0, has_kernels=True):
    b = bytes([what]) + (bytes([kernel]) if has_kernels else b"")
    for a in args:
        b += a if isinstance(a, bytes) else bytes([a])
    return b


def descriptor_seeds():
    abs_f32 = kernel(op=0)
    add_f32 = kernel(op=4)
    add_f64 = kernel(op=4, dtype=1)
    seeds = {
        "valid_three_kernels": descriptor(kernels=[abs_f32, add_f32, add_f64]),
        "valid_no_kernels": descriptor(kernels=[]),
        "valid_every_op_cpu": descriptor(kernels=[kernel(op=i) for i in range(len(OPS))]),
        "valid_cuda_bf16": descriptor(kernels=[kernel(op=0, device=1, dtype=3)]),
        "fallback_kind": descriptor(kind=1, kernels=[abs_f32]),
        "major_2": descriptor(major=2, kernels=[abs_f32]),
        "major_raw": descriptor(major=(3, 0xFFFFFFFF), kernels=[abs_f32]),
        "newer_minor_unknown_op": descriptor(minor=1, kernels=[abs_f32, kernel(op=b"gelu")]),
        "older_host_unknown_op": descriptor(minor=0, kernels=[kernel(op=b"op_from_the_future")]),
        "size_zero": descriptor(size=0, kernels=[abs_f32]),
        "size_8": descriptor(size=1, kernels=[abs_f32]),
        "size_16": descriptor(size=2, kernels=[abs_f32]),
        "size_v1_minus_8": descriptor(size=3, kernels=[abs_f32]),
        "size_larger": descriptor(size=5, kernels=[abs_f32]),
        "name_null": descriptor(name=None, kernels=[abs_f32]),
        "name_empty": descriptor(name=b"", kernels=[abs_f32]),
        "name_bad_chars": descriptor(name=b"Bad Name!", kernels=[abs_f32]),
        "name_64": descriptor(name=b"a" * 64, valid_name=True, kernels=[abs_f32]),
        "name_63": descriptor(name=b"b" * 63, valid_name=True, kernels=[abs_f32]),
        "kind_7": descriptor(kind=2, kernels=[abs_f32]),
        "kind_raw": descriptor(kind=(3, -1), kernels=[abs_f32]),
        "count_huge": descriptor(count=(4, 1 << 40), kernels=[]),
        "count_max_plus_one": descriptor(count="max+1", kernels=[abs_f32]),
        "kernels_null": descriptor(null_kernels=True, count=2, kernels=[]),
        "stride_small": descriptor(stride=2, kernels=[abs_f32]),
        "stride_zero": descriptor(stride=3, kernels=[abs_f32]),
        "stride_4096": descriptor(stride=4, kernels=[abs_f32, add_f32]),
        "stride_4104": descriptor(stride=5, kernels=[abs_f32]),
        "stride_larger": descriptor(stride=1, kernels=[abs_f32, add_f32]),
        "mixed_kernel_sizes": descriptor(kernels=[abs_f32, kernel(op=1, own_size=48)]),
        "fn_null": descriptor(kernels=[abs_f32, kernel(op=1, fn=0)]),
        "op_null": descriptor(kernels=[abs_f32, kernel(op=None)]),
        "op_long": descriptor(kernels=[kernel(op=b"x" * 99)]),
        "dtype_bad_code": descriptor(kernels=[kernel(op=0, raw_dtype=(3, 32, 1))]),
        "dtype_lanes_4": descriptor(kernels=[kernel(op=0, raw_dtype=(2, 32, 4))]),
        "device_meta": descriptor(kernels=[kernel(op=0, device=4)]),
        "device_7": descriptor(kernels=[kernel(op=0, device=("raw", 7))]),
        "duplicate_kernel": descriptor(kernels=[abs_f32, add_f32, kernel(op=0)]),
        "null_descriptor": descriptor(kernels=[abs_f32], null_descriptor=True),
        # Text that is not UTF-8: refused in a name, kept byte for byte in a
        # version.
        "name_latin1": descriptor(name=b"caf\xe9", kernels=[abs_f32]),
        "version_latin1": descriptor(version_bytes=b"caf\xe9 1.0", kernels=[abs_f32]),
        "version_invalid_utf8_300": descriptor(version_bytes=b"\xc3\x28\xff\xfe\xe9" * 60,
                                               kernels=[abs_f32]),
        # Declared ops' names and docs: Python must reach every accepted
        # name, and decode every accepted doc.
        "ops_good": descriptor(minor=1, kernels=[abs_f32], ops=[op_decl(0, arg=0, doc=0)]),
        "ops_keyword_namespace": descriptor(minor=1, kernels=[abs_f32], ops=[op_decl(0), op_decl(1)]),
        "ops_dunder_op": descriptor(minor=1, kernels=[abs_f32], ops=[op_decl(2)]),
        "ops_all_namespace": descriptor(minor=1, kernels=[abs_f32], ops=[op_decl(3)]),
        "ops_name_namespace": descriptor(minor=1, kernels=[abs_f32], ops=[op_decl(4)]),
        "ops_keyword_op": descriptor(minor=1, kernels=[abs_f32], ops=[op_decl(5)]),
        "ops_raw_name": descriptor(minor=1, kernels=[abs_f32], ops=[op_decl(b"Caf\xe9")]),
        "ops_keyword_arg": descriptor(minor=1, kernels=[abs_f32], ops=[op_decl(0, arg=1)]),
        "ops_dunder_arg": descriptor(minor=1, kernels=[abs_f32], ops=[op_decl(0, arg=2)]),
        "ops_doc_latin1": descriptor(minor=1, kernels=[abs_f32], ops=[op_decl(0, doc=b"caf\xe9")]),
        "ops_doc_cut_in_char": descriptor(minor=1, kernels=[abs_f32], ops=[op_decl(0, doc=(3, b"\xc3\xa9zz"))]),
        "ops_doc_broken_past_limit": descriptor(minor=1, kernels=[abs_f32],
                                                ops=[op_decl(0, doc=(4, b"\xe2\x82"))]),
        "ops_doc_broken_at_limit": descriptor(minor=1, kernels=[abs_f32], ops=[op_decl(0, doc=(2, b"\xff\xfe"))]),
        # What an init may do after validation.
        "rewrite_fn_null": descriptor(kernels=[abs_f32, add_f32], rewrites=[rewrite(0, kernel=1)]),
        "rewrite_fn_swap": descriptor(kernels=[abs_f32], rewrites=[rewrite(1, 1)]),
        "rewrite_fn_same": descriptor(kernels=[abs_f32], rewrites=[rewrite(1, 0)]),
        "rewrite_kernel_data": descriptor(kernels=[abs_f32, add_f32], rewrites=[rewrite(2, 0, kernel=1)]),
        "rewrite_op": descriptor(kernels=[abs_f32], rewrites=[rewrite(3, 2, 2)]),
        "rewrite_op_same": descriptor(kernels=[abs_f32], rewrites=[rewrite(3, 2, 0)]),
        "rewrite_op_unknown": descriptor(kernels=[abs_f32], rewrites=[rewrite(3, 1, 4, b"gelu")]),
        "rewrite_device_meta": descriptor(kernels=[abs_f32], rewrites=[rewrite(4, 2)]),
        "rewrite_dtype": descriptor(kernels=[abs_f32], rewrites=[rewrite(5, 1)]),
        "rewrite_struct_size": descriptor(kernels=[abs_f32, add_f32],
                                          rewrites=[rewrite(6, u16(8), kernel=1)]),
        "rewrite_fewer_kernels": descriptor(kernels=[abs_f32, add_f32, add_f64],
                                            rewrites=[rewrite(7, 1)]),
        "rewrite_name": descriptor(kernels=[abs_f32], rewrites=[rewrite(8, 1, 1, 5, b"other")]),
        "rewrite_name_latin1": descriptor(kernels=[abs_f32], rewrites=[rewrite(8, 1, 2, 4, b"caf\xe9")]),
        "rewrite_version_latin1": descriptor(kernels=[abs_f32],
                                             rewrites=[rewrite(9, 4, b"caf\xe9", 0)]),
        "rewrite_kind": descriptor(kernels=[abs_f32], rewrites=[rewrite(10, 1)]),
        "rewrite_minor": descriptor(kernels=[abs_f32], rewrites=[rewrite(11, 1)]),
        "rewrite_set_option": descriptor(kernels=[abs_f32], rewrites=[rewrite(12, 1)]),
        "rewrite_three_times": descriptor(kernels=[abs_f32, add_f32],
                                          rewrites=[rewrite(2, 1), rewrite(0, kernel=1),
                                                    rewrite(10, 0)]),
        "rewrite_no_kernels_name": descriptor(kernels=[],
                                              rewrites=[rewrite(8, 0, has_kernels=False)]),
    }
    return seeds


# --- fuzz_call_args ----------------------------------------------------------
# Read order (fuzz_call_args.cc, Call::Build, one case per Geometry): op; then
# per tensor its dtype (where it has its own), rank and dims (where they are
# not another tensor's), layout and fill; attributes after the tensors they go
# with; the out's kind last. Past the end every read is 0, so these spell out
# the fields and let zeros (or the filler) do the rest: a seed per op and dtype
# family.
#
# Byte meanings: op byte b -> kOpTable[b % kNumOps] (OPS, read from the table);
# dtype index (0 float32 .. 9 bool, 10..12 uint16..uint64; "mostly float"
# dtypes take a byte first, nonzero for a float dtype index 0..3); Rank byte
# r -> r % 5; Dim byte v -> 1 + v % 5 (0 when v % 16 == 0); then per tensor
# slack (Pick 4: 1 = none), layout (Pick 6: 0 compact, 1 transposed (two swap
# bytes follow, from rank 2), 3 expanded (a byte per dim, 0 = stride 0),
# 4 sliced (a step byte)), fill seed, extreme (Pick 8: 1 = small values); out
# kind (Pick 16: 5 = fresh, 3 = an input's view (the input's index follows),
# 4 = it shifted, 0 = wrong).

OUT = {"fresh": bytes([5]), "alias": bytes([3, 0]), "shifted": bytes([4, 0]), "wrong": bytes([0, 1, 2])}


def layout_bytes(layout=0, ndim=2):
    if layout == 1:
        extra = bytes([0, 1]) if ndim >= 2 else b""  # swap dims 0 and 1
    elif layout == 3:
        extra = bytes([0] + [1] * (ndim - 1)) if ndim else b""  # dim 0 expanded
    elif layout == 4:
        extra = bytes([1]) if ndim else b""  # every other element
    else:
        extra = b""
    return bytes([1, layout]) + extra + bytes([7, 1])


def shaped(rank, dims, layout=0):
    return bytes([rank]) + bytes(dims) + layout_bytes(layout, rank % 5)


def mostly_float(dtype):
    return bytes([1, dtype]) if dtype < 4 else bytes([0, dtype])


def number(value_byte=24):  # Pick 8 = 5: a small number, (24 - 16) / 4
    return bytes([5, value_byte])


def call_body(op, geometry, dtype, layout=0):
    """The bytes after the op byte, for an accepted call of `op` (one with the
    `geometry` of its loader/op_table.h entry: Call::Build reads by
    geometry). `layout` goes to the first tensor (embedding's table)."""
    x = shaped(2, [2, 3], layout)  # a [3, 4] tensor
    if geometry == "kSameShape":
        return bytes([dtype]) + x
    if geometry == "kBroadcast":
        # a tensor (1), partner kind 5 (keep the dims), drop byte, a byte per
        # dim (nonzero: keep it), same dtype (1); no swap; add's alpha
        partner = bytes([1, 5, 0, 1, 1, 1]) + layout_bytes()
        alpha = bytes([1]) + number() if op == "add" else b""
        return bytes([dtype]) + x + partner + bytes([0]) + alpha
    if geometry == "kClamp":  # min a number, max a tensor broadcast along dim 1
        return bytes([dtype]) + x + bytes([1, 2]) + number(20) + bytes([5, 0, 1, 0]) + layout_bytes()
    if geometry == "kStack":  # two [2, 2] tensors along dim 0
        return (bytes([dtype, 1, 1]) + shaped(2, [0x10 + 5, 1], layout) + bytes([1]) + layout_bytes()
                + bytes([4]))
    if geometry == "kCast":  # to float32, out given
        return bytes([dtype]) + x + bytes([1, 0])
    if geometry == "kLastDimHalved":  # [3, 8]
        return mostly_float(dtype) + bytes([2, 2, 3, 1]) + layout_bytes(layout)
    if geometry == "kRowNorm":  # x [3, 4], weight [4], eps 1e-6
        return (mostly_float(dtype) + bytes([2, 2, 3]) + layout_bytes(layout) + bytes([1])
                + layout_bytes(ndim=1) + bytes([1, 1]))
    if geometry == "kSoftmax":  # dim -1
        return mostly_float(dtype) + x + bytes([1, 2])
    if geometry == "kMatmul":  # [3, 4] x [4, 5]
        return mostly_float(dtype) + bytes([2, 3, 4, 0, 0, 1, 1]) + layout_bytes(layout) + bytes([1]) + layout_bytes()
    if geometry == "kNoop":  # two tensors
        return bytes([2]) + bytes([dtype]) + x + bytes([dtype]) + shaped(2, [2, 3])
    # attention
    if geometry == "kRotary":  # x [3, 4], cos and sin [3, 2], interleaved
        # cos: no shrink, keep every dim, not random; sin: not random, x's dtype
        return (
            mostly_float(dtype)
            + bytes([2, 2, 3])
            + layout_bytes(layout)
            + bytes([0, 0, 0, 1])
            + layout_bytes()
            + bytes([1, 1])
            + layout_bytes()
            + bytes([1, 1])
        )
    if geometry == "kAttention":  # [2, 3, 4, 4] x [2, 3, 5, 4], bool mask
        dims = bytes([1, 2, 3, 4, 3, 1, 1, 1, 1])  # b h l s e, no GQA group, Ev = E, 4-D
        mask = bytes([0, 1, 1, 1]) + layout_bytes(ndim=3)  # a [1, 4, 5] bool mask
        return (
            mostly_float(dtype)
            + dims
            + layout_bytes(layout, 4)
            + layout_bytes(ndim=4)
            + bytes([1])
            + layout_bytes(ndim=4)
            + mask
            + bytes([0, 1, 1, 0])
        )
    # linear
    if geometry == "kLinear":  # x [3, 4] @ weight [5, 4].T + bias [5]
        return linear_body(dtype, layout)
    if geometry == "kAddRowNorm":  # residual [3, 4] += x [3, 4], weight [4], eps 1e-6
        return add_rms_norm_body(dtype, layout)
    # embedding and cat
    if geometry == "kEmbedding":  # int32 ids [3] (small values, some past the table) into a [4, 3] table of dtype
        return bytes([1, 1]) + shaped(1, [2]) + bytes([1, 3, 2, dtype]) + layout_bytes(layout)
    if geometry == "kCat":  # [2, 3] and [2, 3] along dim 0: item kinds 2, sizes at dim 0 differ
        return (bytes([dtype, 1, 1, 2]) + bytes([2, 1, 2, 0]) + layout_bytes(layout) + bytes([2, 1])
                + layout_bytes() + bytes([3]))
    raise ValueError(f"no seed recipe for op {op} (Geometry::{geometry}); add one to call_body")


def linear_body(dtype, layout=0, rank=2, dims=(2, 3), bias=True):
    """k 4, n 5 (Dim bytes 3, 4); x of `rank` and `dims` with its last dim
    made k; weight [n, k] of x's dtype; bias [n] or none."""
    b = mostly_float(dtype) + bytes([3, 4, rank]) + bytes(dims) + bytes([1, 1, 1])
    b += layout_bytes(layout, rank) + bytes([1]) + layout_bytes()
    return b + (bytes([1, 1]) + layout_bytes(ndim=1) if bias else bytes([0]))


def add_rms_norm_body(dtype, layout=0, residual_layout=0):
    """x [3, 4]; residual of its shape and dtype; weight [4]; eps given."""
    return (mostly_float(dtype) + bytes([2, 2, 3]) + layout_bytes(layout) + bytes([1, 1])
            + layout_bytes(residual_layout) + bytes([1]) + layout_bytes(ndim=1) + bytes([1]))


def call_seeds():
    """Named <op>_<case>: the op byte of each is the op's index in OPS, and
    fuzz_call_args refuses to start on a seed whose op byte names another op
    than its file name does."""
    seeds = {}
    for op_index, (op, _, geometry) in enumerate(OP_TABLE_ENTRIES):
        def seed(body, out="fresh"):  # out: a key of OUT, or its bytes
            return bytes([op_index]) + body + OUT.get(out, out)

        for dtype, label in ((0, "f32"), (6, "i32"), (2, "f16")):
            seeds[f"{op}_{label}"] = seed(call_body(op, geometry, dtype))
        # A transposed and an expanded input, an aliasing out, a wrong out.
        seeds[f"{op}_transposed"] = seed(call_body(op, geometry, 0, layout=1))
        seeds[f"{op}_expanded"] = seed(call_body(op, geometry, 1, layout=3))
        for kind in ("alias", "shifted", "wrong"):
            seeds[f"{op}_{kind}_out"] = seed(call_body(op, geometry, 0), kind)
        # The cases of an op's own preparation.
        if geometry == "kLinear":
            seeds[f"{op}_no_bias"] = seed(linear_body(0, bias=False))
            seeds[f"{op}_one_row"] = seed(linear_body(0, dims=(5, 3)))  # x [1, 4]
            # x [2, 3, 4] with dims 0 and 1 swapped: its leading dims do not
            # nest, so they go in as [B, M].
            seeds[f"{op}_batched_transposed"] = seed(linear_body(0, layout=1, rank=3, dims=(1, 2, 3)))
        if geometry == "kAddRowNorm":
            # residual is written in place: an expanded one, or an out that is
            # the residual, must be refused.
            seeds[f"{op}_expanded_residual"] = seed(add_rms_norm_body(0, residual_layout=3))
            seeds[f"{op}_out_is_residual"] = seed(add_rms_norm_body(0), bytes([3, 1]))
            seeds[f"{op}_bf16"] = seed(add_rms_norm_body(3))
    for name, data in seeds.items():
        named, picked = op_of_seed(name), OPS[data[0] % len(OPS)]
        if named != picked:
            raise ValueError(f"call_args seed {name} picks op {picked}, not {named}")
    return seeds


# --- fuzz_dlpack_import ------------------------------------------------------
# Read order: behaviour (Pick 16: 0 refuses max_version, 1 not a capsule,
# 2 wrong name, 3 raises, else a capsule), versioned bit, writable bit, ndim
# choice (Pick 8: 0-4 -> that many dims, 5 negative, 6 16..71, 7 raw int32),
# then for each dim from the last: size choice (Pick 8: 0-5 -> that size,
# 6 negative, 7 raw int64), stride choice (Pick 4: 0 compact, 1 zero,
# 2 negative, 3 raw int64); then NULL strides (Pick 6 == 0), NULL data
# (Pick 8 == 0), device (Pick 8 == 0 raw, else Pick 4 == 0 cuda), device id,
# dtype index, raw dtype (Pick 8 == 0), byte_offset choice, NULL deleter,
# versioned minor, read-only bit.


def dlpack_seeds():
    def seed(behaviour=4, versioned=0, writable=0, ndim=2, dims=((3, 0), (2, 0)), tail=b""):
        b = bytes([behaviour, versioned, writable, ndim])
        for size, stride in dims:
            b += bytes([size, stride])
        return b + (tail or bytes([1, 1, 1, 1, 1, 0, 1, 2, 1, 1, 0]))

    return {
        "float32_2d": seed(),
        "float64_3d": seed(ndim=3, dims=((1, 0), (2, 0), (3, 0)),
                           tail=bytes([1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 0])),
        "scalar": seed(ndim=0, dims=()),
        "versioned": seed(versioned=1),
        "versioned_read_only_out": seed(versioned=1, writable=1,
                                        tail=bytes([1, 1, 1, 1, 1, 0, 1, 2, 1, 1, 1])),
        "refuses_max_version": seed(behaviour=0),
        "not_a_capsule": seed(behaviour=1),
        "wrong_capsule_name": seed(behaviour=2),
        "raises": seed(behaviour=3),
        "negative_ndim": bytes([4, 0, 0, 5, 0]) + bytes([1] * 12),
        "negative_size": seed(dims=((6, 0), (2, 0))),
        "huge_size": seed(dims=((7, 0), (2, 0))) [:6] + u64(1 << 62) + bytes([0, 2, 0]) + bytes([1] * 11),
        "zero_stride": seed(dims=((3, 1), (2, 1))),
        "negative_stride": seed(dims=((3, 2), (2, 0))),
        "null_strides_2d": seed(tail=bytes([0, 1, 1, 1, 1, 0, 1, 2, 1, 1, 0])),
        "null_data": seed(tail=bytes([1, 0, 1, 1, 1, 0, 1, 2, 1, 1, 0])),
        "cuda_device": seed(tail=bytes([1, 1, 1, 0, 1, 0, 1, 2, 1, 1, 0])),
        "unknown_dtype": seed(tail=bytes([1, 1, 1, 1, 1, 0, 0, 3, 32, 1, 0, 2, 1, 1, 0])),
        "deep_ndim": bytes([4, 0, 0, 6, 4]) + bytes([1, 0] * 24) + bytes([1] * 11),
    }


# --- fuzz_schema --------------------------------------------------------------
# The whole input is the schema text.


def schema_seeds():
    seeds = {f"builtin_{name}": schema.encode() for name, schema, _ in OP_TABLE_ENTRIES}
    seeds.update({
        "declared": b"acme::fused_gelu(Tensor x, Tensor? bias=None, *, float a=1.0, bool exact=True) -> Tensor",
        "written": b"acme::axpy(Tensor x, *, Scalar a=2, Tensor(a!) out) -> Tensor(a!)",
        "two_returns": b"acme::topk(Tensor x, int k=-1) -> (Tensor values, Tensor indices)",
        "bad_type": b"f(Tensr x) -> Tensor",
        "bad_default": b"f(int k=1e999) -> Tensor",
        "unclosed": b"f(Tensor(a! x",
        "nul": b"f(Tensor x)\x00 -> Tensor",
        "keyword_arg": b"acme::f(Tensor x, *, float lambda=1.0) -> Tensor",
        "dunder_arg": b"acme::f(Tensor x, int __debug__=0) -> Tensor",
    })
    return seeds


CORPORA = {
    "descriptor": descriptor_seeds,
    "call_args": call_seeds,
    "schema": schema_seeds,
    "dlpack_import": dlpack_seeds,
}


def write(folder, seeds):
    path = os.path.join(HERE, "corpus", folder)
    os.makedirs(path, exist_ok=True)
    for old in os.listdir(path):
        os.remove(os.path.join(path, old))
    for name, data in sorted(seeds.items()):
        with open(os.path.join(path, name), "wb") as f:
            f.write(data)
    print(f"{len(seeds)} seeds in tests/hardening/corpus/{folder}")


def check(folder, seeds):
    """The differences between the seeds on disk and `seeds`, one line each;
    for call_args, also each seed on disk whose op byte picks another op than
    its name says."""
    path = os.path.join(HERE, "corpus", folder)
    on_disk = {}
    for name in sorted(os.listdir(path)):
        with open(os.path.join(path, name), "rb") as f:
            on_disk[name] = f.read()
    problems = [f"{folder}/{name}: missing" for name in sorted(set(seeds) - set(on_disk))]
    problems += [f"{folder}/{name}: not written by make_corpus.py"
                 for name in sorted(set(on_disk) - set(seeds))]
    problems += [f"{folder}/{name}: stale" for name in sorted(set(seeds) & set(on_disk))
                 if seeds[name] != on_disk[name]]
    if folder == "call_args":
        for name, data in on_disk.items():
            named, picked = op_of_seed(name), OPS[(data[:1] or b"\0")[0] % len(OPS)]
            if named != picked:
                problems.append(f"{folder}/{name}: its op byte picks {picked}, not {named}")
    return problems


if __name__ == "__main__":
    if sys.argv[1:] == ["--check"]:
        corpora = {folder: make() for folder, make in CORPORA.items()}
        problems = [p for folder, seeds in corpora.items() for p in check(folder, seeds)]
        for p in problems:
            print(p)
        total = sum(map(len, corpora.values()))
        print(f"corpus: {total} seeds, {len(problems)} problems"
              + (" (python tests/hardening/make_corpus.py rewrites them)" if problems else ""))
        sys.exit(1 if problems else 0)
    if sys.argv[1:]:
        sys.exit(__doc__)
    for folder, make in CORPORA.items():
        write(folder, make())
