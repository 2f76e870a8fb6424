"""dra_inventory.py - the fake GPU nodes of the DRA suite (e2e_dra.py) and the ResourceSlices
published for them by hand, shaped as NVIDIA's DRA driver publishes them; and the reading back
of what kube-scheduler allocated from them (which node, product, type and profile each device
of a claim's status.allocation is), for e2e_dra.py's checks.

No kubelet and no driver run here: each Node is created through the API and made Ready as
e2e_scheduler.py does (make_node), and for each one this module writes the ResourceSlice the
driver's kubelet plugin would publish (driver gpu.nvidia.com, one pool per node named after the
node, spec.nodeName set). Device names, attribute names and capacity names follow
kubernetes-sigs/dra-driver-nvidia-gpu (formerly NVIDIA/k8s-dra-driver-gpu) at commit
95932046683719c43b6a0dd9613c2e5aad5d6703:

- cmd/gpu-kubelet-plugin/deviceinfo.go: a whole GPU is `gpu-<minor>` with attributes type
  'gpu', uuid, productName, brand, architecture, cudaComputeCapability, driverVersion,
  cudaDriverVersion (versions), resource.kubernetes.io/pciBusID, capacity `memory`. A VFIO
  device is `gpu-vfio-<index>`: type 'vfio', uuid, deviceID, vendorID, productName,
  iommuFDEnabled, capacity addressableMemory. That driver version publishes no `index` or
  `minor` attribute (older ones did): the minor is in the device name only.
- cmd/gpu-kubelet-plugin/mig.go: a MIG device is `gpu-<parent minor>-mig-<profile without
  dots>-<GI profile id>-<placement start>` with type 'mig', parentUUID, profile, uuid and the
  parent's productName, brand, architecture and versions; capacities multiprocessors,
  copyEngines, decoders, encoders, jpegEngines, ofaEngines, memory (bytes) and one
  `memorySlice<i>` of 1 per memory slice it occupies.
- cmd/gpu-kubelet-plugin/consumable_shares.go: with --consumable-shares=memory a device has
  allowMultipleAllocations: true and its `memory` capacity a requestPolicy (default the whole
  memory, valid range 1Mi..memory in steps of 1Mi); served by 1.37 (DRAConsumableCapacity,
  beta, on).
- cmd/compute-domain-kubelet-plugin/deviceinfo.go: driver compute-domain.nvidia.com publishes
  `channel-<id>` (type 'channel', id) and `daemon-<id>` (type 'daemon', id).

The numbers (SM counts, memory sizes of the MIG profiles, PCI addresses, UUIDs) are of the
scale the hardware reports; the checks depend only on type, productName, profile, parentUUID,
allowMultipleAllocations and memory.
"""

import hashlib
import json

from run_e2e import dig, wait_for

DRIVER = "gpu.nvidia.com"
CD_DRIVER = "compute-domain.nvidia.com"
DRIVER_VERSION = "580.95.5"
CUDA_DRIVER_VERSION = "13.0.0"

A100_80 = "NVIDIA A100-SXM4-80GB"
A100_40 = "NVIDIA A100-SXM4-40GB"
H100 = "NVIDIA H100 80GB HBM3"
L4 = "NVIDIA L4"

# (architecture, cudaComputeCapability, whole-GPU memory) per product
PRODUCTS = {A100_80: ("Ampere", "8.0.0", "81920Mi"), A100_40: ("Ampere", "8.0.0", "40960Mi"),
            H100: ("Hopper", "9.0.0", "81559Mi"), L4: ("Ada Lovelace", "8.9.0", "23034Mi")}

