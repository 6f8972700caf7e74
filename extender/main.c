/*
 * main.c - muster's command line: parse the subcommand and hand over.
 *
 * Run as kubectl-muster (the symlink `kubectl muster ...` finds on PATH), it
 * is the kubectl plugin: the same commands, offering those for people.
 */
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "daemon.h"
#include "gpushare.h"
#include "simulate.h"

#define PLUGIN_NAME "kubectl-muster"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    bool plugin; /* offered by kubectl muster too */
    const char *summary;
} commands[] = {
    {"queues", queues_main, true, "the queue tree: quota, limit, fair share, allocated, pending"},
    {"why", why_main, true, "why a RayCluster, PodGroup, Pod, RayJob or RayService waits (or that it runs)"},
    {"simulate", simulate_main, true, "show what muster would do with a set of manifests"},
    {"serve", serve_main, false, "run the scheduler extender beside kube-scheduler"},
    {"reserve", reserve_main, false, "hold a GPU for a shared group (runs in reservation pods)"},
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out, bool plugin)
{
    const char *me = plugin ? "kubectl muster" : "muster";

    fprintf(out,
            "%s %s - gang scheduling for Ray on Kubernetes, as a kube-scheduler "
            "extender\n\nUsage: %s <command> [options]\n\nCommands:\n",
            me, MUSTER_VERSION, me);
    for (size_t i = 0; i < NCOMMANDS; i++) {
        if (!plugin || commands[i].plugin)
            fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    }
    fprintf(out, "\nRun '%s <command> --help' for a command's options.\n", me);
}

/* Invoked through the kubectl-muster symlink? */
static bool as_plugin(const char *argv0)
{
    char copy[4096];

    snprintf(copy, sizeof(copy), "%s", argv0 != NULL ? argv0 : "");
    return strcmp(basename(copy), PLUGIN_NAME) == 0;
}

int main(int argc, char **argv)
{
    bool plugin = as_plugin(argv[0]);

    if (argc < 2) {
        usage(stderr, plugin);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout, plugin);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("muster %s\n", MUSTER_VERSION);
        return 0;
    }
    for (size_t i = 0; i < NCOMMANDS; i++) {
        if (strcmp(argv[1], commands[i].name) != 0)
            continue;
        if (plugin && !commands[i].plugin) {
            fprintf(stderr, "kubectl muster: \"%s\" is for the muster binary itself: muster %s\n",
                    argv[1], argv[1]);
            return 2;
        }
        return commands[i].run(argc - 1, argv + 1);
    }
    fprintf(stderr, "%s: unknown command \"%s\"\n\n", plugin ? "kubectl muster" : "muster",
            argv[1]);
    usage(stderr, plugin);
    return 2;
}
