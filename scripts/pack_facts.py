"""Generate what the standalone policy pack needs to know of the program, from the one place each fact lives.

The pack runs in its own virtualenv and imports only itself and pulumi_policy, so it cannot read
`stacks/catalog.py` or a stack file at run time. This script writes:

- `policies/facts_generated.py`: instance facts (from `stacks/catalog.py`), the device resources that double
  as taint keys, the accelerated AMI types (`stacks/schema/gpu.py`), the FSx for Lustre throughput facts
  (`stacks/fsx_sizing.py`), the required tag keys (`stacks/schema/stack.py`), the labels, tags and names
  the program sets that rules select on (components/), and the resource type tokens of the project's
  vocabulary (`trainstack/tokens.py`), under the same names.
- the thresholds each stack file assumes into `policies/config/<environment>.json`: the GPU budget
  (`cost.max_gpus`), the per-GPU read rate (`storage.fsx.per_gpu_read_mb_s`) of the advisory sizing rule and the
  environment itself. The storage floor's rate is the committed fact (`fsx_sizing.READ_MB_S_PER_ACCELERATOR_FLOOR`)
  or the stack's, whichever is larger: the stack under review never lowers its own floor.

Run `make pack-facts` after changing any of those homes; `tests/policy/test_pack_facts.py` fails while a
generated file is stale. `--check` prints the stale files and exits 1 instead of writing.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from components.k8s.tenancy import OPEN_REGISTRIES, REGISTRY_POLICY_NAME  # noqa: E402
from components.k8s.training_runtimes import BACKOFF_ENV  # noqa: E402
from components.namespaces import PSA_ENFORCE, TENANT_LABEL, TENANT_TEAM  # noqa: E402
from components.sagemaker.hyperpod import PROVISIONING_PARAMETERS  # noqa: E402
from components.storage.buckets import DATA_CLASS_TAG, EMPTYING_ACTIONS, READ_WRITE_ACTIONS  # noqa: E402
from components.storage.lustre import LUSTRE_PORT_RANGES  # noqa: E402
from components.storage.lustre_volume import CSI_DRIVER, DATASETS_CLAIM_NAME, READ_ONLY_MOUNT_OPTION  # noqa: E402
from components.team_rbac import SERVICE_QUOTA, TEAM_GROUP_PREFIX  # noqa: E402
from stacks import fsx_sizing  # noqa: E402
from stacks.catalog import CATALOG, DEVICE_RESOURCE, Accelerator  # noqa: E402
from stacks.load import STACKS_DIR, load_file  # noqa: E402
from stacks.schema import EFA_PRESENT_LABEL, AmiFamily, Environment  # noqa: E402
from stacks.schema.stack import REQUIRED_TAGS  # noqa: E402
from trainstack import tokens  # noqa: E402

FACTS = ROOT / "policies" / "facts_generated.py"
POLICY_CONFIG = ROOT / "policies" / "config"
RUFF = Path(sys.executable).parent / "ruff"

HEADER = '''"""Facts the policy pack shares with the program, generated from their homes: do not edit.

