"""ABI.md's history is generated from the dates where each thing is defined
(abi/torchferry.h, loader/op_table.h, loader/dtype_table.h), and those dates
agree with each other and with the frozen minors of tests/abi."""

import os

from torchferry import _C, abi_history, op_docs, ops

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def read(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


HEADER = read("abi", "torchferry.h")
MINOR = abi_history.header_minor(HEADER)
BUILTIN = [s for s in ops.schemas() if s["declared_by"] is None]


def frozen_ops(minor):
    return [line for line in read("tests", "abi", f"v1_{minor}", "ops.txt").splitlines()
            if line and not line.startswith("#")]


def test_abi_md_carries_the_generated_history():
    text = read("abi", "ABI.md")
    assert op_docs.history_table(ROOT) in text, "abi/ABI.md's history is stale: run ./dev generate"
    assert text.startswith(f"# The torchferry plugin ABI, version 1.{MINOR}\n")


def test_the_running_host_speaks_the_header_minor():
    assert _C.ABI_VERSION == f"1.{MINOR}"


def test_every_built_in_op_is_dated_and_1_1_is_what_it_was():
    since = {s["name"]: s["since"] for s in BUILTIN}
    assert all(s["since"] is None for s in ops.schemas() if s["declared_by"])
    # 1.0 and 1.1: the 14 ops of the first release; the six after them, 1.2.
    assert frozen_ops(0) == frozen_ops(1) == [s["name"] for s in BUILTIN][:14]
    assert {since[name] for name in frozen_ops(1)} == {"1.0"}
    six = ["rotary_embedding", "scaled_dot_product_attention", "linear", "embedding", "cat", "add_rms_norm"]
    assert [since[name] for name in six] == ["1.2"] * 6
    for minor in range(MINOR + 1):
        known = [s["name"] for s in BUILTIN if int(s["since"].split(".")[1]) <= minor]
        assert known[: len(frozen_ops(minor))] == frozen_ops(minor)
        if minor < MINOR:
            assert known == frozen_ops(minor), f"an op is dated 1.{minor} after 1.{minor} was released"


def test_the_header_dates_dtypes_as_the_dtype_table_does():
    from_header = {i.name: i.minor for i in abi_history.header_items(HEADER) if i.kind == "dtype"}
    assert from_header == abi_history.dtype_table_minors(read("loader", "dtype_table.h"))
    assert from_header["uint16"] == 2 and from_header["float32"] == 0


def test_what_came_after_1_1_is_dated_1_2():
    items = {(i.kind, i.name): i.minor for i in abi_history.header_items(HEADER)}
    assert items[("constant", "TF_ERROR_OUT_OF_RANGE")] == 2
    assert items[("constant", "TF_MAX_NDIM")] == 1
    assert items[("field", "tf_plugin.ops")] == items[("field", "tf_plugin.num_ops")] == 1
    assert items[("type", "tf_op_decl")] == items[("type", "tf_infer_fn")] == 1
    assert items[("key", "host.version")] == items[("key", "torch.version")] == 0
    assert items[("field", "tf_host_api.query")] == 0


def test_the_dating_convention_reads_each_form():
    text = """
#define TF_A 1
#define TF_B 2 /* since 1.3 */

/* since 1.4: a group */
#define TF_C 3
#define TF_D 4

#define TF_E 5
typedef struct tf_s {
  size_t struct_size;
  /* a comment */
  int32_t old;
  /* --- since 1.2 --- */
  void (*service)(int32_t level,
                  const char* message);
  int32_t next; /* since 1.5 */
} tf_s;
/* dtype x8, y8: since 1.6
   key "k.v": since 1.7 */
"""
    got = {(i.kind, i.name): i.minor for i in abi_history.header_items(text)}
    assert got == {
        ("constant", "TF_A"): 0, ("constant", "TF_B"): 3, ("constant", "TF_C"): 4, ("constant", "TF_D"): 4,
        ("constant", "TF_E"): 0, ("type", "tf_s"): 0, ("field", "tf_s.struct_size"): 0, ("field", "tf_s.old"): 0,
        ("field", "tf_s.service"): 2, ("field", "tf_s.next"): 5, ("dtype", "x8"): 6, ("dtype", "y8"): 6,
        ("key", "k.v"): 7,
    }  # fmt: skip
