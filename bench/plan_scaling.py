"""How the offline plan scales with the number of GPU node groups, next to the SDK's own floor.

Plans copies of the prod stack with 1 to 64 GPU node groups (p5.48xlarge, all EFA interfaces, one AZ) under
the mock engine, and the same number of bare resources (`aws.ec2.Vpc` with an explicit provider) under the
same engine: the floor no program can beat. A GPU group's resources carry more inputs than a bare VPC (launch
templates, policy documents, Helm values), and the SDK's cost per resource grows with what it serialises, so a
second, shaped floor registers exactly what the plan registered (the same types, names, parents, providers,
dependencies and recorded inputs) as bare `CustomResource`s and `ComponentResource`s: the SDK's own cost for
those resources, without the program's logic, typed Args or Outputs. The per-resource target is judged
against the shaped floor; the bare one is shown beside it. Plan and floors each run in their own fresh
interpreter (a worker this script starts with `--worker plan|floor|shaped`), so none pays for another's heap
or garbage, and they are asked in turn, run for run, so load on a shared machine falls on all alike. Figures
are CPU seconds of the run alone (imports and warm-up excluded). Reports seconds per run and per resource,
checks that plan time grows linearly with resources (least-squares fit, R² >= 0.98) and that each added
resource costs at most 1.3 times the shaped floor's (ratio of the fits' slopes), and writes the table into
docs/bench.md's `benchmarks` section with the machine it ran on. Run it once (`make bench`); it is not a test;
exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import copy
import gc
import importlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SIZES = (1, 2, 4, 8, 16, 32, 64)
PAGE = ROOT / "docs" / "bench.md"
SECTION = "benchmarks"
LINEAR_R2 = 0.98  # a straight line must explain at least this share of the variance
MARGINAL_RATIO = 1.3  # each added resource may cost at most this many times the floor's added resource


@dataclass(frozen=True)
class Row:
    groups: int
    resources: int
    plan_s: float
    floor_s: float
    shaped_s: float | None = None  # the shaped floor (module docstring), when measured

    @property
    def plan_ms_per_resource(self) -> float:
        return self.plan_s / self.resources * 1000

    @property
    def floor_ms_per_resource(self) -> float:
        return self.floor_s / self.resources * 1000


# ---------------------------------------------------------------------------------------- pure helpers


def linear_fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float, float]:
    """Least squares y = slope * x + intercept; returns (slope, intercept, r squared)."""
    n = len(xs)
    if n < 2 or len(set(xs)) < 2:
        raise ValueError("a fit needs at least two distinct x values")
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mean_x) ** 2 for x in xs)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True))
    slope = sxy / sxx
    intercept = mean_y - slope * mean_x
    ss_tot = sum((y - mean_y) ** 2 for y in ys)
    ss_res = sum((y - (slope * x + intercept)) ** 2 for x, y in zip(xs, ys, strict=True))
    r2 = 1.0 if ss_tot == 0 else 1 - ss_res / ss_tot
    return slope, intercept, r2


def group_spec(index: int) -> dict[str, Any]:
    """One GPU node group of the benchmark stacks."""
    return {
        "name": f"p5-{index:02d}",
        "instance_type": "p5.48xlarge",
        "availability_zone": "us-east-1a",
        "capacity": {"type": "on_demand"},
        "min_size": 0,
        "desired_size": 2,
        "max_size": 2,
    }


def scaled_cluster(prod: dict[str, Any], groups: int) -> dict[str, Any]:
    """The prod `trainstack:cluster` object with `groups` GPU node groups and a budget that fits them."""
    cluster = copy.deepcopy(prod)
    cluster["gpu_node_groups"] = [group_spec(i) for i in range(groups)]
    cluster["cost"]["max_gpus"] = groups * 2 * 8
    validation = cluster["kubernetes"].get("validation")
    if validation:
        validation["nodes"] = 2
        validation.pop("node_group", None)
    for team in cluster["kubernetes"]["teams"]:
        team["gpu_quota"] = min(team["gpu_quota"], groups * 2 * 8)
    return cluster


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        model = platform.processor() or model
    system = f"{platform.system()} {platform.machine()}"
    return f"{os.cpu_count()} CPUs ({model}), Python {platform.python_version()}, {system}"


def marginal_ratio(fit: tuple[float, float, float], floor_fit: tuple[float, float, float]) -> float:
    """What one added resource costs in the plan, in units of what it costs the floor (ratio of the slopes)."""
    return fit[0] / floor_fit[0]


def met(fit: tuple[float, float, float], floor_fit: tuple[float, float, float]) -> bool:
    """Both targets: time linear in resources, and each added resource within MARGINAL_RATIO of the floor's."""
    return fit[2] >= LINEAR_R2 and marginal_ratio(fit, floor_fit) <= MARGINAL_RATIO


