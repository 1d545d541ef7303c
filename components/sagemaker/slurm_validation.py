"""The Slurm twin of the EKS NCCL validation job: one sbatch script per EFA GPU group of a HyperPod cluster.

HyperPod's Slurm configures no GPU GRES, so the job asks for whole nodes (`--exclusive`) and one task per GPU
(`--ntasks-per-node`), the form AWS's own Slurm nccl-tests jobs use (aws-samples/awsome-distributed-training,
micro-benchmarks/nccl-tests/slurm/nccl-tests-container.sbatch). `all_reduce_perf` is an MPI program: srun
starts its ranks through PMIx (`--mpi=pmix`), inside the nccl-tests container (pyxis `--container-image`), so
every rank is one member of one all-reduce across all the group's nodes. The judgement is the EKS job's
(`validation_jobs.nccl_verdict_lines`): FAIL on a fallback to TCP sockets, on wrong results, or below the
catalog's bus-bandwidth floor for the instance type.
"""

from __future__ import annotations

import shlex

from components.nccl import ALL_REDUCE_PERF, NcclPlan, nccl_env, nccl_verdict_lines, supports_device_rdma
from stacks.catalog import CATALOG, Accelerator
from stacks.schema import HyperPodGroupRole, HyperPodInstanceGroupSpec, HyperPodSpec, SlurmSpec

VALIDATION_DIR = "/opt/trainstack/validation"  # where install_validation.sh puts the scripts on every node
# AWS's Slurm NCCL job sets these on top of the EFA environment (aws-samples/awsome-distributed-training,
# micro-benchmarks/nccl-tests/slurm/nccl-tests-container.sbatch): a deeper send queue (NCCL_BUFFSIZE, 8 MiB), larger
# point-to-point chunks (NCCL_P2P_NET_CHUNKSIZE, 512 KiB), and aws-ofi-nccl's tuner, which picks the all-reduce
# algorithm and protocol per message size and rank count, at its path in the nccl-tests image.
NCCL_TUNING = {"NCCL_BUFFSIZE": "8388608", "NCCL_P2P_NET_CHUNKSIZE": "524288"}
NCCL_TUNER_PLUGIN = "/opt/amazon/ofi-nccl/lib/${arch}-linux-gnu/libnccl-ofi-tuner.so"


def sbatch_name(group: HyperPodInstanceGroupSpec) -> str:
    return f"nccl-all-reduce-{group.name}.sbatch"


def nccl_groups(spec: HyperPodSpec) -> list[HyperPodInstanceGroupSpec]:
    """Compute groups an NCCL all-reduce over EFA can validate: NVIDIA, EFA, more than one node."""
    return [
        g
        for g in spec.groups(HyperPodGroupRole.COMPUTE)
        if CATALOG[g.ec2_instance_type].accelerator is Accelerator.NVIDIA
        and CATALOG[g.ec2_instance_type].supports_efa
        and g.instance_count >= 2
    ]


def slurm_nccl_plan(group: HyperPodInstanceGroupSpec, slurm: SlurmSpec) -> NcclPlan:
    """The NCCL plan of a whole HyperPod group: every node, every GPU, the catalog's floor."""
    row = CATALOG[group.ec2_instance_type]
    return NcclPlan(
        group=group.name,
        instance_type=group.ec2_instance_type,
        nodes=group.instance_count,
        gpus_per_node=row.accelerator_count,
        efa_per_node=row.max_efa_interfaces,
        hugepages_2mi_mi=0,  # Slurm jobs get the host's memory; nothing to request
        memory_gi=row.memory_gib,
        cpu=row.vcpus,
        busbw_floor_gb_s=row.nccl_busbw_floor_gb_s,
        device_rdma=supports_device_rdma(row),
        max_message_size=slurm.nccl_max_message_size,
    )


def enroot_image(image: str) -> str:
    """A registry image in pyxis/enroot form: `registry#repository:tag` (pyxis --container-image takes
    `[USER@][REGISTRY#]IMAGE[:TAG]`; NVIDIA/pyxis README). Docker Hub images have no registry part."""
    first, _, rest = image.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return f"{first}#{rest}"
    return image


def nccl_sbatch(group: HyperPodInstanceGroupSpec, slurm: SlurmSpec) -> str:
    """The sbatch script for one group. Submit it from a shared directory: `sbatch <script>`."""
    plan = slurm_nccl_plan(group, slurm)
    name = f"trainstack-nccl-{group.name}"
    env = nccl_env(plan) | NCCL_TUNING
    exports = [f"export {key}={shlex.quote(value)}" for key, value in env.items()]
    exports += ["arch=$(uname -m)", f'export NCCL_TUNER_PLUGIN="{NCCL_TUNER_PLUGIN}"']  # the node's architecture
    srun = (
        f"srun --mpi=pmix --cpu-bind=none --container-image={enroot_image(slurm.nccl_tests_image)} "
        f"{ALL_REDUCE_PERF} -b 8 -e {plan.max_message_size} -f 2 -g 1 -c 1 -n 50"
    )
    return "\n".join(
        [
            "#!/bin/bash",
            f"# NCCL all-reduce over EFA across all {plan.nodes} nodes of HyperPod group {group.name} "
            f"({plan.instance_type}, {plan.ranks} ranks), written by trainstack.",
            f"# The last line of the output is the verdict: 'trainstack-nccl: PASS' or 'trainstack-nccl: FAIL <why>'; "
            f"the floor is {plan.busbw_floor_gb_s:.1f} GB/s bus bandwidth (stacks/catalog.py).",
            f"#SBATCH --job-name={name}",
            f"#SBATCH --partition={group.name}",
            f"#SBATCH --nodes={plan.nodes}",
            f"#SBATCH --ntasks-per-node={plan.gpus_per_node}",
            "#SBATCH --exclusive",
            f"#SBATCH --output={name}-%j.out",
            "set -uo pipefail",
            *exports,
            f'log="{name}-${{SLURM_JOB_ID}}.log"',
            "status=0",
            f'{srun} 2>&1 | tee "$log" || status=$?',
            'if [ "$status" -ne 0 ]; then echo "trainstack-nccl: FAIL srun exited $status"; exit 1; fi',
            *nccl_verdict_lines(plan, '"$log"'),
            "",
        ]
    )


def validation_scripts(spec: HyperPodSpec) -> dict[str, str]:
    """Every sbatch script a Slurm HyperPod cluster ships, by file name (none when validation is off)."""
    if not spec.slurm.nccl_validation:
        return {}
    return {sbatch_name(g): nccl_sbatch(g, spec.slurm) for g in nccl_groups(spec)}
