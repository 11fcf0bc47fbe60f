"""What vendor_plugin::scale computes, in torch: the reference that
`python -m torchferry check vendor_plugin --reference
torchferry_vendor_plugin.reference:scale` holds the kernel to (and its infer
to the shape and dtype this returns)."""


def scale(x, *, factor):
    return x * factor