def _signed(value: float) -> str:
    return f"{'-' if value < 0 else '+'} {abs(value):.2f}"


FLAT = 0.10  # per-resource cost that moves less than this share from the smallest to the largest size is flat


def findings(
    rows: Sequence[Row],
    fit: tuple[float, float, float],
    floor_fit: tuple[float, float, float],
    floor_name: str = "the floor",
) -> list[str]:
    """The prose under the table, every number taken from the measurements: how the plan compares with the floor,
    whether time is linear in resources (by the fit), and how the cost per resource moves with size (a fit can
    be linear to R² 0.99 while each resource gets dearer, so both are reported)."""
    ratios = [r.plan_s / r.floor_s for r in rows]
    first, last = rows[0], rows[-1]
    plan_trend = last.plan_ms_per_resource / first.plan_ms_per_resource - 1
    floor_trend = last.floor_ms_per_resource / first.floor_ms_per_resource - 1

    def trend(change: float) -> str:
        return "about flat" if abs(change) < FLAT else ("rising" if change > 0 else "falling")

    verdict = "linear" if fit[2] >= LINEAR_R2 else "NOT linear"
    marginal = marginal_ratio(fit, floor_fit)
    within = "within" if marginal <= MARGINAL_RATIO else "NOT within"
    return [
        f"Per resource, a trainstack plan costs {min(ratios):.1f} to {max(ratios):.1f} times the SDK's floor "
        f"(plan / floor column): the components' pure logic, pydantic specs and policy documents on top of bare "
        "registrations.",
        f"By the least-squares fit, plan time is {verdict} in resources (R² {fit[2]:.4f}, threshold {LINEAR_R2}): "
        f"each added resource costs {fit[0] * 1000:.2f} ms, against {floor_fit[0] * 1000:.2f} ms for {floor_name} "
        f"(R² {floor_fit[2]:.4f}), {marginal:.2f} times the floor's: {within} the target of {MARGINAL_RATIO}.",
        f"The cost per resource is {trend(plan_trend)} for the plan: {first.plan_ms_per_resource:.2f} ms at "
        f"{first.resources} resources, {last.plan_ms_per_resource:.2f} ms at {last.resources} ({plan_trend:+.0%}); "
        f"the floor's is {trend(floor_trend)} ({first.floor_ms_per_resource:.2f} to "
        f"{last.floor_ms_per_resource:.2f} ms, {floor_trend:+.0%}).",
    ]


