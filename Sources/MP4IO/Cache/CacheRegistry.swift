/// One entry per (directory, resource) per process, while some source uses it: entries are
/// held weakly, so their file descriptors close when the last source goes (checking 10,000
/// URLs with `--cache` must not keep 20,000 files open).
actor CacheRegistry {
    static let shared = CacheRegistry()
    private final class Weak {
        weak var entry: CacheEntry?
        init(_ entry: CacheEntry) { self.entry = entry }
    }
    private var entries: [String: Weak] = [:]

    /// The entry for `resource`, made with `policy` when no source in this process has it open.
    func entry(directory: String, resource: String, policy: ReadAheadPolicy) throws -> CacheEntry {
        let key = directory + "\u{0}" + resource
        if let existing = entries[key]?.entry { return existing }
        let made = try CacheEntry(directory: directory, resource: resource, policy: policy)
        if entries.count % 256 == 255 { entries = entries.filter { $0.value.entry != nil } }
        entries[key] = Weak(made)
        return made
    }

    /// The resources of `directory` that have an open entry in this process (a source reading
    /// them is alive).
    func openResources(directory: String) -> Set<String> {
        var result: Set<String> = []
        for (key, weak) in entries where key.hasPrefix(directory + "\u{0}") && weak.entry != nil {
            result.insert(String(key.dropFirst(directory.count + 1)))
        }
        return result
    }

    /// The resources of `directory` whose entry here is in use (a reader, a prefetch, a fetch
    /// running): what eviction spares. An entry merely open (a loader keeps the resources it
    /// served) may go; it starts again empty when it is used.
    func busyResources(directory: String) async -> Set<String> {
        var result: Set<String> = []
        for (key, weak) in entries where key.hasPrefix(directory + "\u{0}") {
            if let entry = weak.entry, await entry.isBusy { result.insert(await entry.resource) }
        }
        return result
    }

    /// `resources` of `directory` were evicted: their open entries here let the removed files
    /// go (their descriptors kept the blocks allocated).
    func evicted(_ resources: Set<String>, directory: String) async {
        for resource in resources {
            await entries[directory + "\u{0}" + resource]?.entry?.filesRemoved()
        }
    }

    /// Forgets the entries of `directory`, so that the next source reopens them from disk
    /// (what a new process would see). For tests and long-running processes.
    func forget(directory: String) {
        entries = entries.filter { !$0.key.hasPrefix(directory + "\u{0}") }
    }
}
