#define _GNU_SOURCE
#include "CToolSpawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <pthread.h>
#include <unistd.h>

int studybus_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC) == 0 ? 0 : errno;
}

int studybus_spawn_actions_close_from(posix_spawn_file_actions_t *actions, int low_fd) {
    return posix_spawn_file_actions_addclosefrom_np(actions, low_fd);
}

/// Lowers the limit `resource` to `value` soft and `value + extra_hard` hard, never above the
/// hard limit the parent has (which an unprivileged process cannot raise). Async-signal-safe.
static int lower_limit(int resource, unsigned long long value, unsigned long long extra_hard) {
    struct rlimit current;
    if (getrlimit(resource, &current) != 0) return errno;
    rlim_t soft = (rlim_t)value, hard = (rlim_t)(value + extra_hard);
    if (current.rlim_max != RLIM_INFINITY && hard > current.rlim_max) hard = current.rlim_max;
    if (soft > hard) soft = hard;
    struct rlimit wanted = {soft, hard};
    return setrlimit(resource, &wanted) == 0 ? 0 : errno;
}

/// Closes every descriptor from 3 up but `keep` (which is at least 3). Async-signal-safe.
static void close_others(int keep) {
    if ((keep == 3 || close_range(3, (unsigned)keep - 1, 0) == 0) && close_range((unsigned)keep + 1, ~0U, 0) == 0) return;
    // Kernels before 5.9: one by one, up to the descriptor limit.
    struct rlimit files;
    long last = getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY ? (long)files.rlim_cur : 65536;
    for (long fd = 3; fd < last; fd++) {
        if (fd != keep) close((int)fd);
    }
}

/// In the child, before execve: only async-signal-safe calls. Returns (an errno) only on failure.
static int prepare_and_exec(const char *path, char *const argv[], char *const envp[], const char *directory, int output_fd,
                            int error_fd, struct studybus_tool_limits limits, int *report_fd) {
    struct sigaction defaults = {0};
    defaults.sa_handler = SIG_DFL;
    for (int signal = 1; signal < NSIG; signal++) sigaction(signal, &defaults, NULL);  // fails harmlessly for KILL and STOP
    if (setpgid(0, 0) != 0) return errno;
    // Above 2 first, so that setting up 0, 1 and 2 cannot overwrite one of them.
    int output = fcntl(output_fd, F_DUPFD_CLOEXEC, 3), error = fcntl(error_fd, F_DUPFD_CLOEXEC, 3);
    int report = fcntl(*report_fd, F_DUPFD_CLOEXEC, 3);
    if (output < 0 || error < 0 || report < 0) return errno;
    *report_fd = report;
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0) return errno;
    if (dup2(null, 0) < 0 || dup2(output, 1) < 0 || dup2(error, 2) < 0) return errno;
    // The service's sockets and files are no business of the tool.
    close_others(report);
    if (directory != NULL && chdir(directory) != 0) return errno;
    int failure;
    if (limits.address_space > 0 && (failure = lower_limit(RLIMIT_AS, limits.address_space, 0)) != 0) return failure;
    if (limits.cpu_seconds > 0 && (failure = lower_limit(RLIMIT_CPU, limits.cpu_seconds, 5)) != 0) return failure;
    if (limits.file_size > 0 && (failure = lower_limit(RLIMIT_FSIZE, limits.file_size, 0)) != 0) return failure;
    if (limits.open_files > 0 && (failure = lower_limit(RLIMIT_NOFILE, limits.open_files, 0)) != 0) return failure;
    if ((failure = lower_limit(RLIMIT_CORE, 0, 0)) != 0) return failure;
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(path, argv, envp);
    return errno;
}

int studybus_spawn_tool(const char *path, char *const argv[], char *const envp[], const char *directory, int output_fd,
                        int error_fd, struct studybus_tool_limits limits, pid_t *pid) {
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) return errno;
    // No signal handler of the service may run in the child between fork and execve.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    pid_t child = fork();
    if (child == 0) {
        int report_fd = report[1];
        int failure = prepare_and_exec(path, argv, envp, directory, output_fd, error_fd, limits, &report_fd);
        ssize_t written;
        do { written = write(report_fd, &failure, sizeof failure); } while (written < 0 && errno == EINTR);
        _exit(127);
    }
    int fork_error = errno;
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    close(report[1]);
    if (child < 0) {
        close(report[0]);
        return fork_error;
    }
    // End of file: execve succeeded (the pipe closed with it); four bytes: the child's errno.
    int failure = 0;
    ssize_t count;
    do { count = read(report[0], &failure, sizeof failure); } while (count < 0 && errno == EINTR);
    close(report[0]);
    if (count == (ssize_t)sizeof failure) {
        while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {}
        return failure != 0 ? failure : ECHILD;
    }
    *pid = child;
    return 0;
}
