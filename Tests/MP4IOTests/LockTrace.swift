import Foundation

/// The file locks a process took, as strace saw them (`strace -f -ttt -y`), replayed under
/// Darwin's rules (XNU `bsd/kern/kern_lockf.c`): one lock list per file, in which an `flock`
/// lock and a record lock always belong to different owners (even through one open file
/// description: `ofd_to_id` differs from the fileglob on purpose) and so conflict wherever they
/// overlap, and `flock` waits have no deadlock detection. Linux keeps the two kinds apart, so a
/// protocol that mixes them runs here and hangs there; replaying what ran here is how this
/// machine can tell.
struct LockTrace {
    enum Kind: String, Sendable { case flock, record }

    /// One call that changed or asked for a lock, or opened or closed a file.
    struct Event: Sendable {
        var time: Double
        var process: String
        var call: String
        var fd: Int
        var path: String
        var command: String = ""       // F_OFD_SETLKW, LOCK_EX, ...
        var type: String = ""          // F_WRLCK, F_UNLCK, ...
        var start: Int64 = 0
        var length: Int64 = 0
        var succeeded: Bool
    }

    struct Lock: Sendable {
        var owner: String
        var kind: Kind
        var start: Int64
        var end: Int64              // exclusive; Int64.max: to the end of the file
        func overlaps(_ other: Lock) -> Bool { start < other.end && other.start < end }
    }

    var events: [Event] = []

    /// Parses strace's output of one process (`process` names it); lines of other calls and
    /// failed opens are skipped; a call split by another thread's (`<unfinished ...>`,
    /// `<... fcntl resumed>`) is joined.
    mutating func add(strace text: String, process: String) {
        var pending: [String: String] = [:]   // thread id -> the start of its unfinished line
        for raw in text.split(separator: "\n") {
            var line = String(raw)
            let fields = line.split(separator: " ", maxSplits: 2)
            guard fields.count == 3 else { continue }
            let thread = String(fields[0])
            if line.hasSuffix("<unfinished ...>") {
                pending[thread] = String(line.dropLast("<unfinished ...>".count))
                continue
            }
            if let resumed = line.range(of: " resumed>"), let start = pending.removeValue(forKey: thread) {
                line = start + line[resumed.upperBound...]
            }
            if let event = Self.event(line, process: process) { events.append(event) }
        }
        events.sort { $0.time < $1.time }
    }

    static func event(_ line: String, process: String) -> Event? {
        let fields = line.split(separator: " ", maxSplits: 2).map(String.init)
        guard fields.count == 3, let time = Double(fields[1]) else { return nil }
        let call = fields[2]
        guard let open = call.firstIndex(of: "("), let equals = call.range(of: ") = ", options: .backwards) else { return nil }
        let name = String(call[..<open])
        let arguments = String(call[call.index(after: open)..<equals.lowerBound])
        let result = String(call[equals.upperBound...])
        let succeeded = result.hasPrefix("0") || (name.hasPrefix("open") && !result.hasPrefix("-"))
        func descriptor(_ text: Substring) -> (Int, String)? {
            guard let angle = text.firstIndex(of: "<"), let fd = Int(text[..<angle]), let close = text.lastIndex(of: ">") else { return nil }
            return (fd, String(text[text.index(after: angle)..<close]))
        }
        switch name {
        case "openat", "open":
            guard succeeded, let (fd, path) = descriptor(Substring(result)) else { return nil }
            return Event(time: time, process: process, call: "open", fd: fd, path: path, succeeded: true)
        case "close":
            guard let (fd, path) = descriptor(Substring(arguments)) else { return nil }
            return Event(time: time, process: process, call: "close", fd: fd, path: path, succeeded: succeeded)
        case "flock":
            let parts = arguments.split(separator: ",", maxSplits: 1)
            guard parts.count == 2, let (fd, path) = descriptor(parts[0]) else { return nil }
            return Event(time: time, process: process, call: "flock", fd: fd, path: path, command: parts[1].trimmingCharacters(in: .whitespaces), succeeded: succeeded)
        case "fcntl", "fcntl64":
            let parts = arguments.split(separator: ",", maxSplits: 2).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 3, parts[1].contains("LK"), let (fd, path) = descriptor(Substring(parts[0])) else { return nil }
            func value(_ key: String) -> String? {
                guard let range = parts[2].range(of: key + "=") else { return nil }
                return String(parts[2][range.upperBound...].prefix { $0 != "," && $0 != "}" })
            }
            return Event(time: time, process: process, call: "fcntl", fd: fd, path: path, command: parts[1],
                         type: value("l_type") ?? "", start: Int64(value("l_start") ?? "") ?? 0,
                         length: Int64(value("l_len") ?? "") ?? 0, succeeded: succeeded)
        default:
            return nil
        }
    }

