// reaper COMMAND [ARGS…]: runs COMMAND, and once it has ended kills whatever it started that is
// still running, then exits with COMMAND's status.
//
// Why: the test suite starts `tollgate serve`, HAProxy, nginx and other peers through Foundation's
// `Process`, which puts each child in a process group of its own — so `timeout` killing its group,
// or the suite crashing, leaves them running (a crashed pass once left four proxies and an HAProxy
// running under the next passes for an hour, and tests that count processes or ports failed).
// As a child subreaper (PR_SET_CHILD_SUBREAPER) this process becomes the parent of every orphan
// below it, whatever group or session it is in, and can find and kill them by their parent pid.
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t command_pid;

static void forward(int signal_number) {
    if (command_pid > 0) kill(command_pid, signal_number);
}

// The parent pid and name of /proc/PID, from its stat line ("PID (NAME) STATE PPID …"; the name
// may hold spaces and parentheses, so it ends at the last ')').
static int read_stat(const char *pid, pid_t *ppid, char *name, size_t name_size) {
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/%s/stat", pid);
    FILE *file = fopen(path, "r");
    if (!file) return 0;
    size_t length = fread(line, 1, sizeof line - 1, file);
    fclose(file);
    line[length] = 0;
    char *open = strchr(line, '('), *close = strrchr(line, ')');
    if (!open || !close || close < open) return 0;
    size_t name_length = (size_t)(close - open - 1);
    if (name_length >= name_size) name_length = name_size - 1;
    memcpy(name, open + 1, name_length);
    name[name_length] = 0;
    char state;
    int parent;
    if (sscanf(close + 1, " %c %d", &state, &parent) != 2) return 0;
    *ppid = parent;
    return 1;
}

// Kills this process's children (the orphans it adopted); returns how many it signalled.
static int kill_children(void) {
    DIR *proc = opendir("/proc");
    if (!proc) return 0;
    int killed = 0;
    pid_t self = getpid();
    struct dirent *entry;
    while ((entry = readdir(proc))) {
        if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
        pid_t ppid;
        char name[256];
        if (!read_stat(entry->d_name, &ppid, name, sizeof name) || ppid != self) continue;
        fprintf(stderr, "reaper: killing %s (pid %s), left running by the command\n", name, entry->d_name);
        if (kill((pid_t)atoi(entry->d_name), SIGKILL) == 0) killed++;
    }
    closedir(proc);
    return killed;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: reaper COMMAND [ARGS...]\n");
        return 2;
    }
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) perror("reaper: PR_SET_CHILD_SUBREAPER");
    command_pid = fork();
    if (command_pid < 0) {
        perror("reaper: fork");
        return 2;
    }
    if (command_pid == 0) {
        execvp(argv[1], argv + 1);
        fprintf(stderr, "reaper: %s: %s\n", argv[1], strerror(errno));
        _exit(127);
    }
    signal(SIGINT, forward);
    signal(SIGTERM, forward);
    signal(SIGHUP, forward);
    int status = 0, command_status = 0;
    pid_t ended;
    // Wait for the command, reaping adopted orphans that end by themselves meanwhile.
    while ((ended = wait(&status)) != command_pid) {
        if (ended < 0 && errno != EINTR) break;
    }
    command_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    // Whatever is left was started by the command and outlived it: kill and reap it, again until
    // none is left (a child may start another while dying).
    for (int round = 0; round < 20 && kill_children() > 0; round++) {
        while ((ended = waitpid(-1, &status, WNOHANG)) > 0) {}
        usleep(100 * 1000);
        while ((ended = waitpid(-1, &status, WNOHANG)) > 0) {}
    }
    return command_status;
}
