/*
 * fuzz_common.c - helpers for the fuzz targets (see fuzz_common.h). The RFC 6902 applier here
 * is deliberately a separate implementation from src/core/format/jsonpatch.c: the property "the API
 * server can apply our patch and gets exactly the mutated pod" must not be checked by the code
 * under test.
 *
 * Must never: be linked into the product.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"

char *fz_dup_exact(const uint8_t *data, size_t n)
{
    char *p = malloc(n ? n : 1);
    if (!p) abort();
    if (n) memcpy(p, data, n);
    return p;
}

char *fz_dup_str(const uint8_t *data, size_t n)
{
    char *p = malloc(n + 1);
    if (!p) abort();
    if (n) memcpy(p, data, n);
    p[n] = '\0';
    return p;
}

void fz_fail(const char *what, const cJSON *a, const cJSON *b)
{
    fprintf(stderr, "\n*** fuzz property violated: %s\n", what);
    if (a) {
        char *s = cJSON_Print(a);
        fprintf(stderr, "--- first:\n%s\n", s ? s : "(unprintable)");
        free(s);
    }
    if (b) {
        char *s = cJSON_Print(b);
        fprintf(stderr, "--- second:\n%s\n", s ? s : "(unprintable)");
        free(s);
    }
    abort();
}

/* ------------------------------------------------------------------ policies */

#define FZ_MAX_POLICIES 32
static gpa_policy *fz_sets[FZ_MAX_POLICIES];
static char *fz_names[FZ_MAX_POLICIES];
static size_t fz_nsets;
static int fz_loaded;

static void fz_try_load(const char *dir, const char *name)
{
    gpa_error err = {0};
    gpa_policy *p = NULL;
    if (gpa_policy_load_dir(&p, dir, &err) != GPA_OK) {
        fprintf(stderr, "fuzz: policy set %s does not load, skipped:\n%s\n", dir, err.message);
        return;
    }
    if (fz_nsets < FZ_MAX_POLICIES) {
        fz_names[fz_nsets] = strdup(name);
        fz_sets[fz_nsets++] = p;
    } else
        gpa_policy_unref(p);
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Loads every subdirectory of parent (name order) as a set named prefix + directory name. */
static void fz_load_children(const char *parent, const char *prefix)
{
    DIR *d = opendir(parent);
    char *names[FZ_MAX_POLICIES];
    size_t n = 0;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) && n < FZ_MAX_POLICIES) {
            if (e->d_name[0] == '.') continue;
            names[n++] = strdup(e->d_name);
        }
        closedir(d);
    }
    qsort(names, n, sizeof names[0], cmp_names);
    for (size_t i = 0; i < n; i++) {
        char path[4096], name[256];
        snprintf(path, sizeof path, "%s/%s", parent, names[i]);
        snprintf(name, sizeof name, "%s%s", prefix, names[i]);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) fz_try_load(path, name);
        free(names[i]);
    }
}

static void fz_load_all(void)
{
    if (fz_loaded) return;
    fz_loaded = 1;
    fz_try_load(GPA_FUZZ_SHIPPED_POLICIES, "shipped");
    fz_load_children(GPA_FUZZ_VARIANT_POLICIES, "");
    fz_load_children(GPA_FUZZ_GOLDEN_POLICIES, "golden-");
    if (fz_nsets == 0) {
        fprintf(stderr, "fuzz: no policy set loads; nothing to fuzz the engine with\n");
        abort();
    }
}

size_t fz_policy_count(void)
{
    fz_load_all();
    return fz_nsets;
}

const gpa_policy *fz_policy(size_t i)
{
    fz_load_all();
    return fz_sets[i % fz_nsets];
}

const char *fz_policy_name(size_t i)
{
    fz_load_all();
    return fz_names[i % fz_nsets];
}

int fz_policy_find(const char *name)
{
    fz_load_all();
    for (size_t i = 0; i < fz_nsets; i++)
        if (strcmp(fz_names[i], name) == 0) return (int)i;
    return -1;
}

/* ------------------------------------------------------------ RFC 6902 reference */

