/// "The cache cannot grow" said once, not once per read: a cache directory is reported when a
/// write there first fails for want of space, and not again until a commit there succeeds (the
/// disk has room again). Process-wide, keyed by directory; the message goes to the caller's
/// `warn` (the CLI's stderr; a library user's logger), never to a stream of its own.
enum DiskFullNotice {
    private static let reported = Locked<Set<String>>([])

    /// Reports `directory` as full through `warn`, unless it was already reported.
    static func full(_ directory: String, because reason: String = "the disk is full", warn: (@Sendable (String) -> Void)?) {
        let first = reported.withLock { $0.insert(directory).inserted }
        guard first, let warn else { return }
        warn("the cache in \(directory) cannot take more (\(reason)): bytes are passed from the origin without being cached until it has room (a lower --max-size, or free space)")
    }

    /// A commit in `directory` succeeded: a later failure is reported again.
    static func room(_ directory: String) {
        _ = reported.withLock { $0.remove(directory) }
    }
}