def markdown(
    rows: Sequence[Row],
    fit: tuple[float, float, float],
    floor_fit: tuple[float, float, float],
    host: str,
    date: str,
    repeats: int = 5,
    shaped_fit: tuple[float, float, float] | None = None,
) -> str:
    """The table and its sentences. With `shaped_fit`, the per-resource target is judged against the shaped
    floor (module docstring) and the bare floor is shown beside it."""
    slope, intercept, r2 = fit
    judged = shaped_fit if shaped_fit is not None else floor_fit
    lines = [
        f"`make bench` (bench/plan_scaling.py) on {date}: {host}. Copies of the prod stack with N p5.48xlarge "
        f"groups, median CPU seconds of {repeats} runs each under the mock engine (`trainstack.engine.run_program`, "
        "no policy review); the floor is the same number of bare `aws.ec2.Vpc` resources under the same engine, "
        "in its own fresh interpreter, run in turn with the plan"
        + (
            "; the shaped floor registers what the plan registered (same types, parents, providers, dependencies "
            "and inputs) as bare resources, in a third interpreter."
            if shaped_fit is not None
            else "."
        ),
        "",
        "| GPU groups | resources | plan s | ms / resource | floor s | floor ms / resource | plan / floor |"
        + (" shaped floor s | plan / shaped |" if shaped_fit is not None else ""),
        "|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if shaped_fit is not None else ""),
    ]
    for r in rows:
        shaped = f" {r.shaped_s:.2f} | {r.plan_s / r.shaped_s:.1f}x |" if shaped_fit is not None and r.shaped_s else ""
        lines.append(
            f"| {r.groups} | {r.resources} | {r.plan_s:.2f} | {r.plan_ms_per_resource:.2f} | {r.floor_s:.2f} | "
            f"{r.floor_ms_per_resource:.2f} | {r.plan_s / r.floor_s:.1f}x |{shaped}"
        )
    verdict = "linear" if r2 >= LINEAR_R2 else "NOT linear"
    lines += [
        "",
        f"Fit: plan seconds = {slope * 1000:.2f} ms x resources {_signed(intercept)} s (R² {r2:.4f}: {verdict}); "
        f"floor = {floor_fit[0] * 1000:.2f} ms x resources {_signed(floor_fit[1])} s (R² {floor_fit[2]:.4f}); "
        + (
            f"shaped floor = {shaped_fit[0] * 1000:.2f} ms x resources {_signed(shaped_fit[1])} s "
            f"(R² {shaped_fit[2]:.4f}); "
            if shaped_fit is not None
            else ""
        )
        + f"per added resource {marginal_ratio(fit, floor_fit):.2f} x the bare floor"
        + (f", {marginal_ratio(fit, shaped_fit):.2f} x the shaped floor" if shaped_fit is not None else "")
        + f" (target <= {MARGINAL_RATIO}, against the {'shaped' if shaped_fit is not None else 'bare'} floor).",
        "",
        *findings(rows, fit, judged, "the shaped floor" if shaped_fit is not None else "the floor"),
    ]
    return "\n".join(lines)


BEGIN, END = "<!-- bench:begin -->\n", "<!-- bench:end -->\n"


def replace_section(text: str, name: str, body: str) -> str:
    """Page text with the generated block inside section NAME replaced (or appended to the section).

    The section is what sits between `<!-- section:NAME -->` and `<!-- /section:NAME -->`; prose there stays,
    only the part between the bench markers is rewritten.
    """
    opening, closing = f"<!-- section:{name} -->\n", f"<!-- /section:{name} -->"
    start = text.find(opening)
    stop = text.find(closing, start + 1)
    if start < 0 or stop < 0:
        raise ValueError(f"the page has no section {name}")
    current = text[start + len(opening) : stop]
    if BEGIN in current and END in current:
        before, _, rest = current.partition(BEGIN)
        _, _, after = rest.partition(END)
    else:
        before, after = current, ""
    return text[: start + len(opening)] + f"{before}{BEGIN}{body}\n{END}{after}" + text[stop:]


# ------------------------------------------------------------------------------------------------- runs


REPEATS = 5  # median of five runs per size: one run on a 2-core machine carries a few hundred ms of noise


def registrations_file(groups: int) -> Path:
    """Where the plan worker leaves what it registered for `groups`, for the shaped floor to register again."""
    return Path(os.environ["TRAINSTACK_BENCH_DIR"]) / f"{groups}.json"


