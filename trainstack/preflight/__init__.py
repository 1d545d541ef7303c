"""Preflight: the AWS account's state, checked before `pulumi up` (docs/preflight.md).

`runner.run` asks the account, family by family (identity, secrets, network, compute, eks, sagemaker: one module
each), through `aws.Account`, whose clients refuse any call that is not read-only; `model` holds what it found,
`render` shows it as text, Markdown or JSON; `capacity` searches where a GPU group can run; `command` wires both
into `python -m trainstack`. The judgements themselves live in stacks/account_rules.py, shared with the checks the
program makes during a real `pulumi preview` (components/account_checks.py), so both say the same thing.
"""
