"""What a whole `python -m trainstack plan --stack prod` costs (or another stack's), and what the contract and
journey tiers add.

Runs the real CLI in fresh processes (imports, program, contracts, policy review, report), REPEATS times, and
takes the median wall and CPU (user + system) seconds. With `--baseline DIR` it alternates each run with the
same command in another checkout (for example `git worktree add /tmp/base main`), so load on a shared machine
falls on both alike, and prints the change. CPU time is the figure to compare on a busy machine: wall time
there mostly measures the neighbours. Also times the contract tier and the journeys tier alone on one prod
recording, each in a fresh process after what the plan runs before it (the program and the policy review; for the
journeys, the contracts too), so each pays the lazy imports it is the first to need, as in the plan, and gives each
as a share of the whole plan's CPU (each tier's budget: 20%): what the plan would save without it. Exits 1, after
printing everything, when the plan / floor ratio or a tier's budget is missed.

Beside the plan it times the floor the same way, whole process, in turn with each plan run: a fresh interpreter
registering as many bare resources as the plan recorded (a provider and `aws.ec2.Vpc`s) under the same engine
and mocks (`bench/plan_scaling.py --worker floor`), and prints plan / floor CPU (target: at most 2). Beside that,
a typed floor: the same bare resources after importing the provider SDK modules the plan's resource types come
from (`provider_modules`), which a program keeping the providers' typed Args must import: what those imports
alone cost, and the plan against it.

    .venv/bin/python bench/prod_plan.py [--stack NAME] [--baseline DIR] [--repeats N]

Figures measured so far: docs/bench.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPEATS = 5
STACK = "prod"
FLOOR_RATIO = 2.0  # the whole plan may cost at most this many times the floor's whole process, CPU
TIER_BUDGET = 0.20  # the contract tier, and the journeys tier, may each cost at most this share of the plan's CPU


def command(stack: str) -> tuple[str, ...]:
    return ("-m", "trainstack", "plan", "--stack", stack, "--format", "json")  # stdout is captured


def timed_process(args: list[str], cwd: Path, stdin: str = "") -> tuple[float, float, str]:
    """Wall and CPU seconds of one child process (user + system), and its stdout; exits on failure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, input=stdin, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} in {cwd} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout


def one_run(tree: Path, stack: str = STACK) -> tuple[float, float]:
    """Wall and CPU seconds of one plan of `stack` in `tree`, run by this virtualenv's interpreter."""
    wall, cpu, _ = timed_process([sys.executable, *command(stack)], tree)
    return wall, cpu


def resource_types(tree: Path, stack: str = STACK) -> list[str]:
    """The type of each resource the plan of `stack` registers (its steps but the stack itself, as the floor
    counts)."""
    _, _, out = timed_process([sys.executable, *command(stack)], tree)
    return [step["type"] for step in json.loads(out)["steps"] if step["type"] != "pulumi:pulumi:Stack"]


# A type token's package (pulumi/pulumi `sdk/go/common/tokens`: package:module:Type) and the provider SDK that
# generates its Python module from the module part.
_SDKS = {"aws": "pulumi_aws", "aws-native": "pulumi_aws_native", "kubernetes": "pulumi_kubernetes"}


def provider_modules(types: list[str]) -> list[str]:
    """The provider SDK modules the resource `types` come from, in first-seen order, the ones that exist: what a
    program using the providers' typed Args for them must import. `aws:ec2/vpc:Vpc` is pulumi_aws.ec2,
    `kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy` pulumi_kubernetes.admissionregistration.v1,
    a provider itself its SDK's top module, a CRD's kind pulumi_kubernetes.apiextensions (its CustomResource);
    components have none."""
    found: dict[str, None] = {}
    for token in types:
        package, module, _ = token.split(":", 2)
        if package == "pulumi" and module == "providers":
            package, module = token.rsplit(":", 1)[1], "index"
        if package not in _SDKS:
            continue
        if package == "kubernetes":
            group, _, version = module.partition("/")
            parts = [group.split(".")[0], version]
        else:
            parts = [module.split("/")[0]]
        name = ".".join([_SDKS[package], *(p for p in parts if p and p != "index")])
        if not _exists(name) and package == "kubernetes":
            name = "pulumi_kubernetes.apiextensions"  # a CRD's kind, registered as a CustomResource
        if _exists(name):
            found[name] = None
    return list(found)