def timed(action: Callable[[], Any]) -> tuple[Any, float]:
    """What `action` returns, and the CPU seconds it took."""
    started = time.process_time()
    result = action()
    return result, time.process_time() - started


def plan_worker() -> Callable[[int], tuple[int, float]]:
    """Runs the plan of the prod stack with N GPU groups; returns the number of resources it registered and the
    run's CPU seconds, and leaves the registrations for the shaped floor once the clock has stopped."""
    import yaml

    from stacks.load import FULL_KEY, validate_object
    from trainstack.engine import run_program

    prod = yaml.safe_load((ROOT / "stacks" / "Pulumi.prod.yaml").read_text())["config"][FULL_KEY]

    def plan(groups: int) -> tuple[int, float]:
        stack = validate_object(scaled_cluster(prod, groups), f"bench {groups}")
        recording, seconds = timed(lambda: run_program(stack, stack_name="prod-bench"))
        _leave_registrations(groups, recording.resources)
        return len(recording.resources), seconds

    return plan


def _leave_registrations(groups: int, resources: Sequence[Any]) -> None:
    registrations = [
        {
            "type": r.type,
            "name": r.name,
            "urn": r.urn,
            "parent": r.parent,
            "custom": r.custom,
            "inputs": r.inputs,
            "dependencies": list(r.dependencies),
            "provider": r.provider_urn,
        }
        for r in resources
        if r.type != "pulumi:pulumi:Stack"
    ]
    registrations_file(groups).write_text(json.dumps(registrations))


def shaped_worker() -> Callable[[int], tuple[int, float]]:
    """Registers again, bare, what the plan of N GPU groups registered (module docstring); returns the count and
    the run's CPU seconds (reading the plan's registrations not counted)."""
    import pulumi
    import pulumi_aws  # noqa: F401  (the same provider packages as the plan, imported before the clock starts)
    import pulumi_kubernetes  # noqa: F401

    from trainstack.engine import run

    def shaped(groups: int) -> tuple[int, float]:
        registrations = json.loads(registrations_file(groups).read_text())

        def program() -> None:
            made: dict[str, pulumi.Resource] = {}
            for r in registrations:
                opts = pulumi.ResourceOptions(
                    parent=made.get(r["parent"]),
                    provider=made.get(r["provider"]),
                    depends_on=[made[d] for d in r["dependencies"] if d in made],
                )
                if r["type"].startswith("pulumi:providers:"):
                    made[r["urn"]] = pulumi.ProviderResource(r["type"].split(":")[-1], r["name"], r["inputs"], opts)
                elif r["custom"]:
                    made[r["urn"]] = pulumi.CustomResource(r["type"], r["name"], dict(r["inputs"]), opts)
                else:
                    made[r["urn"]] = pulumi.ComponentResource(r["type"], r["name"], None, opts)

        recording, seconds = timed(lambda: run(program, stack="prod-bench", region="us-east-1"))
        return len(recording.resources), seconds

    return shaped


def floor_worker() -> Callable[[int], tuple[int, float]]:
    """Registers N bare resources (a provider and N - 1 VPCs) under the same engine; returns N and the run's CPU
    seconds."""
    import pulumi
    import pulumi_aws as aws

    from trainstack.engine import run

    def floor(count: int) -> tuple[int, float]:
        def program() -> None:
            provider = aws.Provider("aws", aws.ProviderArgs(region="us-east-1"))
            opts = pulumi.ResourceOptions(provider=provider)
            for i in range(count - 1):  # the provider is one of the `count` resources
                aws.ec2.Vpc(f"vpc-{i}", aws.ec2.VpcArgs(cidr_block="10.0.0.0/16"), opts=opts)

        recording, seconds = timed(lambda: run(program, stack="prod-bench", region="us-east-1"))
        return len(recording.resources), seconds

    return floor


def load_modules(names: Sequence[str]) -> None:
    """Imports each module and runs it: the providers import their service modules lazily, on first use."""
    for name in names:
        getattr(importlib.import_module(name), "__file__", None)  # any attribute of a lazy module loads it