# MIG profiles: GI profile id, memory slices, SMs, copy engines, decoders, jpeg, memory
MIG = {
    (A100_80, "1g.10gb"): (19, 1, 14, 1, 0, 0, "9728Mi"),
    (A100_80, "2g.20gb"): (14, 2, 28, 2, 1, 0, "19968Mi"),
    (A100_80, "3g.40gb"): (9, 4, 42, 3, 2, 0, "40192Mi"),
    (A100_40, "1g.5gb"): (19, 1, 14, 1, 0, 0, "4864Mi"),
    (A100_40, "1g.10gb"): (15, 2, 14, 1, 1, 1, "9856Mi"),
    (A100_40, "2g.10gb"): (14, 2, 28, 2, 1, 0, "9856Mi"),
    (A100_40, "3g.20gb"): (9, 4, 42, 3, 2, 0, "19968Mi"),
    (H100, "1g.10gb"): (19, 1, 16, 1, 1, 1, "9984Mi"),
}


def _uuid(prefix, *parts):
    h = hashlib.sha1("/".join(parts).encode()).hexdigest()
    return "%s-%s-%s-%s-%s-%s" % (prefix, h[:8], h[8:12], h[12:16], h[16:20], h[20:32])


def _common(product, minor, node):
    arch, cc, _ = PRODUCTS[product]
    return {"productName": {"string": product}, "brand": {"string": "Nvidia"},
            "architecture": {"string": arch}, "cudaComputeCapability": {"version": cc},
            "driverVersion": {"version": DRIVER_VERSION},
            "cudaDriverVersion": {"version": CUDA_DRIVER_VERSION},
            "resource.kubernetes.io/pciBusID": {"string": "0000:%02x:00.0" % (0x07 + 8 * minor)}}


def whole_gpu(node, product, minor, consumable=False):
    attrs = _common(product, minor, node)
    attrs.update({"type": {"string": "gpu"}, "uuid": {"string": _uuid("GPU", node, str(minor))}})
    mem = PRODUCTS[product][2]
    dev = {"name": "gpu-%d" % minor, "attributes": attrs, "capacity": {"memory": {"value": mem}}}
    if consumable:
        dev["allowMultipleAllocations"] = True
        dev["capacity"]["memory"]["requestPolicy"] = {
            "default": mem, "validRange": {"min": "1Mi", "max": mem, "step": "1Mi"}}
    return dev


def mig_device(node, product, minor, profile, start):
    gi, size, sms, ce, dec, jpeg, mem = MIG[(product, profile)]
    attrs = _common(product, minor, node)
    attrs.update({"type": {"string": "mig"}, "profile": {"string": profile},
                  "parentUUID": {"string": _uuid("GPU", node, str(minor))},
                  "uuid": {"string": _uuid("MIG", node, str(minor), profile, str(start))}})
    cap = {"multiprocessors": sms, "copyEngines": ce, "decoders": dec, "encoders": 0,
           "jpegEngines": jpeg, "ofaEngines": 0}
    cap = {k: {"value": str(v)} for k, v in cap.items()}
    cap["memory"] = {"value": mem}
    for i in range(start, start + size):
        cap["memorySlice%d" % i] = {"value": "1"}
    return {"name": "gpu-%d-mig-%s-%d-%d" % (minor, profile.replace(".", ""), gi, start),
            "attributes": attrs, "capacity": cap}


def vfio_device(node, product, index):
    return {"name": "gpu-vfio-%d" % index, "attributes": {
        "type": {"string": "vfio"}, "uuid": {"string": _uuid("GPU", node, str(index))},
        "deviceID": {"string": "0x2330"}, "vendorID": {"string": "0x10de"},
        "productName": {"string": product}, "iommuFDEnabled": {"bool": False},
        "resource.kubernetes.io/pciBusID": {"string": "0000:%02x:00.0" % (0x07 + 8 * index)}},
        "capacity": {"addressableMemory": {"value": "80Gi"}}}


def slice_of(node, devices, driver=DRIVER):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "%s-%s" % (node, driver)},
            "spec": {"driver": driver, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": devices}}


def node_obj(name, labels):
    lab = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
    lab.update(labels)
    res = {"cpu": "64", "memory": "512Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": lab},
            "spec": {"taints": []}, "status": {"capacity": dict(res), "allocatable": dict(res)}}


def migs(node, product, minor, layout):
    return [mig_device(node, product, minor, p, s) for p, s in layout]


