/*
 * warn_text.h - the texts of the warning lines placement writes, shared by the rule index
 * (policy/rule_index.c formats the policy-only ones once at load) and the engine (formats the
 * rest per request): one definition, so a line built at load is byte for byte the line the
 * engine would write.
 *
 * A leaf: it calls no other file and includes only the C library. It must never hold state
 * or anything but the formats and the cut every warning gets.
 */
#ifndef GPA_WARN_TEXT_H
#define GPA_WARN_TEXT_H

#include <stddef.h>
#include <string.h>

/* A string and its length (known, so copying it needs no strlen). */
typedef struct gpa_sv {
    const char *s;
    size_t n;
} gpa_sv;

/* The names the load-time lines spell: the pool label and the GPU resource, as the engine's
 * pod view spells them (engine/pod.h GPA_LABEL_POOL, GPA_RES_GPU; the policy layer may not
 * include it). unit/test_engine_text compares every load-time line with the engine's own. */
#define GPA_W_LABEL_POOL "gpu-admission.io/pool"
#define GPA_W_RES_GPU    "nvidia.com/gpu"

#define GPA_W_PLACED        "placed in pool %s by rule %s"
#define GPA_W_RENAMED       "%s rewritten to %s by rule %s"
#define GPA_W_TOLERATION    "toleration %s %s%s%s %s added for pool %s"
#define GPA_W_RUNTIME_CLASS "runtimeClassName %s set for pool %s"
#define GPA_W_NODE_AFFINITY "node affinity %s %s [%s] added for pool %s"
#define GPA_W_LABEL         "label %s=%s added for tenant isolation"
#define GPA_W_SHARED_EXCL   "node affinity %s NotIn [%s] keeps it off shared pool%s %s"
#define GPA_W_ISOLATION     "pod anti-affinity added: no other tenant's pods on the same %s node"

/* Longest warning kept: strictly below 120 characters (the API server truncates longer ones
 * and kubectl prints them verbatim). */
#define GPA_WARN_MAX 119

/* Cuts s of length n (in place) to below 120 bytes, marking the cut with "...". The cut goes
 * after the last whole word that fits ("... on one ...", never "topology.kubernetes.io/zo..."):
 * a half label key or pool name reads as another, real name. Only a line with no space in
 * its first 116 bytes is cut inside a word, then on a UTF-8 boundary. Returns the new length. */
static inline size_t gpa_warn_shorten(char *s, size_t n)
{
    if (n <= GPA_WARN_MAX) return n;
    size_t cut = GPA_WARN_MAX - 3;
    size_t sp = cut;
    while (sp > 0 && s[sp - 1] != ' ')
        sp--;
    if (sp > 0) {
        cut = sp; /* after the space: "word ..." */
    } else {
        while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
            cut--;
    }
    memcpy(s + cut, "...", 4);
    return cut + 3;
}

#endif
