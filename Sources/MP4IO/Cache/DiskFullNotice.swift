/// "The cache cannot grow" said once per episode, not once per read: a cache directory is
/// reported when a write there first fails for want of space. It is reported again only when
/// a commit there has succeeded since (the disk had room again) and at least
/// ``repeatInterval`` has passed since it was last said: a film larger than `--max-size` makes
/// the cache fill, evict and fill again every few seconds while it plays, and each of those
/// is not news. Process-wide, keyed by directory; the message goes to the caller's `warn`
/// (the CLI's stderr; a library user's logger), never to a stream of its own.
enum DiskFullNotice {
    /// The shortest time between two reports of one directory.
    static let repeatInterval: Duration = .seconds(300)

    private struct Report { var said: ContinuousClock.Instant; var roomSince = false }
    private static let reports = Locked<[String: Report]>([:])

    /// Reports `directory` as full through `warn`, unless this episode was already reported.
    static func full(_ directory: String, because reason: String = "the disk is full", now: ContinuousClock.Instant = .now, warn: (@Sendable (String) -> Void)?) {
        let say = reports.withLock { reports -> Bool in
            if let report = reports[directory], !report.roomSince || now - report.said < repeatInterval {
                reports[directory]?.roomSince = false
                return false
            }
            reports[directory] = Report(said: now)
            return true
        }
        guard say, let warn else { return }
        warn("the cache in \(directory) cannot take more (\(reason)): bytes are passed from the origin without being cached until it has room (a lower --max-size, or free space)")
    }

    /// A commit in `directory` succeeded: a later failure is a new episode (said if
    /// ``repeatInterval`` has passed).
    static func room(_ directory: String) {
        reports.withLock { reports in
            if reports[directory] != nil { reports[directory]?.roomSince = true }
        }
    }
}