def inventory():
    """[(Node, [ResourceSlice])]: what the cluster of the DRA suite has.

    a100-80-0: two A100 80GB in MIG mode, one balanced (1g.10gb x2, 2g.20gb, 3g.40gb) and one
    all-1g.10gb; a100-40-0: one A100 40GB balanced (the four profiles of NVIDIA's gpu-test4,
    1g.5gb x2, 2g.10gb, 3g.20gb) and one with 1g.5gb x2, 2g.10gb and 1g.10gb x2 but no 3g.20gb
    (so gpu-test4's parentUUID constraint decides); h100-mig-0: an H100 all-1g.10gb (the same
    profile name as the A100 80GB pool's, told apart only by productName); h100-0: two whole
    H100s and the ComputeDomain driver's channels; l4-0: eight L4s with consumable memory
    (allowMultipleAllocations); vfio-0: an H100 bound to vfio-pci."""
    label = "nvidia.com/gpu.product"
    a80 = [("1g.10gb", 0), ("1g.10gb", 1), ("2g.20gb", 2), ("3g.40gb", 4)]
    a40 = [("1g.5gb", 0), ("1g.5gb", 1), ("2g.10gb", 2), ("3g.20gb", 4)]
    a40b = [("1g.5gb", 0), ("1g.5gb", 1), ("2g.10gb", 2), ("1g.10gb", 4), ("1g.10gb", 6)]
    all1g = [("1g.10gb", s) for s in range(7)]
    cd = [{"name": "channel-%d" % i, "attributes": {"type": {"string": "channel"},
                                                    "id": {"int": i}}} for i in range(4)]
    cd.append({"name": "daemon-0", "attributes": {"type": {"string": "daemon"}, "id": {"int": 0}}})
    return [
        (node_obj("a100-80-0", {label: "NVIDIA-A100-SXM4-80GB", "nvidia.com/mig.config":
                                "custom"}),
         [slice_of("a100-80-0", migs("a100-80-0", A100_80, 0, a80) +
                   migs("a100-80-0", A100_80, 1, all1g))]),
        (node_obj("a100-40-0", {label: "NVIDIA-A100-SXM4-40GB", "nvidia.com/mig.config":
                                "custom"}),
         [slice_of("a100-40-0", migs("a100-40-0", A100_40, 0, a40) +
                   migs("a100-40-0", A100_40, 1, a40b))]),
        (node_obj("h100-mig-0", {label: "NVIDIA-H100-80GB-HBM3", "nvidia.com/mig.config":
                                 "all-1g.10gb"}),
         [slice_of("h100-mig-0", migs("h100-mig-0", H100, 0, all1g))]),
        (node_obj("h100-0", {label: "NVIDIA-H100-80GB-HBM3"}),
         [slice_of("h100-0", [whole_gpu("h100-0", H100, i) for i in range(2)]),
          slice_of("h100-0", cd, CD_DRIVER)]),
        (node_obj("l4-0", {label: "NVIDIA-L4"}),
         [slice_of("l4-0", [whole_gpu("l4-0", L4, i, consumable=True) for i in range(8)])]),
        (node_obj("vfio-0", {"nvidia.com/gpu.workload.config": "vm-passthrough"}),
         [slice_of("vfio-0", [vfio_device("vfio-0", H100, 0)])]),
    ]


def attr_value(a):
    """The value of a DeviceAttribute (string, int, bool or version)."""
    for k in ("string", "int", "bool", "version"):
        if k in a:
            return a[k]
    return None


