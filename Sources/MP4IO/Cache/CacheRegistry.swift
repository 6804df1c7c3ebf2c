/// One entry per (directory, resource) per process, while some source uses it: entries are
/// held weakly, so their file descriptors close when the last source goes (checking 10,000
/// URLs with `--cache` must not keep 20,000 files open).
///
/// A lock, not an actor: every cache open in the process passes here, and a process-wide
/// actor runs its jobs wherever it was last asked from. Asked from tasks on Swift's shared
/// pool (an app's, a test's) while that pool was held, its jobs waited for the pool, and a
/// proxy's requests, which run off the pool (``ServingTask``), waited 10 s behind them
/// (`ServingTaskTests` in two CI runs).
final class CacheRegistry: Sendable {
    static let shared = CacheRegistry()
    /// (`@unchecked Sendable`: a weak reference to an actor, read and cleared only under `entries`' lock.)
    private final class Weak: @unchecked Sendable {
        weak var entry: CacheEntry?
        init(_ entry: CacheEntry) { self.entry = entry }
    }
    private let entries = Locked<[String: Weak]>([:])

    /// The entry for `resource`, made with `policy` when no source in this process has it open.
    func entry(directory: String, resource: String, policy: ReadAheadPolicy) throws -> CacheEntry {
        let key = directory + "\u{0}" + resource
        return try entries.withLock { entries in
            if let existing = entries[key]?.entry { return existing }
            let made = try CacheEntry(directory: directory, resource: resource, policy: policy)
            if entries.count % 256 == 255 { entries = entries.filter { $0.value.entry != nil } }
            entries[key] = Weak(made)
            return made
        }
    }

    /// The open entries of `directory`, by resource.
    private func open(in directory: String) -> [(resource: String, entry: CacheEntry)] {
        entries.withLock { entries in
            entries.compactMap { key, weak in
                guard key.hasPrefix(directory + "\u{0}"), let entry = weak.entry else { return nil }
                return (String(key.dropFirst(directory.count + 1)), entry)
            }
        }
    }

    /// The resources of `directory` that have an open entry in this process (a source reading
    /// them is alive).
    func openResources(directory: String) -> Set<String> {
        Set(open(in: directory).map(\.resource))
    }

    /// The resources of `directory` whose entry here is in use (a reader, a prefetch, a fetch
    /// running): what eviction spares. An entry merely open (a loader keeps the resources it
    /// served) may go; it starts again empty when it is used.
    func busyResources(directory: String) async -> Set<String> {
        var result: Set<String> = []
        for (resource, entry) in open(in: directory) where await entry.isBusy { result.insert(resource) }
        return result
    }

    /// `resources` of `directory` were evicted: their open entries here let the removed files
    /// go (their descriptors kept the blocks allocated).
    func evicted(_ resources: Set<String>, directory: String) async {
        for (resource, entry) in open(in: directory) where resources.contains(resource) { await entry.filesRemoved() }
    }

    /// Forgets the entries of `directory`, so that the next source reopens them from disk
    /// (what a new process would see). For tests and long-running processes.
    func forget(directory: String) {
        entries.withLock { $0 = $0.filter { !$0.key.hasPrefix(directory + "\u{0}") } }
    }
}
