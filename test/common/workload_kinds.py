"""workload_kinds.py - the built-in workload kinds (docs/policy.md "workloads") by (API group,
kind), for the test scripts that pick workload objects out of fixtures (the fixture sweep, the
fuzz seed maker). The tests' own copy, written from the docs, not read from the product.
"""

WORKLOAD_KINDS = {
    ("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "DaemonSet"),
    ("apps", "ReplicaSet"), ("batch", "Job"), ("batch", "CronJob"),
    ("", "ReplicationController"), ("", "PodTemplate"), ("kubeflow.org", "PyTorchJob"),
    ("kubeflow.org", "TFJob"), ("kubeflow.org", "MPIJob"), ("jobset.x-k8s.io", "JobSet"),
    ("ray.io", "RayCluster"), ("ray.io", "RayJob"),
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"),
}