/* Splits an RFC 6901 pointer into unescaped tokens. Returns count or -1 (bad escape). */
static int ptr_tokens(const char *ptr, char ***out)
{
    *out = NULL;
    if (*ptr == '\0') return 0;
    if (*ptr != '/') return -1;
    int n = 0;
    for (const char *c = ptr; *c; c++)
        n += *c == '/';
    char **toks = calloc((size_t)n, sizeof *toks);
    int k = 0;
    const char *c = ptr + 1;
    for (;;) {
        const char *end = strchr(c, '/');
        size_t len = end ? (size_t)(end - c) : strlen(c);
        char *t = malloc(len + 1);
        size_t o = 0;
        for (size_t i = 0; i < len; i++) {
            if (c[i] == '~') {
                if (i + 1 < len && c[i + 1] == '0')
                    t[o++] = '~';
                else if (i + 1 < len && c[i + 1] == '1')
                    t[o++] = '/';
                else {
                    free(t);
                    for (int j = 0; j < k; j++)
                        free(toks[j]);
                    free(toks);
                    return -1;
                }
                i++;
            } else {
                t[o++] = c[i];
            }
        }
        t[o] = '\0';
        toks[k++] = t;
        if (!end) break;
        c = end + 1;
    }
    *out = toks;
    return k;
}

static void free_tokens(char **t, int n)
{
    for (int i = 0; i < n; i++)
        free(t[i]);
    free(t);
}

/* RFC 6901 array index: "0" or digits without a leading zero. */
static int array_index(const char *t, int size, int allow_end)
{
    if (allow_end && strcmp(t, "-") == 0) return size;
    if (!*t || (t[0] == '0' && t[1]) || strlen(t) > 9) return -1;
    for (const char *c = t; *c; c++)
        if (*c < '0' || *c > '9') return -1;
    return atoi(t);
}

