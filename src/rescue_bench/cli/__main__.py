"""``python -m rescue_bench.cli``: the ``rescue`` command."""

from rescue_bench.cli import main

main()
