/* main.c - muster's command line: parse the subcommand and hand over. */
#include <stdio.h>
#include <string.h>

#include "daemon.h"
#include "gpushare.h"
#include "simulate.h"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"serve", serve_main, "run the scheduler extender beside kube-scheduler"},
    {"reserve", reserve_main, "hold a GPU for a shared group (runs in reservation pods)"},
    {"simulate", simulate_main, "show what muster would do with a set of manifests"},
};

static void usage(FILE *out)
{
    fprintf(out,
            "muster %s - gang scheduling for Ray on Kubernetes, as a kube-scheduler "
            "extender\n\nUsage: muster <command> [options]\n\nCommands:\n",
            MUSTER_VERSION);
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nRun 'muster <command> --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("muster %s\n", MUSTER_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "muster: unknown command \"%s\"\n\n", argv[1]);
    usage(stderr);
    return 2;
}
