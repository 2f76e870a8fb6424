/*
 * export_vap_doc.c - the builders of one ValidatingAdmissionPolicy's variables and
 * validations as YAML list items (export_vap_internal.h), shared by the pod checks
 * (export_vap_pod.c) and the device checks and document (export_vap.c).
 *
 * Expressions go out as YAML literal blocks (`|-`): CEL needs no escaping there, and every
 * policy string inside them is a CEL literal made by gpa_cel_quote, so no policy text can end
 * a block or become CEL.
 */
#include <string.h>

#include "export_vap_internal.h"

void gpa_vap_var(gpa_vap_doc *d, const char *name, const char *expr)
{
    gpa_sb_printf(&d->vars, "  - name: %s\n    expression: |-\n", name);
    gpa_cel_yaml_block(&d->vars, expr, 6);
}

void gpa_vap_check(gpa_vap_doc *d, const char *reason, const char *deny_cond, const char *msg)
{
    gpa_sb_puts(&d->vals, "  - expression: |-\n");
    gpa_sb e = {0};
    gpa_sb_printf(&e, "!(%s)", deny_cond);
    gpa_cel_yaml_block(&d->vals, e.p ? e.p : "", 6);
    gpa_sb_free(&e);
    /* the webhook's reason code first: VAP reasons are only Forbidden, Invalid, ... */
    gpa_sb_printf(&d->vals, "    message: \"%s: refused by the GPU policy\"\n", reason);
    gpa_sb_printf(&d->vals, "    messageExpression: |-\n      '%s: ' + (", reason);
    gpa_sb_puts(&d->vals, msg);
    gpa_sb_puts(&d->vals, ")\n    reason: Forbidden\n");
    d->n_checks++;
}
