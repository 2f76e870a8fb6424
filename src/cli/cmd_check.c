/* cmd_check.c - placeholder until the owning work item lands; replaced, never shipped. */
#include <stdio.h>
#include "cli.h"
int gpa_cmd_check(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "gpu-admission check: not built yet\n");
    return 1;
}
