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

# components/k8s/tenancy.py: anyone can publish there
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

# components/k8s/tenancy.py: the admission policy that holds the team namespaces' image allowlist
REGISTRY_POLICY_NAME = "trainstack-allowed-registries"

# components/k8s/training_runtimes.py BACKOFF_ENV: the training runtimes' restart-wait init container
RESTART_BACKOFF_ENV = "TRAINSTACK_RESTART_BACKOFF_S"

# components/sagemaker/hyperpod.py: the lifecycle object the Slurm login nodes are named in
PROVISIONING_PARAMETERS = "provisioning_parameters.json"

# trainstack/tokens.py: the resource type tokens of the project's vocabulary, under its names
ROOT_STACK = "pulumi:pulumi:Stack"
HYPERPOD_CLUSTER = "aws-native:sagemaker:Cluster"
AMP_ALERT_MANAGER_DEFINITION = "aws:amp/alertManagerDefinition:AlertManagerDefinition"
AMP_RULE_GROUP_NAMESPACE = "aws:amp/ruleGroupNamespace:RuleGroupNamespace"
AMP_SCRAPER = "aws:amp/scraper:Scraper"
AMP_WORKSPACE = "aws:amp/workspace:Workspace"
AUTOSCALING_TAG = "aws:autoscaling/tag:Tag"
LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
EIP = "aws:ec2/eip:Eip"
FLOW_LOG = "aws:ec2/flowLog:FlowLog"
DEFAULT_SECURITY_GROUP = "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup"
INTERNET_GATEWAY = "aws:ec2/internetGateway:InternetGateway"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
NAT_GATEWAY = "aws:ec2/natGateway:NatGateway"
PLACEMENT_GROUP = "aws:ec2/placementGroup:PlacementGroup"
ROUTE = "aws:ec2/route:Route"
ROUTE_TABLE = "aws:ec2/routeTable:RouteTable"
ROUTE_TABLE_ASSOCIATION = "aws:ec2/routeTableAssociation:RouteTableAssociation"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
SUBNET = "aws:ec2/subnet:Subnet"
VPC = "aws:ec2/vpc:Vpc"
VPC_ENDPOINT = "aws:ec2/vpcEndpoint:VpcEndpoint"
ACCESS_ENTRY = "aws:eks/accessEntry:AccessEntry"
ACCESS_POLICY_ASSOCIATION = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
EKS_ADDON = "aws:eks/addon:Addon"
EKS_CLUSTER = "aws:eks/cluster:Cluster"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
POD_IDENTITY_ASSOCIATION = "aws:eks/podIdentityAssociation:PodIdentityAssociation"
FSX_DATA_REPOSITORY_ASSOCIATION = "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"
FSX_LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"
IAM_OIDC_PROVIDER = "aws:iam/openIdConnectProvider:OpenIdConnectProvider"
IAM_POLICY = "aws:iam/policy:Policy"
IAM_ROLE = "aws:iam/role:Role"
IAM_ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
IAM_ROLE_POLICY_ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
INSTANCE_PROFILE = "aws:iam/instanceProfile:InstanceProfile"
KMS_ALIAS = "aws:kms/alias:Alias"
KMS_KEY = "aws:kms/key:Key"
BUCKET = "aws:s3/bucket:Bucket"
BUCKET_ENCRYPTION = "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
BUCKET_LIFECYCLE_CONFIGURATION = "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration"
BUCKET_OBJECT = "aws:s3/bucketObjectv2:BucketObjectv2"
BUCKET_OBJECT_LOCK = "aws:s3/bucketObjectLockConfiguration:BucketObjectLockConfiguration"
BUCKET_POLICY = "aws:s3/bucketPolicy:BucketPolicy"
BUCKET_PUBLIC_ACCESS_BLOCK = "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"
BUCKET_V2 = "aws:s3/bucketV2:BucketV2"
BUCKET_VERSIONING = "aws:s3/bucketVersioning:BucketVersioning"
S3_BUCKETS = (BUCKET, BUCKET_V2)
SNS_TOPIC = "aws:sns/topic:Topic"
SNS_TOPIC_POLICY = "aws:sns/topicPolicy:TopicPolicy"
SNS_TOPIC_SUBSCRIPTION = "aws:sns/topicSubscription:TopicSubscription"
SECURITY_GROUP_EGRESS_RULE = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
SECURITY_GROUP_INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
VALIDATING_ADMISSION_POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
VALIDATING_ADMISSION_POLICY_BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
K8S_JOB = "kubernetes:batch/v1:Job"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
LIMIT_RANGE = "kubernetes:core/v1:LimitRange"
NAMESPACE = "kubernetes:core/v1:Namespace"
PERSISTENT_VOLUME = "kubernetes:core/v1:PersistentVolume"
PERSISTENT_VOLUME_CLAIM = "kubernetes:core/v1:PersistentVolumeClaim"
RESOURCE_QUOTA = "kubernetes:core/v1:ResourceQuota"
HELM_CHART = "kubernetes:helm.sh/v4:Chart"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
K8S_CLUSTER_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
K8S_CLUSTER_ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding"
K8S_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"
K8S_ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"
CLUSTER_TRAINING_RUNTIME = "kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime"
TRAIN_JOB = "kubernetes:trainer.kubeflow.org/v1alpha1:TrainJob"
CONFIG_FILE = "kubernetes:yaml/v2:ConfigFile"
