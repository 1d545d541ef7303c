"""The trainstack CrossGuard policy pack: rules in `rules/`; the facts it shares with the program in
`facts_generated.py` (written by `make pack-facts`), read through `facts.py`.

The checkout imports it as `policies` (trainstack/review.py, the tests); the CLI loads the directory under
its own package name (`__main__.py`), so every module of the pack imports its siblings relatively.
"""