class Devices:
    """What the API server stores of the ResourceSlices: (driver, pool, device) -> (node,
    attributes by name, the device). Built from `kubectl get resourceslices -o json`."""

    def __init__(self, slices_json):
        self.by_key = {}
        for s in slices_json.get("items", []):
            sp = s.get("spec", {})
            for d in sp.get("devices") or []:
                attrs = {k: attr_value(v) for k, v in (d.get("attributes") or {}).items()}
                self.by_key[(sp.get("driver"), sp.get("pool", {}).get("name"), d["name"])] = (
                    sp.get("nodeName"), attrs, d)

    def of(self, result):
        """(node, attrs, device) of an allocation result, or (None, {}, {})."""
        return self.by_key.get((result.get("driver"), result.get("pool"), result.get("device")),
                               (None, {}, {}))

    def count(self, driver=None):
        return sum(1 for k in self.by_key if driver is None or k[0] == driver)


# --------------------------------------------------------------------------------------------
# reading back what the scheduler allocated (e2e_dra.py's checks)

# The node label of each policies-dra pool (its nodeSelector)
POOL_NODES = {"a100-mig": "NVIDIA-A100-SXM4-80GB", "a100-40-mig": "NVIDIA-A100-SXM4-40GB",
              "h100-train": "NVIDIA-H100-80GB-HBM3", "l4-shares": "NVIDIA-L4"}
RC = "resourceclaims.resource.k8s.io"


def settle(c, ns, name, timeout=60):
    """Waits until the pod is bound or the scheduler said it does not fit: ("bound", node) or
    ("unschedulable", message)."""
    def state():
        p = c.get("pod", name, ns)
        if not p:
            return None
        if dig(p, "spec", "nodeName"):
            return ("bound", p["spec"]["nodeName"])
        for cond in dig(p, "status", "conditions", default=[]) or []:
            if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
                return ("unschedulable", cond.get("message", ""))
        return None
    return wait_for("pod %s/%s bound or unschedulable" % (ns, name), state, timeout, 0.3)


def pod_claim_names(c, ns, name):
    """The ResourceClaims a pod got: from its templates (status.resourceClaimStatuses) and the
    scheduler's extended-resource claim (status.extendedResourceClaimStatus)."""
    p = c.get("pod", name, ns) or {}
    names = [s.get("resourceClaimName") for s in
             dig(p, "status", "resourceClaimStatuses", default=[]) or []
             if s.get("resourceClaimName")]
    ext = dig(p, "status", "extendedResourceClaimStatus", "resourceClaimName")
    return names + ([ext] if ext else [])


def devices(c):
    return Devices(json.loads(c.kubectl("get", "resourceslices", "-o", "json").stdout))


def results(obj):
    return dig(obj, "status", "allocation", "devices", "results", default=[]) or []


def allocated(c, ns, name, timeout=30):
    """The stored claim once it has status.allocation (None when it never got one)."""
    try:
        return wait_for("claim %s/%s allocated" % (ns, name),
                        lambda: (lambda o: o if o and results(o) else None)(c.get(RC, name, ns)),
                        timeout, 0.3)
    except RuntimeError:
        return None


def node_labels(c):
    items = json.loads(c.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    return {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in items}


def describe(devs, claim_obj):
    """request -> (node, productName, type, profile, device) of each allocated device."""
    out = []
    for r in results(claim_obj):
        node, attrs, _ = devs.of(r)
        out.append((r.get("request"), node, attrs.get("productName"), attrs.get("type"),
                    attrs.get("profile"), r.get("device")))
    return out


def in_pool(c, devs, claim_obj, pool, product):
    """Every allocated device is on a node of policies-dra's `pool` (its nodeSelector) and has
    the pool's productName."""
    labels = node_labels(c)
    res = results(claim_obj)
    return bool(res) and all(
        labels.get(devs.of(r)[0], {}).get("nvidia.com/gpu.product") == POOL_NODES[pool] and
        devs.of(r)[1].get("productName") == product for r in res)


def wait_claims_of(c, ns, pod, n=1, timeout=60):
    """The names of the pod's n claims once the pod is bound and they are allocated, or []."""
    try:
        settle(c, ns, pod, timeout)
        return wait_for("%d claims of pod %s/%s" % (n, ns, pod),
                        lambda: (lambda x: x if len(x) >= n else None)(
                            pod_claim_names(c, ns, pod)), timeout, 0.3)
    except RuntimeError:
        return []
