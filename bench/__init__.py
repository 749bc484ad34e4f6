"""Benchmarks (not tests): each module here with a `main(argv)` is one bench, run by `python -m bench NAME`."""