Written by `make pack-facts` (scripts/pack_facts.py); tests/policy/test_pack_facts.py fails while it is stale.
`policies/facts.py` gives the rules typed access to these.
"""
'''


def _constant(name: str, value: Any, source: str) -> str:
    comment = "".join(f"# {line}\n" for line in textwrap.wrap(source, 110))
    literal = value if isinstance(value, Literal) else repr(value)
    return f"\n{comment}{name} = {literal}\n"


class Literal(str):
    """Python source to write as it is (a value whose repr would not read well)."""


def _cards(cards: tuple[int, ...]) -> str:
    """Network cards as the reader thinks of them: a run of cards as a range, others listed."""
    if len(cards) > 2 and cards == tuple(range(cards[0], cards[-1] + 1)):
        return f"tuple(range({cards[0]}, {cards[-1] + 1}))"
    return repr(cards)


def resource_tokens() -> dict[str, str | tuple[str, ...]]:
    """trainstack/tokens.py's resource type tokens (and groups of them), by name, in its order: what a rule selects
    resources by. Function (invoke) tokens are left out: a policy sees resources only."""

    def is_resource(token: str) -> bool:
        return token.rsplit(":", 1)[-1][:1].isupper()  # `aws:ec2/getSubnet:getSubnet` is a function

    found: dict[str, str | tuple[str, ...]] = {}
    for name, value in vars(tokens).items():
        members = value if isinstance(value, tuple) else (value,)
        if name.isupper() and members and all(isinstance(v, str) and is_resource(v) for v in members):
            found[name] = value
    return found


def _tokens_section() -> str:
    by_value = {value: name for name, value in resource_tokens().items() if isinstance(value, str)}
    lines = [
        "\n# trainstack/tokens.py: the resource type tokens of the project's vocabulary, under its names\n",
    ]
    for name, value in resource_tokens().items():
        if isinstance(value, tuple):
            names = [by_value[v] for v in value]
            lines.append(f"{name} = ({', '.join(names)}{',' if len(names) == 1 else ''})\n")
        else:
            lines.append(f"{name} = {value!r}\n")
    return "".join(lines)


def facts_module() -> str:
    """The text of policies/facts_generated.py, formatted as `ruff format` leaves it."""
    instances = Literal(
        "{\n"
        + "".join(
            f"    {name!r}: ({row.accelerator.value!r}, {row.accelerator_count}, {row.max_efa_interfaces}, "
            f"{_cards(row.efa_cards)}),\n"
            for name, row in CATALOG.items()
        )
        + "}"
    )
    ami_types = {
        accelerator.value: tuple(sorted(f.value for f in AmiFamily if f.accelerator is accelerator))
        for accelerator in Accelerator
    }
    text = HEADER + "".join(
        [
            _constant(
                "INSTANCES",
                instances,
                "stacks/catalog.py CATALOG: instance type -> (accelerator family, accelerators per instance, "
                "EfaInfo.MaximumEfaInterfaces, network cards with one EFA interface each)",
            ),
            _constant(
                "TAINT_KEYS",
                {a.value: resource for a, resource in DEVICE_RESOURCE.items()},
                "stacks/catalog.py DEVICE_RESOURCE: the device resource per family, also the GPU groups' taint key",
            ),
            _constant(
                "ACCELERATED_AMI_TYPES", ami_types, "stacks/schema/gpu.py AmiFamily: EKS amiType values per family"
            ),
            _constant(
                "SCRATCH_2_BASELINE_MB_S_PER_TIB",
                fsx_sizing.SCRATCH_2_BASELINE_MB_S_PER_TIB,
                "stacks/fsx_sizing.py: SCRATCH_2's fixed baseline throughput (PERSISTENT_2 provisions its own)",
            ),
            _constant("GIB_PER_TIB", fsx_sizing.GIB_PER_TIB, "stacks/fsx_sizing.py"),
            _constant(
                "READ_MB_S_PER_ACCELERATOR_FLOOR",
                fsx_sizing.READ_MB_S_PER_ACCELERATOR_FLOOR,
                "stacks/fsx_sizing.py: the least read rate per accelerator the storage floor judges Lustre against, "
                "per environment (a committed fact, never the stack file's)",
            ),
            _constant("REQUIRED_TAGS", REQUIRED_TAGS, "stacks/schema/stack.py: tags trainstack sets everywhere"),
            _constant("ENVIRONMENTS", tuple(e.value for e in Environment), "stacks/schema/base.py Environment"),
            _constant("EFA_PRESENT_LABEL", EFA_PRESENT_LABEL, "stacks/schema/gpu.py: the EFA node groups' label"),
            _constant("PSA_ENFORCE", PSA_ENFORCE, "components/namespaces.py: Pod Security Admission enforce label"),
            _constant("TENANT_LABEL", TENANT_LABEL, "components/namespaces.py: marks team namespaces"),
            _constant("TENANT_TEAM", TENANT_TEAM, "components/namespaces.py: TENANT_LABEL's value on team namespaces"),
            _constant("DATA_CLASS_TAG", DATA_CLASS_TAG, "components/storage/buckets.py: datasets or checkpoints"),
            _constant(
                "DATA_READ_WRITE_ACTIONS",
                READ_WRITE_ACTIONS,
                "components/storage/buckets.py: object reads and writes a data bucket denies outside its VPC",
            ),
            _constant(
                "DATA_EMPTYING_ACTIONS",
                EMPTYING_ACTIONS,
                "components/storage/buckets.py: the calls that empty a data bucket, denied outside its VPC",
            ),
            _constant("FSX_CSI_DRIVER", CSI_DRIVER, "components/storage/lustre_volume.py: the FSx CSI driver's name"),
            _constant("DATASETS_CLAIM", DATASETS_CLAIM_NAME, "components/storage/lustre_volume.py: the datasets claim"),
            _constant("READ_ONLY_MOUNT_OPTION", READ_ONLY_MOUNT_OPTION, "components/storage/lustre_volume.py: `ro`"),
            _constant("OPEN_REGISTRIES", OPEN_REGISTRIES, "components/k8s/tenancy.py: anyone can publish there"),
            _constant("LUSTRE_PORT_RANGES", LUSTRE_PORT_RANGES, "components/storage/lustre.py: Lustre's server ports"),
            _constant("TEAM_GROUP_PREFIX", TEAM_GROUP_PREFIX, "components/team_rbac.py: a team's Kubernetes group"),
            _constant("SERVICE_QUOTA", SERVICE_QUOTA, "components/team_rbac.py: the Services a team may not create"),
            _constant(
                "REGISTRY_POLICY_NAME",
                REGISTRY_POLICY_NAME,
                "components/k8s/tenancy.py: the admission policy that holds the team namespaces' image allowlist",
            ),
            _constant(
                "RESTART_BACKOFF_ENV",
                BACKOFF_ENV,
                "components/k8s/training_runtimes.py BACKOFF_ENV: the training runtimes' restart-wait init container",
            ),
            _constant(
                "PROVISIONING_PARAMETERS",
                PROVISIONING_PARAMETERS,
                "components/sagemaker/hyperpod.py: the lifecycle object the Slurm login nodes are named in",
            ),
            _tokens_section(),
        ]
    )
    formatted = subprocess.run(
        [str(RUFF), "format", "--stdin-filename", str(FACTS), "-"],
        input=text,
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return formatted.stdout


def _number(value: float) -> int | float:
    return int(value) if value.is_integer() else value


def thresholds() -> dict[str, dict[str, dict[str, Any]]]:
    """Per environment, the policy config values the stack files assume, by rule and key."""
    found: dict[str, dict[str, dict[str, Any]]] = {}
    sources: dict[str, str] = {}
    for path in sorted(STACKS_DIR.glob("Pulumi.*.yaml")):
        stack = load_file(path)
        environment = stack.environment.value
        per_gpu = stack.storage.fsx.per_gpu_read_mb_s
        floor = max(per_gpu, fsx_sizing.READ_MB_S_PER_ACCELERATOR_FLOOR[environment])
        values = {
            "gpu-budget": {"maxGpus": stack.cost.max_gpus},
            "storage-throughput-feeds-gpus": {"perGpuReadMbPerS": _number(per_gpu)},
            "storage-throughput-floor": {"perGpuReadMbPerS": _number(floor)},
            "stack-environment": {"environment": environment},
            "cost-tags": {"environment": environment},
            "lt-instance-tags": {"environment": environment},
        }
        if environment in found and found[environment] != values:
            raise SystemExit(
                f"error: {path.name} and {sources[environment]} share environment {environment} but assume different "
                "policy thresholds (cost.max_gpus or storage.fsx.per_gpu_read_mb_s): policies/config has one file per "
                "environment, so make them equal"
            )
        found[environment] = values
        sources[environment] = path.name
    return found


def policy_config(environment: str, values: dict[str, dict[str, Any]]) -> str:
    """policies/config/<environment>.json with the stack files' thresholds written in (other keys kept)."""
    path = POLICY_CONFIG / f"{environment}.json"
    config = json.loads(path.read_text()) if path.exists() else {"all": "advisory"}
    for rule, keys in values.items():
        config.setdefault(rule, {"enforcementLevel": "mandatory"}).update(keys)
    return json.dumps(config, indent=2) + "\n"


def outputs() -> dict[Path, str]:
    """Every generated file and its current text."""
    files = {FACTS: facts_module()}
    for environment, values in thresholds().items():
        files[POLICY_CONFIG / f"{environment}.json"] = policy_config(environment, values)
    return files


def main(argv: list[str]) -> int:
    stale = {path: text for path, text in outputs().items() if not path.exists() or path.read_text() != text}
    for path, text in stale.items():
        if "--check" in argv:
            print(f"stale: {path.relative_to(ROOT)} (run `make pack-facts`)")
        else:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    return 1 if stale and "--check" in argv else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