def serve(kind: str, modules: Sequence[str] = ()) -> int:
    """A worker: reads one size a line from stdin, runs it, answers `[resources, CPU seconds]` a line. It runs as
    the command does, without cyclic collection and exiting with a frozen heap (trainstack/entry.py), so a floor's
    whole process is held to the same settings as the plan's. `modules` are imported first (a typed floor)."""
    gc.disable()
    load_modules(modules)
    action = {"plan": plan_worker, "floor": floor_worker, "shaped": shaped_worker}[kind]()
    for line in sys.stdin:
        print(json.dumps(action(int(line))), flush=True)
    gc.freeze()  # as the command exits (trainstack/entry.py)
    return 0


class Worker:
    """One fresh interpreter running `serve(kind)`."""

    def __init__(self, kind: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--worker", kind], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def ask(self, size: int) -> tuple[int, float]:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(f"{size}\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            raise SystemExit(f"a bench worker exited {self.process.wait()} on size {size}")
        count, seconds = json.loads(answer)
        return int(count), float(seconds)

    def close(self) -> None:
        assert self.process.stdin
        self.process.stdin.close()
        self.process.wait()


def measure(repeats: int) -> list[Row]:
    """Plan, bare floor and shaped floor at each size, each in its own worker, asked in turn `repeats` times."""
    plan, floor, shaped = Worker("plan"), Worker("floor"), Worker("shaped")
    try:
        count, _ = plan.ask(1)  # imports, caches: not counted
        floor.ask(count)
        shaped.ask(1)
        rows: list[Row] = []
        for groups in SIZES:
            runs: dict[str, list[float]] = {"plan": [], "floor": [], "shaped": []}
            for _ in range(repeats):  # in turn, so a busy moment falls on all alike
                count, seconds = plan.ask(groups)
                runs["plan"].append(seconds)
                for name, worker, size in (("floor", floor, count), ("shaped", shaped, groups)):
                    floor_count, seconds = worker.ask(size)
                    assert floor_count == count, (name, floor_count, count)
                    runs[name].append(seconds)
            row = Row(groups, count, *(statistics.median(runs[name]) for name in ("plan", "floor", "shaped")))
            rows.append(row)
            print(
                f"{groups:3d} groups {count:5d} resources plan {row.plan_s:6.2f} s floor {row.floor_s:6.2f} s "
                f"shaped floor {row.shaped_s:6.2f} s",
                flush=True,
            )
        return rows
    finally:
        for worker in (plan, floor, shaped):
            worker.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", choices=("plan", "floor", "shaped"), help=argparse.SUPPRESS)
    parser.add_argument("--import", dest="modules", default="", help=argparse.SUPPRESS)  # comma-separated
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--no-write", action="store_true", help="print the table, leave docs/bench.md as it is")
    args = parser.parse_args(argv)
    if args.worker:
        return serve(args.worker, [m for m in args.modules.split(",") if m])
    with tempfile.TemporaryDirectory(prefix="trainstack-bench-") as handover:
        os.environ["TRAINSTACK_BENCH_DIR"] = handover  # the plan worker leaves its registrations there
        rows = measure(args.repeats)

    sizes = [r.resources for r in rows]
    fit = linear_fit(sizes, [r.plan_s for r in rows])
    floor_fit = linear_fit(sizes, [r.floor_s for r in rows])
    shaped_fit = linear_fit(sizes, [r.shaped_s or 0.0 for r in rows])
    table = markdown(rows, fit, floor_fit, machine(), time.strftime("%Y-%m-%d"), args.repeats, shaped_fit)
    print(table)
    if not args.no_write:
        PAGE.write_text(replace_section(PAGE.read_text(), SECTION, table))
    return 0 if met(fit, shaped_fit) else 1


if __name__ == "__main__":
    sys.exit(main())
