"""Facts the policy pack shares with the program, generated from their homes: do not edit.

Written by `make pack-facts` (scripts/pack_facts.py); tests/policy/test_pack_facts.py fails while it is stale.
`policies/facts.py` gives the rules typed access to these.
"""

# stacks/catalog.py CATALOG: instance type -> (accelerator family, accelerators per instance,
# EfaInfo.MaximumEfaInterfaces, network cards with one EFA interface each)
INSTANCES = {
    "p4d.24xlarge": ("nvidia", 8, 4, tuple(range(0, 4))),
    "p4de.24xlarge": ("nvidia", 8, 4, tuple(range(0, 4))),
    "p5.48xlarge": ("nvidia", 8, 32, tuple(range(0, 32))),
    "p5e.48xlarge": ("nvidia", 8, 32, tuple(range(0, 32))),
    "p5en.48xlarge": ("nvidia", 8, 16, tuple(range(0, 16))),
    "p6-b200.48xlarge": ("nvidia", 8, 8, tuple(range(0, 8))),
    "p6-b300.48xlarge": ("nvidia", 8, 16, tuple(range(1, 17))),
    "p6e-gb200.36xlarge": ("nvidia", 4, 4, (1, 5, 9, 13)),
    "trn1.32xlarge": ("neuron", 16, 8, tuple(range(0, 8))),
    "trn1n.32xlarge": ("neuron", 16, 16, tuple(range(0, 16))),
    "trn2.48xlarge": ("neuron", 16, 16, tuple(range(0, 16))),
    "g5.48xlarge": ("nvidia", 8, 1, (0,)),
    "g6e.48xlarge": ("nvidia", 8, 4, tuple(range(0, 4))),
    "g5.2xlarge": ("nvidia", 1, 0, ()),
    "g6e.xlarge": ("nvidia", 1, 0, ()),
    "g4dn.8xlarge": ("nvidia", 1, 1, (0,)),
    "g4dn.12xlarge": ("nvidia", 4, 1, (0,)),
    "g4dn.16xlarge": ("nvidia", 1, 1, (0,)),
    "g4dn.metal": ("nvidia", 8, 1, (0,)),
    "g5.8xlarge": ("nvidia", 1, 1, (0,)),
    "g5.12xlarge": ("nvidia", 4, 1, (0,)),
    "g5.16xlarge": ("nvidia", 1, 1, (0,)),
    "g5.24xlarge": ("nvidia", 4, 1, (0,)),
    "g6.8xlarge": ("nvidia", 1, 1, (0,)),
    "g6.12xlarge": ("nvidia", 4, 1, (0,)),
    "g6.16xlarge": ("nvidia", 1, 1, (0,)),
    "g6.24xlarge": ("nvidia", 4, 1, (0,)),
    "g6.48xlarge": ("nvidia", 8, 1, (0,)),
    "g6e.8xlarge": ("nvidia", 1, 1, (0,)),
    "g6e.12xlarge": ("nvidia", 4, 1, (0,)),
    "g6e.16xlarge": ("nvidia", 1, 1, (0,)),
    "g6e.24xlarge": ("nvidia", 4, 2, (0, 1)),
    "p5.4xlarge": ("nvidia", 1, 1, (0,)),
}

# stacks/catalog.py DEVICE_RESOURCE: the device resource per family, also the GPU groups' taint key
TAINT_KEYS = {"nvidia": "nvidia.com/gpu", "neuron": "aws.amazon.com/neuron"}

# stacks/schema/gpu.py AmiFamily: EKS amiType values per family
ACCELERATED_AMI_TYPES = {
    "nvidia": (
        "AL2023_ARM_64_NVIDIA",
        "AL2023_x86_64_NVIDIA",
        "BOTTLEROCKET_ARM_64_NVIDIA",
        "BOTTLEROCKET_x86_64_NVIDIA",
    ),
    "neuron": ("AL2023_x86_64_NEURON",),
}

# stacks/fsx_sizing.py: SCRATCH_2's fixed baseline throughput (PERSISTENT_2 provisions its own)
SCRATCH_2_BASELINE_MB_S_PER_TIB = 200

# stacks/fsx_sizing.py
GIB_PER_TIB = 1024

# stacks/fsx_sizing.py: the least read rate per accelerator the storage floor judges Lustre against, per
# environment (a committed fact, never the stack file's)
READ_MB_S_PER_ACCELERATOR_FLOOR = {"dev": 100.0, "staging": 200.0, "prod": 200.0}

# stacks/schema/stack.py: tags trainstack sets everywhere
REQUIRED_TAGS = ("project", "env", "cost-center", "owner")

# stacks/schema/base.py Environment
ENVIRONMENTS = ("dev", "staging", "prod")

# stacks/schema/gpu.py: the EFA node groups' label
EFA_PRESENT_LABEL = "vpc.amazonaws.com/efa.present"

# components/namespaces.py: Pod Security Admission enforce label
PSA_ENFORCE = "pod-security.kubernetes.io/enforce"

# components/namespaces.py: marks team namespaces
TENANT_LABEL = "trainstack.io/tenant"

# components/namespaces.py: TENANT_LABEL's value on team namespaces
TENANT_TEAM = "team"

# components/storage/buckets.py: datasets or checkpoints
DATA_CLASS_TAG = "trainstack:data-class"

# components/storage/buckets.py: object reads and writes a data bucket denies outside its VPC
DATA_READ_WRITE_ACTIONS = ("s3:GetObject", "s3:GetObjectVersion", "s3:PutObject", "s3:ListBucket")

# components/storage/buckets.py: the calls that empty a data bucket, denied outside its VPC
DATA_EMPTYING_ACTIONS = ("s3:ListBucketVersions", "s3:DeleteObject", "s3:DeleteObjectVersion")

# components/storage/lustre_volume.py: the FSx CSI driver's name
FSX_CSI_DRIVER = "fsx.csi.aws.com"

# components/storage/lustre_volume.py: the datasets claim
DATASETS_CLAIM = "fsx-datasets"

# components/storage/lustre_volume.py: `ro`
READ_ONLY_MOUNT_OPTION = "ro"

# components/tenancy.py: anyone can publish there
OPEN_REGISTRIES = (
    "public.ecr.aws",
    "docker.io",
    "index.docker.io",
    "registry-1.docker.io",
    "ghcr.io",
    "quay.io",
    "registry.gitlab.com",
    "nvcr.io",
)

# components/storage/lustre.py: Lustre's server ports
LUSTRE_PORT_RANGES = ((988, 988), (1018, 1023))

# components/team_rbac.py: a team's Kubernetes group
TEAM_GROUP_PREFIX = "trainstack:team:"

# components/team_rbac.py: the Services a team may not create
SERVICE_QUOTA = {"services.loadbalancers": "0", "services.nodeports": "0"}
