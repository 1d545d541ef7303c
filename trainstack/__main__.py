"""`python -m trainstack`: the same as the `trainstack` command (trainstack/entry.py, trainstack/cli.py)."""

from trainstack.entry import run

run()
