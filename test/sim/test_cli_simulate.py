#!/usr/bin/env python3
"""test_cli_simulate.py - `gpu-admission simulate` as a user runs it (python3 stdlib only).

Proves: text and -o json answers on the known-answer inputs (14 x 4Gi on one A100-40GB node
-> 2 GPUs, baseline 14) and on the worked example of docs/simulate.md (denied pod with the
engine's message, tenant conflict, island too small, per group and pool figures, memory);
--suggest-mig prints a mig-parted file whose layouts hold exactly the placed instances;
the issue 31 walkthrough (a node List of GB200, H100 MIG and L40S nodes with GFD's labels, 2,000
pods: no pool without nodes, the counts adding up to the input; with the H100 pool's label
wrong, the pool named first in text, JSON, --suggest-mig and the report);
--report writes a self-contained page (no http(s) reference) with the figures, a legend, pool
and group tables, unplaced pods by cause and in runs, denied pods, a fleet strip per node and a
cell per GPU, and the detail tiles (one SVG per used GPU, one element per instance) folded away; bad inventories and workloads exit 1 with file:line:col and nothing
on stdout; usage errors exit 1.

With --chromium BINARY it also renders the report in headless Chromium at 10 nodes and at
1,000 nodes: the DOM Chromium built has the strips, cells, tables and capped tiles, and two
screenshots are written (--screenshot PATH and PATH-1000.png) for a person to look at.

usage: test_cli_simulate.py --bin GPU_ADMISSION --src SOURCE_DIR [--chromium CHROMIUM]
                            [--screenshot PNG]
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from clitest import check, finish, parse_args, runner  # noqa: E402

args = parse_args("--chromium", "--screenshot")
BIN, SRC = args.bin, args.src
T = os.path.join(SRC, "test", "sim")
POL = os.path.join(T, "policies")
sim = runner(BIN, "simulate")


tmp = tempfile.mkdtemp(prefix="gpa-sim-")

# --- known answer, text and json
one = os.path.join(T, "inventories", "a100-one.yaml")
small = os.path.join(T, "workloads", "fourteen-small.yaml")
rc, out, err = sim("-p", POL, "-i", one, small)
check(rc == 0, f"text run exits 0 (got {rc}: {err})")
check("GPUs: 2 used of 8; whole-GPU baseline 14 (12 saved, 7.0x)" in out, "text: 2 of 8 vs 14\n" + out)
rc, out, err = sim("-p", POL, "-i", one, "-o", "json", small)
j = json.loads(out) if rc == 0 else {}
check(j.get("pods") == 14 and j.get("denied") == [] and j.get("unplaced") == [], "json pods")
check(j.get("gpus") == {"total": 8, "used": 2, "wholeGpuBaseline": 14, "saved": 12, "unplacedGpus": 0,
                        "allocatedShare": 1.75, "allocationRatio": 0.2188}, f"json gpus {j.get('gpus')}")
# simulated on whole cards: 8 of the 14 fit the 8 GPUs, so 6 are placed only thanks to MIG
check(j.get("wholeGpuOnly") == {"placed": 8, "unplaced": 6, "used": 8, "placedOnlyWithSharing": 6,
                                "placedOnlyWhole": 0}, f"json wholeGpuOnly {j.get('wholeGpuOnly')}")
check(j.get("memory", {}).get("allocatedBytes") == 70e9, "json memory allocated 14 x 5 GB")
nodes = j.get("nodes", [])
check(len(nodes) == 1 and nodes[0]["name"] == "a100-0" and nodes[0]["gpusUsed"] == 2, "json nodes")
inst = [i for n in nodes for g in n["gpus"] for i in g["instances"]]
check(len(inst) == 14 and all(i["profile"] == "1g.5gb" and i["size"] == 1 for i in inst), "14 x 1g.5gb")
starts = sorted(i["start"] for i in inst)
check(starts == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6], f"1g starts 0-6 twice: {starts}")

# --- DRA claims (issue 24) are skipped and counted apart: the inventory has no DRA devices
claims = os.path.join(SRC, "test", "fixtures", "nvidia-k8s-dra-driver-gpu", "quickstart_v1_gpu-test4.yaml")
rc, out, err = sim("-p", POL, "-i", one, "-o", "json", small, claims)
j = json.loads(out) if rc == 0 else {}
# the file: a Namespace (skipped), a ResourceClaimTemplate (skipped, a claim), a Deployment of 4
check(j.get("skippedClaims") == 1 and j.get("skipped") == 2, f"claims skipped: {j.get('skipped')} {j.get('skippedClaims')} {err}")
rc, out, err = sim("-p", POL, "-i", one, small, claims)
check("claims: 1 DRA claim(s) skipped: simulate places pods on GPUs, not claims on DRA devices" in out,
      "text says the claims were skipped\n" + out)
rc, out, err = sim("-p", POL, "-i", one, small)
check("DRA claim" not in out, "no claims line without claims")

# --- the worked example
cl = os.path.join(T, "inventories", "cluster.yaml")
mixed = os.path.join(T, "workloads", "mixed.yaml")
report = os.path.join(tmp, "report.html")
rc, out, err = sim("-p", POL, "-i", cl, "-o", "json", "--report", report, mixed)
check(rc == 0, f"worked example exits 0 ({err})")
j = json.loads(out) if rc == 0 else {}
# baseline of the 19 placed pods (14 MIG + 3 replicas + 2 x 4 whole) = 25; the 3 unplaced
# notebooks and the third fine-tuning pod ask 3 + 4 = 7 GPUs on their own
check(j.get("gpus", {}).get("used") == 12 and j["gpus"]["wholeGpuBaseline"] == 25 and
      j["gpus"]["saved"] == 13 and j["gpus"]["unplacedGpus"] == 7, f"example gpus {j.get('gpus')}")
# 2 x 3g.20gb (1.0) + 3 x 1g.10gb + 2 x 1g.5gb (1.0) + 7 x 1g.5gb (0.875) + 3/4 + 8 = 11.625
check(j["gpus"].get("allocatedShare") == 11.625 and j["gpus"].get("allocationRatio") == 0.3229,
      f"example allocation {j.get('gpus')}")
unp_gpus = {p["pool"]: p["unplacedGpus"] for p in j.get("pools", [])}
check(unp_gpus == {"a100-mig": 0, "shared": 3, "train": 4, "(no pool)": 0}, f"pool unplaced GPUs {unp_gpus}")
check([d["pod"] for d in j.get("denied", [])] == ["denied/miner"], "denied pod")
check("namespace denied may not use GPUs" in j["denied"][0]["message"], "engine's deny message")
reasons = {u["pod"]: u["reason"] for u in j.get("unplaced", [])}
check(reasons == {"team-b/notebook-0": "tenant conflict", "team-b/notebook-1": "tenant conflict",
                  "team-b/notebook-2": "tenant conflict", "training/finetune-2": "island too small"},
      f"unplaced reasons {reasons}")
pools = {p["pool"]: (p["placed"], p["unplaced"]) for p in j.get("pools", [])}
check(pools == {"a100-mig": (14, 0), "shared": (3, 3), "train": (2, 1), "(no pool)": (0, 0)},
      f"pools {pools}")
# the denied pod (a deny rule: the engine chose no pool) is counted under "(no pool)"
denied_by_pool = {p["pool"]: p["denied"] for p in j.get("pools", [])}
check(denied_by_pool == {"a100-mig": 0, "shared": 0, "train": 0, "(no pool)": 1},
      f"denied per pool {denied_by_pool}")
groups = {g["name"]: g["used"] for g in j.get("groups", [])}
check(groups == {"a100": 3, "h100": 8, "shared": 1}, f"groups {groups}")
a100 = [g for g in j.get("groups", []) if g["name"] == "a100"]
# 9 x 4Gi + 3 x 9Gi + 2 x 18Gi asked; 9 x 1g.5gb + 3 x 1g.10gb + 2 x 3g.20gb = 115 GB given
check(a100 and a100[0]["memoryRequestedBytes"] == 99 * 2**30 and
      a100[0]["memoryAllocatedBytes"] == 115e9, f"a100 group memory {a100}")
shared = [p for p in j.get("pools", []) if p["pool"] == "shared"]
check(shared and shared[0]["memoryAllocatedBytes"] == 3 * 4e9, f"shared pool memory {shared}")
# the two placed training pods share one NVLink domain (one h100 node here)
train_nodes = {p["node"] for p in j.get("placements", []) if p["pod"].startswith("training/")}
check(len(train_nodes) == 1, f"gang in one domain: {train_nodes}")

# --- the report: self-contained, one SVG per used GPU, one element per instance
html = open(report).read() if os.path.exists(report) else ""
check(html.startswith("<!DOCTYPE html>"), "report written")
check(not re.search(r"(src|href)=\"https?:", html), "no network references")
n_svg = html.count('<svg class="gpu-svg"')
n_inst = html.count('<g class="instance"')
check(n_svg == 12, f"one SVG per used GPU: {n_svg}")
check(n_inst == 19 - 2 + 2 * 4, f"instances: 14 MIG + 3 replicas + 8 whole GPUs = 25, got {n_inst}")
check('id="bar"' in html and 'class="used"' in html and 'class="baseline"' in html, "bar")
# issue 22's report: legend, per pool and group tables, unplaced by cause and listed, denied,
# a fleet strip per node with a cell per GPU, detail tiles folded in a <details>
for part in ('id="legend"', 'id="pools"', 'id="groups"', 'id="causes"', 'id="unplaced"',
             'id="denied"', 'id="fleet"', '<details id="detail">'):
    check(part in html, "report has " + part)
check(html.count('<g class="node"') == 5 and html.count('class="cell"') == 36,
      "fleet: 5 node strips, 36 GPU cells: %d %d" % (html.count('<g class="node"'), html.count('class="cell"')))
check(html.index('id="fleet"') < html.index('id="unplaced"') < html.index('<details id="detail">'),
      "fleet before the lists, tiles last")
# the pool table's row for train: 3 pods, 2 placed, 1 unplaced, baseline 8, unplaced ask 4
check(re.search(r"<tr><td>train</td><td class=\"n\">3</td><td class=\"n\">2</td><td class=\"n\">1</td>"
                r"<td class=\"n\">0</td><td class=\"n\">2</td><td class=\"n\">8</td><td class=\"n\">4</td>",
                html) is not None,
      "pools table row for train")
# the 3 team-b notebooks fail alike: one row of the unplaced table
check('data-pods="3">team-b/notebook-0 ... team-b/notebook-2 (3 pods)' in html, "copies failing alike: one row")
# fill colours: full = the 8 H100 cards and the two A100s whose slices are all held (2 x 3g.20gb;
# 3 x 1g.10gb + 2 x 1g.5gb); the third A100 holds 7 x 1g.5gb of 8 slices; the time-sliced card 3/4
fills = re.findall(r'class="cell"[^>]*fill="(hsl\(145,55%,[0-9]+%\))"', html)
check(sorted(fills) == ["hsl(145,55%,35%)"] * 10 + ["hsl(145,55%,41%)", "hsl(145,55%,47%)"],
      f"cell fills {sorted(fills)}")

# --- suggest-mig: the layouts hold exactly the 14 MIG instances placed
rc, out, err = sim("-p", POL, "-i", cl, "--suggest-mig", mixed)
check(rc == 0 and out.startswith("# mig-parted"), "suggest-mig runs")
per_node = out[out.find("  a100-a100-0:"):]
counts = {}
for m in re.finditer(r'"([0-9]g\.[0-9]+gb)": ([0-9]+)', per_node):
    counts[m.group(1)] = counts.get(m.group(1), 0) + int(m.group(2))
check(counts == {"1g.5gb": 9, "1g.10gb": 3, "3g.20gb": 2}, f"suggested instances {counts}")
# one layout for the whole group: 2 x 1g.5gb + 1g.10gb + 3g.20gb on 5 GPUs holds them (no
# uniform layout does it in 4: a 3g leaves 4 slices, 1g.10gb takes 2, so at most 2 x 1g.5gb)
check("  a100-uniform:  # group a100: its 14 placed instances on 5 GPUs, every GPU the same "
      "layout\n    - devices: all\n      mig-enabled: true\n      mig-devices:\n"
      '        "1g.5gb": 2\n        "1g.10gb": 1\n        "3g.20gb": 1\n' in out,
      "uniform group layout\n" + out)
check("version: v1\nmig-configs:\n  a100-uniform:" in out and
      "\n  a100-a100-0:\n    - devices: [0]\n" in out, "mig-parted shape")
try:
    import yaml  # python3-yaml (scripts/setup.sh test): the file must be YAML mig-parted reads
    y = yaml.safe_load(out)
    check(y["version"] == "v1" and "a100-a100-0" in y["mig-configs"], "suggest-mig parses as YAML")
except ImportError:
    pass

# --- --compare: the same pods on variants, side by side (issue 22: a few small pods must not
# dictate every node's layout). 40 x 10Gi (3g.20gb) + 2 x 4Gi (1g.5gb) on 6 nodes of 8 A100-40GB
# laid out all-balanced: one 3g.20gb per GPU, 40 GPUs; mig=auto and the suggestion take 21;
# cluster.yaml (2 A100 nodes, mig: auto) holds 32 x 3g.20gb on its 16 GPUs, 10 pods unplaced
six = os.path.join(tmp, "six.yaml")
with open(six, "w") as f:
    f.write("apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n  nodeGroups:\n"
            "    - {name: a100, count: 6, gpus: 8, gpu: A100-40GB, mig: all-balanced,\n"
            "       taints: [{key: nvidia.com/gpu, effect: NoSchedule}]}\n")
sixw = os.path.join(tmp, "six-pods.yaml")
with open(sixw, "w") as f:
    for name, n, mem in (("llm", 40, "10Gi"), ("sandbox", 2, "4Gi")):
        f.write("---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: %s, namespace: inference}\n"
                "spec:\n  replicas: %d\n  selector: {matchLabels: {app: %s}}\n  template:\n"
                "    metadata: {labels: {app: %s}, annotations: {gpu-admission.io/gpu-memory: %s}}\n"
                "    spec: {containers: [{name: m, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]}\n"
                % (name, n, name, name, mem))
rc, out, err = sim("-p", POL, "-i", six, "-o", "json", "--compare", "mig=auto", "--compare",
                   "mig=all-3g.20gb", "--compare", "suggested", "--compare", cl, sixw)
check(rc == 0, f"--compare runs ({err})")
cmp = {c["variant"]: c for c in (json.loads(out).get("compare", []) if rc == 0 else [])}
got = {k: (c["placed"], c["unplaced"], c["gpusUsed"]) for k, c in cmp.items()}
check(got == {"this inventory": (42, 0, 40), "mig=auto": (42, 0, 21), "mig=all-3g.20gb": (40, 2, 20),
              "suggested": (42, 0, 21), cl: (32, 10, 16)},
      f"compare (placed, unplaced, used): {got}")
rep6 = os.path.join(tmp, "six.html")
rc, out, err = sim("-p", POL, "-i", six, "--report", rep6, "--compare", "suggested", "--compare",
                   "mig=all-balanced", sixw)
h6 = open(rep6).read() if rc == 0 else ""
check('<table id="compare">' in h6 and
      "<tr><td>suggested</td><td class=\"n\">42</td><td class=\"n\">0</td><td class=\"n\">21</td>" in h6,
      "the report's compare table agrees with the text")
check(rc == 0 and "\ncompare (the same admitted pods on each inventory):\n" in out and
      re.search(r"\n  suggested +42 +0 +21 +42 +21 ", out) is not None, "compare text table\n" + out)
# a policy variant admits the workloads again: every inference pod on 3g.20gb, one per GPU of
# the all-balanced layout: 42 placed on 42 GPUs
pol2 = os.path.join(tmp, "policies-3g")
os.makedirs(pol2, exist_ok=True)
with open(os.path.join(POL, "sim.yaml")) as f:
    text = f.read()
check("place: {pool: a100-mig, migProfile: auto}" in text, "the test policy's inference rule")
with open(os.path.join(pol2, "sim.yaml"), "w") as f:
    f.write(text.replace("place: {pool: a100-mig, migProfile: auto}",
                         "place: {pool: a100-mig, migProfile: 3g.20gb}"))
rc, out, err = sim("-p", POL, "-i", six, "-o", "json", "--compare", "policies=" + pol2, sixw)
cmp = {c["variant"]: c for c in (json.loads(out).get("compare", []) if rc == 0 else [])}
v = cmp.get("policies=" + pol2, {})
check(rc == 0 and (v.get("placed"), v.get("unplaced"), v.get("gpusUsed")) == (42, 0, 42),
      f"policy variant: {rc} {v} {err}")
rc, out, err = sim("-p", POL, "-i", six, "--compare", "policies=" + os.path.join(tmp, "nope"), sixw)
check(rc == 1 and "--compare policies=" in err and "policy set refused" in err,
      f"a policy variant that does not load: {rc} {err}")
rc, out, err = sim("-p", POL, "-i", six, "--compare", "mig=all-7g.80gb", sixw)
check(rc == 1 and "--compare mig=all-7g.80gb: all-7g.80gb is not a layout of A100-40GB" in err,
      f"a layout the model lacks: {rc} {err}")
rc, out, err = sim("-p", POL, "-i", six, "--compare", os.path.join(tmp, "missing.yaml"), sixw)
check(rc == 1 and "missing.yaml" in err, f"a missing variant file: {rc} {err}")

# --- issue 31's walkthrough: 72 GB200 trays in NVL72 racks, 32 HGX H100 with MIG, 16 L40S
# time-sliced, listed as `kubectl get nodes -o json` with GFD's labels; 2,000 pods
# (make_walkthrough.py writes both files)
WPOL = os.path.join(T, "policies-walkthrough")
wnodes = os.path.join(T, "inventories", "walkthrough-nodes.json")
wwork = os.path.join(T, "workloads", "walkthrough.yaml")
rc, out, err = sim("-p", WPOL, "-i", wnodes, "-o", "json", wwork)
check(rc == 0, f"walkthrough runs ({err})")
wj = json.loads(out) if rc == 0 else {}
wden = sum(d.get("pods", 0) for d in wj.get("denied", []))
check(wj.get("poolsWithoutNodes") == [], f"walkthrough: every pool has nodes: {wj.get('poolsWithoutNodes')}")
check(wj.get("pods") == 2000 and wden == 30 and
      wj.get("placed", 0) + len(wj.get("unplaced", [])) + wden == 2000,
      f"walkthrough: the counts add up to the 2,000 pods put in: {wj.get('pods')} "
      f"{wj.get('placed')} {len(wj.get('unplaced', []))} {wden}")
check([(d["pod"], d["pods"]) for d in wj.get("denied", [])] == [("sandbox/miner", 20), ("sandbox/sweep", 10)],
      f"walkthrough: the two denied workloads with their pods: {wj.get('denied')}")
check([(g["name"], g["nodes"], g["gpus"]) for g in wj.get("groups", [])] ==
      [("NVIDIA-GB200", 72, 288), ("NVIDIA-H100-80GB-HBM3", 32, 256), ("NVIDIA-L40S", 16, 128)],
      f"walkthrough: three groups by GFD product: {[(g['name'], g['nodes']) for g in wj.get('groups', [])]}")
wpools = {p["pool"]: p for p in wj.get("pools", [])}
check(all(wpools.get(k, {}).get("placed", 0) > 0 for k in ("h100-mig", "l40s-shared", "gb200-train")) and
      sum(p["pods"] + p["denied"] for p in wpools.values()) == 2000,
      f"walkthrough: every pool places pods, pools add up to 2,000: {wpools}")
rc, out, err = sim("-p", WPOL, "-i", wnodes, wwork)
check(out.startswith("pods: 2000 (placed 1712, unplaced 258, denied 30, skipped objects 0)\n") and
      "  sandbox/miner (20 pods): denied by GPU policy rule no-sandbox-gpus" in out,
      "walkthrough text: the headline is the pods put in\n" + out[:400])
# gangs: pod by pod (kube-scheduler alone) one PyTorchJob is left half placed; with --gangs
# whole every job is placed whole or not at all, the unplaced ones with one cause each
def jobs(j):
    c = {}
    for key, entries in (("placed", j.get("placements", [])), ("unplaced", j.get("unplaced", []))):
        for e in entries:
            if e["pod"].startswith("training/"):
                c.setdefault(e["pod"].split("[")[0], {"placed": 0, "unplaced": 0, "causes": set()})[key] += 1
                if key == "unplaced":
                    c[e["pod"].split("[")[0]]["causes"].add((e["reason"], e["detail"]))
    return c


half = [k for k, v in jobs(wj).items() if v["placed"] and v["unplaced"]]
check(len(half) == 1, f"pod by pod: one job half placed: {half}")
rc, out, err = sim("-p", WPOL, "-i", wnodes, "-o", "json", "--gangs", "whole", wwork)
gj = json.loads(out) if rc == 0 else {}
gjobs = jobs(gj)
check(rc == 0 and len(gjobs) == 26 and not [k for k, v in gjobs.items() if v["placed"] and v["unplaced"]]
      and all(len(v["causes"]) == 1 for v in gjobs.values() if v["unplaced"]) and
      all("placed whole or not at all" in next(iter(v["causes"]))[1] for v in gjobs.values() if v["unplaced"]),
      f"--gangs whole: every job whole or not at all, one cause: {sorted((k, v['placed'], v['unplaced']) for k, v in gjobs.items())}")
check(gj.get("pods") == 2000 and gj.get("placed", 0) + len(gj.get("unplaced", [])) + 30 == 2000,
      "--gangs whole: the counts still add up")
# the gangs by job (JSON and report): 26 jobs, each whole or not placed with why; pod by pod
# the half-placed one says so
states = {g["job"]: g["gang"] for g in gj.get("gangs", [])}
check(len(states) == 26 and set(states.values()) == {"whole", "not placed"} and
      gj["gangs"][0] == {"job": "training/llm-pretrain-0", "topologyKey": "cloud.provider.com/topology-block",
                         "pods": 36, "placed": 36, "unplaced": 0, "gang": "whole", "domains": ["block-0"]} and
      all(g.get("reason") and "placed whole or not at all" in g.get("detail", "")
          for g in gj["gangs"] if g["gang"] == "not placed"),
      f"json gangs: {gj.get('gangs', [])[:2]}")
check([g["job"] for g in wj.get("gangs", []) if g["gang"] == "partly placed"] == half,
      f"pod by pod: the half-placed job is 'partly placed': {half}")
gang_report = os.path.join(tmp, "walkthrough-gangs.html")
rc, out, err = sim("-p", WPOL, "-i", wnodes, "--gangs", "whole", "--report", gang_report, wwork)
with open(gang_report) as f:
    gh = f.read()
check("<h2>Gangs by job (26)</h2>" in gh and '<table id="gangs">' in gh and
      "<tr><td>training/llm-pretrain-0</td><td class=\"n\">36</td><td class=\"n\">36</td>"
      "<td class=\"n\">0</td><td>whole</td><td>block-0 (cloud.provider.com/topology-block)</td>" in gh,
      "report: the gangs table")
rc, out, err = sim("-p", POL, "-i", cl, "--gangs", "whole", mixed)
check(rc == 0 and out.startswith("pods: 24 (placed 17, unplaced 6, denied 1,") and
      out.count("training/finetune-") == 3 and
      "  island too small                         3 pod(s), 12 GPU(s) asked" in out,
      "worked example, gangs whole: the 3-pod gang unplaced whole\n" + out)
rc, out, err = sim("-p", POL, "-i", cl, "--gangs", "some", mixed)
check(rc == 1 and "--gangs must be pods or whole, not some" in err, f"bad --gangs: {rc} {err}")
# the mistake: the H100 pool written for NVIDIA-H100-80GB, which GFD never writes
wbad = os.path.join(tmp, "policies-walkthrough-bad")
os.mkdir(wbad)
with open(os.path.join(WPOL, "walkthrough.yaml")) as f:
    pol = f.read()
with open(os.path.join(wbad, "walkthrough.yaml"), "w") as f:
    f.write(pol.replace("{nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}", "{nvidia.com/gpu.product: NVIDIA-H100-80GB}"))
NOPOOL = ("pool h100-mig matches no node: its pods ask nvidia.com/gpu.product=NVIDIA-H100-80GB; the closest "
          "value nodes carry is nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3 (32 nodes)")
wbad_report = os.path.join(tmp, "walkthrough-bad.html")
rc, out, err = sim("-p", wbad, "-i", wnodes, "--report", wbad_report, wwork)
check(rc == 0 and out.startswith(NOPOOL + "\npods: 2000 (placed 472, unplaced 1498, denied 30,"),
      "walkthrough, wrong label: the pool named first\n" + out[:500])
rc, out, err = sim("-p", wbad, "-i", wnodes, "-o", "json", wwork)
bj = json.loads(out) if rc == 0 else {}
check([p.get("message") for p in bj.get("poolsWithoutNodes", [])] == [NOPOOL], f"json: {bj.get('poolsWithoutNodes')}")
rc, out, err = sim("-p", wbad, "-i", wnodes, "--suggest-mig", wwork)
check(out.startswith("# " + NOPOOL + "\n"), "--suggest-mig names it first:\n" + out[:300])
with open(wbad_report) as f:
    wbad_html = f.read()
check('<div id="nonodes" class="warn"><p>' + NOPOOL + "</p></div>" in wbad_html, "report: the red box")
# the fleet view draws the NVLink domains (one clique per NVL72 rack) as boxes named by their
# value, inside the blocks the 144-GPU gang's affinity names (issue 31 item 2's drawing)
check(wbad_html.count('<g class="domain"') == 4 and wbad_html.count('<g class="block"') == 2 and
      'data-domain="6e5e0b0c-4b24-4b86-9d2b-4c6c1b0b7a10.32766"' in wbad_html and
      'data-block="block-1"' in wbad_html and
      "a box per nvidia.com/gpu.clique (18 nodes) in a box per cloud.provider.com/topology-block "
      "(36 nodes)" in wbad_html, "report: 4 rack boxes in 2 block boxes")

# --- bad input: file:line:col, exit 1, nothing on stdout
def bad(name, text, want, workload=small, inventory=None):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    inv = inventory or path
    wl = path if inventory else workload
    rc, out, err = sim("-p", POL, "-i", inv, wl)
    check(rc == 1 and out == "" and want in err, f"{name}: exit {rc}, stderr {err!r}, want {want!r}")


HEAD = "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n  nodeGroups:\n"
bad("model.yaml", HEAD + "    - name: x\n      gpus: 8\n      gpu: V100\n",
    "model.yaml:7:12: unknown GPU model V100")
bad("profile.yaml", HEAD + "    - name: x\n      gpus: 8\n      gpu: A30-24GB\n      mig: {3g.12gb: 1}\n",
    "profile.yaml:8:13: A30-24GB has no MIG profile 3g.12gb")
bad("layout.yaml", HEAD + "    - name: x\n      gpus: 8\n      gpu: A100-80GB\n      mig: {4g.40gb: 1, 3g.40gb: 1, 1g.10gb: 1}\n",
    "layout.yaml:8:12: this MIG layout does not fit one A100-80GB")
bad("negative.yaml", HEAD + "    - name: x\n      count: -1\n      gpus: 8\n",
    "negative.yaml:6:14: count must be between 0 and 100000, got -1")
bad("huge.yaml", HEAD + "    - name: x\n      count: 1000000000\n      gpus: 8\n",
    "huge.yaml:6:14: count must be between 0 and 100000, got 1000000000")
bad("replicas.yaml",
    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: many, namespace: inference}\n"
    "spec:\n  replicas: 1000000000\n  selector: {matchLabels: {a: b}}\n  template:\n"
    "    metadata: {labels: {a: b}, annotations: {gpu-admission.io/gpu-memory: 4Gi}}\n"
    "    spec: {containers: [{name: m, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]}\n",
    "replicas.yaml:1:1: inference/many: 1000000000 pods would exceed the simulator's limit",
    inventory=one)
bad("notyaml.yaml", "apiVersion: v1\nkind: Pod\nmetadata: [\n", "notyaml.yaml:", inventory=one)
rc, out, err = sim("-p", POL, small)
check(rc == 1 and "--inventory FILE is required" in err, "missing --inventory")
rc, out, err = sim("-p", POL, "-i", one, "-o", "yaml", small)
check(rc == 1 and "-o must be text or json" in err, "bad -o")

# --- headless Chromium: it renders the page and its DOM has the SVGs and instances
if args.chromium:
    prof = tempfile.mkdtemp(prefix="gpa-chromium-")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={prof}"]
    p = subprocess.run([args.chromium, *flags, "--dump-dom", "file://" + report],
                       capture_output=True, text=True, timeout=120)
    dom = p.stdout
    check(p.returncode == 0, f"chromium --dump-dom exits 0 ({p.stderr[-500:]})")
    n_dom_svg = dom.count('class="gpu-svg"')
    check(n_dom_svg == 12, f"rendered DOM: 12 GPU SVGs, got {n_dom_svg}")
    check(dom.count('class="instance"') == 25, "rendered DOM: 25 instances")
    check("GPUs used: 12" in dom and "whole-GPU baseline: 25" in dom, "rendered bar labels")
    check(dom.count('class="cell"') == 36 and 'id="pools"' in dom and "Detail tiles: 12 GPUs" in dom,
          "rendered DOM: fleet cells, pool table, folded tiles")

    def screenshot(page, shot, height):
        p = subprocess.run([args.chromium, *flags, f"--screenshot={shot}", f"--window-size=1400,{height}",
                            "--hide-scrollbars", "file://" + page],
                           capture_output=True, text=True, timeout=180)
        ok = p.returncode == 0 and os.path.exists(shot)
        check(ok, f"chromium screenshot ({p.stderr[-500:]})")
        if ok:
            with open(shot, "rb") as f:
                png = f.read()
            check(png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20000, f"screenshot is a real PNG ({len(png)} bytes)")
            print("screenshot:", shot)

    # 10 nodes (docs/images/simulate-report.png)
    ten = os.path.join(tmp, "report-10.html")
    rc, out, err = sim("-p", POL, "-i", os.path.join(T, "inventories", "ten.yaml"), "--report", ten,
                       mixed, os.path.join(T, "workloads", "ten-extra.yaml"))
    check(rc == 0, f"10-node report ({err})")
    p = subprocess.run([args.chromium, *flags, "--dump-dom", "file://" + ten], capture_output=True, text=True,
                       timeout=120)
    check(p.stdout.count('<g class="node"') == 10 and p.stdout.count('class="cell"') == 68,
          "10 nodes rendered: 10 strips, 68 cells")
    # the 16-GPU pretrain pod is denied in pool train (the engine chose it, then refused)
    check(re.search(r"<tr><td>train</td><td class=\"n\">3</td><td class=\"n\">3</td><td class=\"n\">0</td>"
                    r"<td class=\"n\">1</td>", p.stdout) is not None, "10 nodes: train's denied pod")
    shot = args.screenshot or os.path.join(tmp, "report.png")
    screenshot(ten, shot, 1500)
    # 1,000 nodes (docs/images/simulate-report-1000.png): one strip per node, tiles capped
    big = os.path.join(tmp, "report-1000.html")
    rc, out, err = sim("-p", POL, "-i", os.path.join(T, "inventories", "fleet.yaml"), "-o", "json",
                       "--report", big, os.path.join(T, "workloads", "fleet.yaml"))
    check(rc == 0, f"1000-node report ({err})")
    jb = json.loads(out) if rc == 0 else {"nodes": [], "unplaced": []}
    p = subprocess.run([args.chromium, *flags, "--dump-dom", "file://" + big], capture_output=True, text=True,
                       timeout=180)
    bdom = p.stdout
    check(bdom.count('<g class="node"') == 1000 and bdom.count('class="cell"') == 6800,
          "1000 nodes rendered: 1000 strips, 6800 cells")
    # the H100s' 16-GPU NVLink domains (two nodes each) drawn as 150 boxes; the A100s and the
    # time-sliced nodes, which no pod's affinity splits, as before
    check(bdom.count('<g class="domain"') == 150 and '<g class="block"' not in bdom,
          "1000 nodes: 150 clique boxes")
    # detail tiles for the first 100 nodes in use only; JSON lists nodes in use in inventory order
    want_tiles = sum(n["gpusUsed"] for n in jb["nodes"][:100])
    got_tiles = bdom.count('class="gpu-svg"')
    check(got_tiles == want_tiles, f"tiles of the first 100 nodes in use: {got_tiles} vs {want_tiles}")
    # the 4100 unplaced pods are runs of copies: a handful of rows, each summing to the whole
    runs = [int(x) for x in re.findall(r'data-pods="([0-9]+)"', bdom)]
    check(0 < len(runs) <= 100 and sum(runs) == len(jb["unplaced"]) == 4100,
          f"unplaced runs {len(runs)} rows, {sum(runs)} pods")
    screenshot(big, (shot[:-4] if shot.endswith(".png") else shot) + "-1000.png", 2000)
    # the walkthrough with the H100 pool's wrong label (docs/images/simulate-report-nonodes.png):
    # the red box is above the figures in what Chromium built
    p = subprocess.run([args.chromium, *flags, "--dump-dom", "file://" + wbad_report], capture_output=True,
                       text=True, timeout=120)
    wdom = p.stdout
    check(0 <= wdom.find('id="nonodes"') < wdom.find('id="summary"') and NOPOOL in wdom and
          wdom.count('<g class="node"') == 120 and wdom.count('<g class="domain"') == 4 and
          wdom.count('<g class="block"') == 2,
          "walkthrough rendered: the box first, 120 node strips, 4 racks in 2 blocks")
    screenshot(wbad_report, (shot[:-4] if shot.endswith(".png") else shot) + "-nonodes.png", 1300)
    # the walkthrough with gangs whole (docs/images/simulate-report-gangs.png): the gangs by job
    screenshot(gang_report, (shot[:-4] if shot.endswith(".png") else shot) + "-gangs.png", 2300)

finish()
