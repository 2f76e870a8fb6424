/*
 * toolkit_env.c - the NVIDIA Container Toolkit's device-granting environment variables as one
 * data table (source: NVIDIA/nvidia-container-toolkit v1.20.0, internal/config/image/envvars.go,
 * cuda_image.go, internal/modifier/cdi.go, cmd/nvidia-container-runtime-hook/container_config.go;
 * docs/security.md lists each name with what it does and why it is or is not here).
 *
 * Must never miss a value that grants a device: values the admission cannot know (valueFrom,
 * $(VAR) references the kubelet expands) count as granting.
 */
#include <string.h>

#include "k8s/toolkit_env.h"

#define GPUS "it reaches GPUs outside the device plugin's accounting and isolation"

static const gpa_toolkit_env table[] = {
    /* the device list every toolkit mode reads (legacy hook, CDI, JIT-CDI) */
    {"NVIDIA_VISIBLE_DEVICES", GPA_TKENV_LIST, "visible-devices", GPUS},
    /* MIG management capabilities; the hook refuses them to unprivileged containers, so they
     * only ever help a privileged one (denied anyway): kept with the first check's reason */
    {"NVIDIA_MIG_CONFIG_DEVICES", GPA_TKENV_ANY, "visible-devices", GPUS},
    {"NVIDIA_MIG_MONITOR_DEVICES", GPA_TKENV_ANY, "toolkit-env",
     "it asks the toolkit for MIG monitoring of GPUs the device plugin did not allocate"},
    {"NVIDIA_IMEX_CHANNELS", GPA_TKENV_LIST, "toolkit-env",
     "it asks the toolkit for IMEX channels (/dev/nvidia-caps-imex-channels), which reach other "
     "nodes' GPU memory"},
    /* the swarm-resource setting's usual name: read before NVIDIA_VISIBLE_DEVICES where a
     * node sets it */
    {"DOCKER_RESOURCE_GPU", GPA_TKENV_LIST, "toolkit-env",
     "a node whose toolkit sets swarm-resource reads it as the device list: " GPUS},
    /* CUDA_VERSION without NVIDIA_REQUIRE_CUDA makes a "legacy" image: all GPUs, all driver
     * capabilities when NVIDIA_VISIBLE_DEVICES is unset */
    {"CUDA_VERSION", GPA_TKENV_ANY, "toolkit-env",
     "an image without NVIDIA_REQUIRE_CUDA becomes a legacy CUDA image, which the toolkit gives "
     "every GPU"},
    {"NVIDIA_REQUIRE_CUDA", GPA_TKENV_EMPTY, "toolkit-env",
     "an empty value turns a CUDA image into a legacy one, which the toolkit gives every GPU"},
    /* Jetson: csv-mounts=all mounts every file and device node the node's CSV files list */
    {"NVIDIA_REQUIRE_JETPACK", GPA_TKENV_ANY, "toolkit-env",
     "csv-mounts=all mounts every device the node's CSV files list"},
    /* gated modes of JIT-CDI: each adds device nodes beside the GPU */
    {"NVIDIA_GDS", GPA_TKENV_ENABLED, "toolkit-env",
     "the value enabled adds the GPUDirect Storage devices (/dev/nvidia-fs*)"},
    {"NVIDIA_MOFED", GPA_TKENV_ENABLED, "toolkit-env",
     "the value enabled adds the node's InfiniBand devices (/dev/infiniband)"},
    {"NVIDIA_GDRCOPY", GPA_TKENV_ENABLED, "toolkit-env",
     "the value enabled adds the GDRCopy device (/dev/gdrdrv)"},
    {"NVIDIA_NVSWITCH", GPA_TKENV_ENABLED, "toolkit-env",
     "the value enabled adds the NVSwitch devices (/dev/nvidia-nvswitch*)"},
};

#define N_TABLE (sizeof table / sizeof table[0])

const gpa_toolkit_env *gpa_toolkit_env_find(const char *name)
{
    /* every env entry of every pod goes through here: most names leave at their first or
     * second byte (NCCL_DEBUG, NODE_NAME), the rest after one compare of the NVIDIA_ prefix */
    if (!name) return NULL;
    switch (name[0]) {
    case 'N':
        if (name[1] != 'V' || strncmp(name, "NVIDIA_", 7) != 0) return NULL;
        break;
    case 'C':
    case 'D':
        if (name[1] != 'U' && name[1] != 'O') return NULL; /* CUDA_VERSION, DOCKER_... */
        break;
    default:
        return NULL;
    }
    for (unsigned i = 0; i < N_TABLE; i++)
        if (table[i].name[0] == name[0] && strcmp(table[i].name, name) == 0) return &table[i];
    return NULL;
}

bool gpa_toolkit_env_grants(const gpa_toolkit_env *t, const char *value, bool from_ref)
{
    if (from_ref || (value && strstr(value, "$("))) return true;
    const char *v = value ? value : "";
    switch (t->grant) {
    case GPA_TKENV_LIST:
        /* exactly these two hide every GPU; "all,void" and " void" are not worth guessing */
        return strcmp(v, "void") != 0 && strcmp(v, "none") != 0;
    case GPA_TKENV_ENABLED:
        return strcmp(v, "enabled") == 0;
    case GPA_TKENV_EMPTY:
        return *v == '\0';
    default:
        return true;
    }
}

const char *gpa_toolkit_env_prefix_reaches(const char *prefix)
{
    size_t n = prefix ? strlen(prefix) : 0;
    for (unsigned i = 0; i < N_TABLE; i++)
        if (strncmp(table[i].name, prefix ? prefix : "", n) == 0) return table[i].name;
    return NULL;
}

const gpa_toolkit_env *gpa_toolkit_env_table(unsigned *n)
{
    *n = (unsigned)N_TABLE;
    return table;
}
