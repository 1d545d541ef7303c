"""The plan's model: what a plan is, apart from how it is shown. The pipeline (plan.py) turns the program's
recordings into a Report (report.py: summary, cost, health, capacity, contracts, journeys, review) and, with
`--against`, a PlanDiff (diff.py); time_to_ready.py and bringup.py read the same recording. The renderers in
trainstack/report/ read these and never the reverse (an import contract in pyproject.toml)."""
