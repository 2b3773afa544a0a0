import GRDBSQLite

/// The memory SQLite holds across all of a process's connections: their page caches and
/// prepared statements. Each connection's `cache_size` bounds its own page cache, and a pool has
/// a writer and several readers, so without a process-wide limit the bound is their sum.
public enum SQLiteMemory {
    /// Sets the process's soft limit (`sqlite3_soft_heap_limit64`); 0 removes it. Near the limit
    /// every connection reuses its least recently used cached pages instead of allocating more:
    /// queries still run, so it bounds caching and never causes an error.
    public static func limit(mebibytes: Int) {
        sqlite3_soft_heap_limit64(Int64(mebibytes) << 20)
    }

    /// The soft limit in force, in bytes; 0 when none.
    public static var limitBytes: Int64 { sqlite3_soft_heap_limit64(-1) }

    /// What SQLite holds now, in bytes.
    public static var usedBytes: Int64 { sqlite3_memory_used() }
}
