/*
 * cmd_export.c - `gpu-admission export KIND`: the policy compiled to objects the API server
 * evaluates itself. Routes to one file per kind (cmd_export_map.c).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int gpa_cmd_export(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "map") == 0) return gpa_cmd_export_map(argc - 1, argv + 1);
    bool help = argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0);
    if (argc >= 2 && !help) fprintf(stderr, "gpu-admission export: unknown kind '%s'\n", argv[1]);
    fprintf(help ? stdout : stderr,
            "usage: gpu-admission export map --policies DIR [--output FILE]\n");
    return help ? 0 : 2;
}
