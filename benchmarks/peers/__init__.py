"""The peers of ``benchmarks/bench_peers.py``: the libraries, what they share with it, the
report."""
