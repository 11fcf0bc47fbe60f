"""torchferry.bench: torchferry measured side by side with its peers.

Run it as `python -m torchferry bench [--quick] [--sections ...]`; see
`run.main`. Every comparison runs in one process in interleaved rounds, and a
peer that cannot run here is reported as skipped with the reason.
"""