/* Object member lookup by exact (case-sensitive) key; cJSON's default is case-insensitive. */
static cJSON *member(cJSON *obj, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

static cJSON *resolve(cJSON *root, char **toks, int n)
{
    cJSON *cur = root;
    for (int i = 0; i < n && cur; i++) {
        if (cJSON_IsObject(cur))
            cur = member(cur, toks[i]);
        else if (cJSON_IsArray(cur)) {
            int idx = array_index(toks[i], cJSON_GetArraySize(cur), 0);
            cur = idx < 0 || idx >= cJSON_GetArraySize(cur) ? NULL : cJSON_GetArrayItem(cur, idx);
        } else
            cur = NULL;
    }
    return cur;
}

/* Removes and returns the value at the pointer (NULL when absent). */
static cJSON *detach(cJSON **root, char **toks, int n)
{
    if (n == 0) {
        cJSON *r = *root;
        *root = NULL;
        return r;
    }
    cJSON *parent = resolve(*root, toks, n - 1);
    if (cJSON_IsObject(parent)) {
        if (!member(parent, toks[n - 1])) return NULL;
        return cJSON_DetachItemFromObjectCaseSensitive(parent, toks[n - 1]);
    }
    if (cJSON_IsArray(parent)) {
        int idx = array_index(toks[n - 1], cJSON_GetArraySize(parent), 0);
        if (idx < 0 || idx >= cJSON_GetArraySize(parent)) return NULL;
        return cJSON_DetachItemFromArray(parent, idx);
    }
    return NULL;
}

/* Adds v (taking ownership, freed on failure) at the pointer; -1 when the parent is missing or
 * the index is invalid. */
static int insert(cJSON **root, char **toks, int n, cJSON *v)
{
    if (!v) return -1;
    if (n == 0) {
        cJSON_Delete(*root);
        *root = v;
        return 0;
    }
    cJSON *parent = resolve(*root, toks, n - 1);
    int ok = 0;
    if (cJSON_IsObject(parent)) {
        if (member(parent, toks[n - 1]))
            ok = cJSON_ReplaceItemInObjectCaseSensitive(parent, toks[n - 1], v);
        else
            ok = cJSON_AddItemToObject(parent, toks[n - 1], v);
    } else if (cJSON_IsArray(parent)) {
        int size = cJSON_GetArraySize(parent);
        int idx = array_index(toks[n - 1], size, 1);
        if (idx >= 0 && idx < size) {
            /* Not cJSON_InsertItemInArray: Debian 12's libcjson1 1.7.15-1+deb12u4 inserts
             * nothing before a middle element (returns false). Same linking cJSON does. */
            cJSON *after = cJSON_GetArrayItem(parent, idx);
            v->next = after;
            v->prev = after->prev;
            after->prev = v;
            if (after == parent->child)
                parent->child = v;
            else
                v->prev->next = v;
            ok = 1;
        } else if (idx == size)
            ok = cJSON_AddItemToArray(parent, v);
    }
    if (!ok) cJSON_Delete(v);
    return ok ? 0 : -1;
}

static int is_prefix_path(const char *from, const char *path)
{
    size_t n = strlen(from);
    return strncmp(from, path, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

int fz_ref_patch_apply(cJSON **doc, const cJSON *ops, char *why, size_t whylen)
{
    if (!cJSON_IsArray(ops)) {
        snprintf(why, whylen, "patch is not an array");
        return -1;
    }
    int i = 0;
    const cJSON *op;
    cJSON_ArrayForEach(op, ops) {
        const cJSON *jop = cJSON_GetObjectItemCaseSensitive(op, "op");
        const cJSON *jpath = cJSON_GetObjectItemCaseSensitive(op, "path");
        const cJSON *jval = cJSON_GetObjectItemCaseSensitive(op, "value");
        const cJSON *jfrom = cJSON_GetObjectItemCaseSensitive(op, "from");
        if (!cJSON_IsString(jop) || !cJSON_IsString(jpath)) {
            snprintf(why, whylen, "op %d: missing op or path", i);
            return -1;
        }
        const char *o = jop->valuestring;
        char **toks = NULL;
        int n = ptr_tokens(jpath->valuestring, &toks);
        if (n < 0) {
            snprintf(why, whylen, "op %d: bad pointer %s", i, jpath->valuestring);
            return -1;
        }
        int rc = 0;
        if (strcmp(o, "add") == 0) {
            rc = jval ? insert(doc, toks, n, cJSON_Duplicate(jval, 1)) : -1;
        } else if (strcmp(o, "remove") == 0) {
            cJSON *old = n ? detach(doc, toks, n) : NULL;
            rc = old ? 0 : -1;
            cJSON_Delete(old);
        } else if (strcmp(o, "replace") == 0) {
            /* The target must exist (the API server refuses a replace of a missing path). */
            if (!jval || !resolve(*doc, toks, n))
                rc = -1;
            else {
                cJSON *old = detach(doc, toks, n);
                cJSON_Delete(old);
                rc = insert(doc, toks, n, cJSON_Duplicate(jval, 1));
            }
        } else if (strcmp(o, "test") == 0) {
            cJSON *cur = resolve(*doc, toks, n);
            rc = jval && cur && cJSON_Compare(cur, jval, 1) ? 0 : -1;
        } else if (strcmp(o, "move") == 0 || strcmp(o, "copy") == 0) {
            char **ft = NULL;
            int fn = cJSON_IsString(jfrom) ? ptr_tokens(jfrom->valuestring, &ft) : -1;
            cJSON *src = fn >= 0 ? resolve(*doc, ft, fn) : NULL;
            if (!src || (o[0] == 'm' && is_prefix_path(jfrom->valuestring, jpath->valuestring) &&
                         strcmp(jfrom->valuestring, jpath->valuestring) != 0))
                rc = -1;
            else {
                cJSON *v = o[0] == 'm' ? detach(doc, ft, fn) : cJSON_Duplicate(src, 1);
                rc = insert(doc, toks, n, v);
            }
            if (fn > 0) free_tokens(ft, fn);
        } else {
            rc = -1;
        }
        if (n > 0) free_tokens(toks, n);
        if (rc != 0) {
            snprintf(why, whylen, "op %d (%s %s) cannot be applied", i, o, jpath->valuestring);
            return -1;
        }
        i++;
    }
    return 0;
}
