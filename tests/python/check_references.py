"""References for `python -m torchferry check --reference` in test_check.py:
right and wrong ones for the example plugin's example::axpby."""


def axpby(x, y, *, a, b):
    return a * x + b * y


def axpby_wrong_value(x, y, *, a, b):
    return a * x - b * y


def axpby_wrong_shape(x, y, *, a, b):
    return (a * x + b * y).sum(0)