def _exists(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # its parent package is missing (a CRD group no SDK module types)
        return False


def floor_run(count: int, modules: list[str] | None = None) -> tuple[float, float]:
    """Wall and CPU seconds of a whole process registering `count` bare resources under the same engine; with
    `modules`, after importing them (the typed floor)."""
    typed = ["--import", ",".join(modules)] if modules else []
    wall, cpu, _ = timed_process(
        [sys.executable, str(ROOT / "bench" / "plan_scaling.py"), "--worker", "floor", *typed], ROOT, f"{count}\n"
    )
    return wall, cpu


# Run in a fresh interpreter: what the plan runs before the tier (trainstack/model/plan.py: the program, the policy
# review, then the contracts before the journeys), then the tier timed alone: the imports it is the first to need
# included, the ones the plan has made by then not.
_TIER_DRIVER = """
import gc, json, sys, time
gc.disable()  # as the command runs (trainstack/entry.py)
sys.path.insert(0, sys.argv[1])
from stacks.load import load_file
from trainstack.engine import run_program
from trainstack.review import review
stack, tier = sys.argv[2], sys.argv[3]
config = load_file(f"{sys.argv[1]}/stacks/Pulumi.{stack}.yaml")
recording = run_program(config, stack_name=stack)
review(recording, config.environment.value, waivers=config.waivers)
if tier == "journeys":
    from trainstack import contracts
    contracts.check(recording)
started, cpu = time.perf_counter(), time.process_time()
if tier == "contracts":
    from trainstack import contracts
    found = len(contracts.check(recording))
else:
    from trainstack import journeys
    found = sum(not journey.holds for journey in journeys.walk(recording, config))  # the broken ones
print(json.dumps([time.perf_counter() - started, time.process_time() - cpu, found]))
"""


def tier_seconds(tier: str, stack: str = STACK) -> tuple[float, float, int]:
    """Wall and CPU seconds one tier (`contracts` or `journeys`) adds to the plan of `stack` (`_TIER_DRIVER`), and
    what it found (inputs refused, journeys broken)."""
    done = subprocess.run(
        [sys.executable, "-c", _TIER_DRIVER, str(ROOT), stack, tier], capture_output=True, text=True, check=True
    )
    wall, cpu, found = json.loads(done.stdout.strip().splitlines()[-1])
    return float(wall), float(cpu), int(found)


def median(values: list[float]) -> float:
    return statistics.median(values)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="another checkout to time alongside, alternating")
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--stack", default=STACK, help="the stack to plan (default: prod)")
    args = parser.parse_args(argv)
    trees = {"this tree": ROOT, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in [*trees, "floor", "typed floor"]}
    types = resource_types(ROOT, args.stack)  # also warms the file cache and .pyc files; not counted
    count, modules = len(types), provider_modules(types)
    for tree in trees.values():
        one_run(tree, args.stack)
    floor_run(count, modules)
    for _ in range(args.repeats):
        for name, tree in trees.items():
            samples[name].append(one_run(tree, args.stack))
        samples["floor"].append(floor_run(count))
        samples["typed floor"].append(floor_run(count, modules))
    print(
        f"{args.stack} plan, median of {args.repeats} runs "
        f"(`python -m trainstack plan --stack {args.stack} --format json`):"
    )
    print("| tree | wall s | CPU s |")
    print("|---|---:|---:|")
    medians = {}
    for name, runs in samples.items():
        medians[name] = (median([w for w, _ in runs]), median([c for _, c in runs]))
        shown = {
            "floor": f"SDK floor ({count} bare resources, same engine)",
            "typed floor": f"typed floor (the same, after importing the {len(modules)} provider modules the plan's "
            "resource types come from)",
        }.get(name, name)
        print(f"| {shown} | {medians[name][0]:.2f} | {medians[name][1]:.2f} |")
    ratio = medians["this tree"][1] / medians["floor"][1]
    verdict = "within" if ratio <= FLOOR_RATIO else "NOT within"
    print(f"plan / floor, whole process CPU: {ratio:.2f} ({verdict} the target of {FLOOR_RATIO})")
    typed = medians["typed floor"][1]
    print(
        f"plan / typed floor: {medians['this tree'][1] / typed:.2f}; typed floor / floor: "
        f"{typed / medians['floor'][1]:.2f} (what importing the providers' typed Args alone costs)"
    )
    if args.baseline:
        wall = medians["this tree"][0] / medians["baseline"][0] - 1
        cpu = medians["this tree"][1] / medians["baseline"][1] - 1
        print(f"change against the baseline: wall {wall:+.1%}, CPU {cpu:+.1%}")
    plan_cpu = medians["this tree"][1]
    missed = ratio > FLOOR_RATIO
    for tier, found in (("contracts", "refused"), ("journeys", "broken")):
        wall, cpu, count = tier_seconds(tier, args.stack)
        share = cpu / plan_cpu
        missed |= share > TIER_BUDGET
        print(
            f"{tier} tier alone on the {args.stack} recording: wall {wall:.2f} s, CPU {cpu:.2f} s "
            f"({share:.1%} of the plan's CPU, {'within' if share <= TIER_BUDGET else 'NOT within'} "
            f"the budget of {TIER_BUDGET:.0%}), {count} {found}"
        )
    return 1 if missed else 0  # after every row is printed


if __name__ == "__main__":
    sys.exit(main())
