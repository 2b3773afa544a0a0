import Glibc

/// Runs `body` with `posix_spawn` attributes that give the child a clean signal state: nothing
/// blocked, SIGTERM, SIGINT, SIGHUP, SIGPIPE and SIGCHLD at their default actions.
///
/// Swift's concurrency threads block nearly every signal, and a child inherits the spawning
/// thread's mask: without this a tool or service started from a task would ignore SIGTERM.
///
/// ```swift
/// let status = withCleanSignalAttributes { attributes in posix_spawn(&pid, path, &actions, &attributes, argv, envp) }
/// ```
public func withCleanSignalAttributes<Result>(_ body: (inout posix_spawnattr_t) throws -> Result) rethrows -> Result {
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var empty = sigset_t()
    sigemptyset(&empty)
    posix_spawnattr_setsigmask(&attributes, &empty)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGCHLD] { sigaddset(&defaults, signal) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    return try body(&attributes)
}
