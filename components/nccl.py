"""The NCCL all-reduce check that both orchestrators run: what it asks of a node, the EFA environment every
rank gets, and the shell lines that judge its log. The EKS validation job (components/k8s/validation_jobs.py)
and the Slurm sbatch job (components/sagemaker/slurm_validation.py) build their launchers around these.
"""

from __future__ import annotations

from dataclasses import dataclass

from stacks.catalog import InstanceType

ALL_REDUCE_PERF = "/opt/nccl-tests/build/all_reduce_perf"

# EFA RDMA read/write (GPUDirect RDMA) exists on p4d/p4de, p5*, p6* and Trainium; not on g5/g6e
# (AWS EC2 user guide, "Elastic Fabric Adapter" supported instance types, RDMA column).
_RDMA_FAMILIES = ("p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "p6-b300", "p6e-gb200", "trn1", "trn1n", "trn2")


@dataclass(frozen=True)
class NcclPlan:
    """What the NCCL test asks for, derived from the target group and the catalog."""

    group: str
    instance_type: str
    nodes: int
    gpus_per_node: int
    efa_per_node: int
    hugepages_2mi_mi: int
    memory_gi: int
    cpu: int
    busbw_floor_gb_s: float
    device_rdma: bool
    max_message_size: str

    @property
    def ranks(self) -> int:
        return self.nodes * self.gpus_per_node


def supports_device_rdma(row: InstanceType) -> bool:
    """Whether EFA on this type does RDMA (FI_EFA_USE_DEVICE_RDMA=1 is valid there)."""
    return row.name.split(".")[0] in _RDMA_FAMILIES


def nccl_env(plan: NcclPlan) -> dict[str, str]:
    """The EFA/NCCL environment every rank gets."""
    env = {
        "FI_PROVIDER": "efa",
        "FI_EFA_FORK_SAFE": "1",
        "NCCL_DEBUG": "INFO",
        # Socket bootstrap must not pick loopback, docker bridges or the Pod Identity link-local NIC, which
        # hangs (aws-samples/aws-do-eks PR #54).
        "NCCL_SOCKET_IFNAME": "^lo,docker,pod-id-link0",
    }
    if plan.device_rdma:
        env["FI_EFA_USE_DEVICE_RDMA"] = "1"
    return env


def nccl_verdict_lines(plan: NcclPlan, log: str) -> list[str]:
    """Shell lines that judge an all_reduce_perf log (NCCL_DEBUG=INFO) and print one `trainstack-nccl: PASS` or
    `trainstack-nccl: FAIL <why>` line, exiting 1 on FAIL. Shared by the EKS launcher and the Slurm sbatch job."""
    floor = f"{plan.busbw_floor_gb_s:.1f}"
    return [
        f"if grep -Eq 'NET/Socket|Using network Socket' {log}; then",
        "  echo 'trainstack-nccl: FAIL NCCL fell back to TCP sockets (EFA not used)'; exit 1",
        "fi",
        f"if ! grep -Eqi 'selected provider is efa|Using network (AWS Libfabric|Libfabric)' {log}; then",
        "  echo 'trainstack-nccl: FAIL the OFI plugin did not select the efa provider'; exit 1",
        "fi",
        f"grep 'Avg bus bandwidth' {log} || true",
        # Data rows: size count type redop root time algbw busbw #wrong time algbw busbw #wrong.
        # The smaller of out-of-place ($8) and in-place ($12) bus bandwidth: either below the floor fails.
        "read -r size busbw wrong < <(awk '!/^#/ && $1 ~ /^[0-9]+$/ && NF >= 13 "
        f"{{s=$1; b=($8<$12)?$8:$12; w=$9+$13}} END {{print s, b, w}}' {log})",
        'if [ -z "${busbw:-}" ]; then echo "trainstack-nccl: FAIL no results parsed"; exit 1; fi',
        'if [ "${wrong}" != "0" ]; then echo "trainstack-nccl: FAIL ${wrong} wrong results"; exit 1; fi',
        f"if awk -v b=\"$busbw\" -v f={floor} 'BEGIN {{exit !(b + 0 >= f + 0)}}'; then",
        f'  echo "trainstack-nccl: PASS busbw ${{busbw}} GB/s >= floor {floor} GB/s at ${{size}} bytes"',
        "else",
        f'  echo "trainstack-nccl: FAIL busbw ${{busbw}} GB/s < floor {floor} GB/s at ${{size}} bytes"; exit 1',
        "fi",
    ]
