/*
 * rss_exec.c - runs a command and prints the peak RSS of that process
 * itself and its CPU time on stderr:
 *
 *   rss_exec: maxrss N kB user U ms sys S ms hwm H kB
 *
 * hwm is VmHWM from /proc/PID/status, read when the process exits (it is
 * traced only for that: PTRACE_O_TRACEEXIT stops it once, at exit, with
 * its memory still there). It is the exact figure: wait4's ru_maxrss (N)
 * comes from counters the kernel keeps per CPU and only approximately,
 * and can be 100 kB lower. Built static with musl (make build/rss_exec),
 * the runner is small: a process's figure also counts what its parent had
 * when it forked, and a forking Python or GNU time would be counted.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static long vm_hwm(pid_t pid)
{
    char path[64], line[256];
    long kb = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    if ((f = fopen(path, "r")) == NULL)
        return -1;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "VmHWM:", 6) == 0) {
            kb = 0;
            for (char *p = line + 6; *p != '\0'; p++) {
                if (*p >= '0' && *p <= '9')
                    kb = kb * 10 + (*p - '0');
            }
        }
    }
    fclose(f);
    return kb;
}

int main(int argc, char **argv)
{
    struct rusage ru;
    long hwm = -1;
    pid_t pid;
    int st;

    if (argc < 2) {
        fprintf(stderr, "usage: rss_exec COMMAND [ARG...]\n");
        return 2;
    }
    pid = fork();
    if (pid == 0) {
        ptrace(PTRACE_TRACEME, 0, NULL, NULL);
        raise(SIGSTOP); /* the parent sets the options before exec */
        execvp(argv[1], argv + 1);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFSTOPPED(st)) {
        perror("rss_exec");
        return 2;
    }
    ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)(long)(PTRACE_O_TRACEEXIT | PTRACE_O_TRACEEXEC));
    ptrace(PTRACE_CONT, pid, NULL, NULL);
    for (;;) {
        if (wait4(pid, &st, 0, &ru) < 0) {
            perror("rss_exec");
            return 2;
        }
        if (WIFEXITED(st) || WIFSIGNALED(st))
            break;
        if (WIFSTOPPED(st)) {
            int sig = WSTOPSIG(st), ev = st >> 16;

            if (sig == SIGTRAP && ev == PTRACE_EVENT_EXIT) {
                hwm = vm_hwm(pid);
                sig = 0;
            } else if (sig == SIGTRAP && ev != 0) {
                sig = 0; /* the exec event */
            }
            ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig);
        }
    }
    fprintf(stderr, "rss_exec: maxrss %ld kB user %.3f ms sys %.3f ms hwm %ld kB\n", ru.ru_maxrss,
            (double)ru.ru_utime.tv_sec * 1e3 + (double)ru.ru_utime.tv_usec / 1e3,
            (double)ru.ru_stime.tv_sec * 1e3 + (double)ru.ru_stime.tv_usec / 1e3, hwm);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