    /// What the replay found.
    struct Verdict: Sendable {
        /// Calls that would block or fail on Darwin although they succeeded here.
        var conflicts: [String] = []
        /// Classic POSIX record locks (released by any close of the file in the process).
        var classicLocks: [String] = []
        /// Table locks (byte 0) waited for while the same description held a range (byte >= 1):
        /// the "hold a range lock, then commit" sequence that hangs a mixed protocol.
        var commitsWhileFetching = 0
        /// Range claims refused because another process held them.
        var refusedClaims = 0
        var lockCalls = 0
    }

    /// Replays the events under Darwin's rules.
    func replayUnderDarwinRules() -> Verdict {
        var verdict = Verdict()
        var held: [String: [Lock]] = [:]          // file -> locks
        var generation: [String: Int] = [:]       // process/fd -> opens seen
        func owner(_ event: Event) -> String { "\(event.process)/fd\(event.fd)#\(generation["\(event.process)/\(event.fd)", default: 0])" }
        for event in events {
            switch event.call {
            case "open":
                generation["\(event.process)/\(event.fd)", default: 0] += 1
            case "close":
                let who = owner(event)
                held[event.path]?.removeAll { $0.owner == who }
            case "flock":
                verdict.lockCalls += 1
                let who = owner(event)
                guard event.succeeded else { continue }
                if event.command.hasPrefix("LOCK_UN") {
                    held[event.path]?.removeAll { $0.owner == who && $0.kind == .flock }
                    continue
                }
                let lock = Lock(owner: who, kind: .flock, start: 0, end: .max)
                if let other = held[event.path, default: []].first(where: { $0.kind == .record && $0.overlaps(lock) }) {
                    verdict.conflicts.append("\(event.process): flock(\(event.command)) on \(event.path) while \(other.owner) holds record lock [\(other.start), \(other.end))" + (other.owner.hasPrefix(event.process + "/") ? ": this process would wait for itself" : ""))
                }
                held[event.path, default: []].append(lock)
            default:   // fcntl
                verdict.lockCalls += 1
                if !event.command.contains("OFD") { verdict.classicLocks.append("\(event.process): \(event.command) on \(event.path)") }
                guard event.command.contains("SETLK") else { continue }
                let who = owner(event)
                let end = event.length == 0 ? Int64.max : event.start + event.length
                if !event.succeeded {
                    if event.start >= 1 { verdict.refusedClaims += 1 }
                    continue
                }
                if event.type == "F_UNLCK" {
                    var remaining: [Lock] = []
                    for lock in held[event.path, default: []] {
                        guard lock.owner == who, lock.kind == .record, lock.start < end, event.start < lock.end else { remaining.append(lock); continue }
                        if lock.start < event.start { remaining.append(Lock(owner: who, kind: .record, start: lock.start, end: event.start)) }
                        if end < lock.end { remaining.append(Lock(owner: who, kind: .record, start: end, end: lock.end)) }
                    }
                    held[event.path] = remaining
                    continue
                }
                let lock = Lock(owner: who, kind: .record, start: event.start, end: end)
                if let other = held[event.path, default: []].first(where: { $0.kind == .flock && $0.overlaps(lock) }) {
                    verdict.conflicts.append("\(event.process): \(event.command) [\(lock.start), \(lock.end)) on \(event.path) while \(other.owner) holds flock" + (other.owner.hasPrefix(event.process + "/") ? ": this process would wait for itself" : ""))
                }
                if event.start == 0 && event.command.hasSuffix("W"),
                   held[event.path, default: []].contains(where: { $0.owner == who && $0.kind == .record && $0.start >= 1 }) {
                    verdict.commitsWhileFetching += 1
                }
                held[event.path, default: []].append(lock)
            }
        }
        return verdict
    }
}
