#ifndef STUDYBUS_CTOOLSPAWN_H
#define STUDYBUS_CTOOLSPAWN_H

#include <spawn.h>
#include <sys/types.h>

/// Resource limits of a tool's process; 0 leaves that limit as the parent has it.
struct studybus_tool_limits {
    /// RLIMIT_AS, bytes of address space.
    unsigned long long address_space;
    /// RLIMIT_CPU, seconds of CPU time: SIGXCPU then, SIGKILL five seconds later.
    unsigned long long cpu_seconds;
    /// RLIMIT_FSIZE, bytes of the largest file it may write (SIGXFSZ beyond).
    unsigned long long file_size;
    /// RLIMIT_NOFILE, open file descriptors.
    unsigned long long open_files;
};

/// Starts `path` with `argv` and exactly the environment `envp`, in `directory`, as the leader
/// of a process group of its own, with standard input /dev/null, standard output and error on
/// `output_fd` and `error_fd`, no other descriptor inherited, every signal at its default action
/// and none blocked, no core dumps, and `limits`.
///
/// posix_spawn cannot set resource limits, and setting them after the spawn would let the tool
/// run without them for a moment; so this forks and applies them in the child before execve,
/// calling only async-signal-safe functions there (the parent is multithreaded).
///
/// Returns 0 and sets `pid`, or the errno of what failed (in the child: that of chdir, setrlimit
/// or execve, reported through a close-on-exec pipe).
int studybus_spawn_tool(const char *path, char *const argv[], char *const envp[], const char *directory, int output_fd,
                        int error_fd, struct studybus_tool_limits limits, pid_t *pid);

/// pipe2(O_CLOEXEC), which Glibc does not offer Swift: the tool's pipe ends must not leak into
/// other children started meanwhile.
int studybus_pipe_cloexec(int fds[2]);

/// posix_spawn_file_actions_addclosefrom_np, which Glibc does not offer Swift: the spawned
/// process inherits no descriptor from `low_fd` on.
int studybus_spawn_actions_close_from(posix_spawn_file_actions_t *actions, int low_fd);

#endif
