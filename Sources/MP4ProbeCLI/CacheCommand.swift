import Foundation
import MP4Core
import MP4IO
import MP4Report

/// `mp4probe cache ls|stat|evict|export DIR ...`.
enum CacheCommand: Command {
    static let spec = CommandSpec(
        name: "cache",
        summary: "list, measure, evict or export the entries of a cache directory",
        usage: ["mp4probe cache ls DIR [--json]", "mp4probe cache stat DIR [RESOURCE] [--json]", "mp4probe cache evict DIR --max-size SIZE", "mp4probe cache export DIR RESOURCE OUT"],
        description: """
        ls lists the entries (most recently used first) with how much of each is present; stat
        sums them, or with RESOURCE (an origin URL as ls shows it) says what of it plays from
        the cache: its moov, the seconds from 0 every track has present, the cached time
        ranges; evict removes least-recently-used entries (data, table and lock files; entries
        preloaded and not yet played last, within a quarter of SIZE) until the data files
        occupy at most SIZE on disk; export copies a complete entry to OUT as a normal file
        (atomically).
        """,
        options: [
            .flag("json", "with ls and stat RESOURCE: machine-readable output"),
            .value("max-size", "SIZE", "with evict: the size to shrink to"),
        ], exitCodes: [.success, .usage, .ioError])

    static func run(_ arguments: [String], output: some TextOutput, errors: some TextOutput) async throws -> Int32 {
        let scanner = try ArgumentScanner(arguments, for: spec)
        let words = scanner.positionals
        guard words.count >= 2 else { throw ArgumentScanner.UsageError(description: "expected ls, stat, evict or export and a cache DIR") }
        let directory = words[1]
        guard FileManager.default.fileExists(atPath: directory) else { throw MP4Error(.io, "\(directory): no such cache directory") }
        switch words[0] {
        case "ls":
            // Most recently used first (what eviction spares longest), with what plays.
            let entries = CacheDirectory.entries(directory)
            var playable: [String: Double] = [:]
            for e in entries where !e.isDamaged {
                playable[e.resource] = await CacheStatus.of(e.resource, in: directory)?.playable.prefixSeconds
            }
            if scanner.flag("json") {
                output.write(JSONValue.array(entries.map { json($0, playableSeconds: playable[$0.resource]) }).rendered(pretty: true) + "\n")
            } else {
                output.write(listing(entries, playable: playable))
            }
        case "stat" where words.count == 3:
            guard let status = await CacheStatus.of(words[2], in: directory) else {
                throw MP4Error(.io, "\(words[2]): no entry in \(directory) (cache ls lists them)")
            }
            if scanner.flag("json") {
                output.write(json(status).rendered(pretty: true) + "\n")
            } else {
                let ranges = status.playable.ranges.map { "\(Format.fixed($0.lowerBound, 2))-\(Format.fixed($0.upperBound, 2)) s" }
                output.write("""
                \(status.resource)
                  cached:   \(Format.grouped(status.cachedBytes)) of \(Format.grouped(status.length)) B
                  moov:     \(status.movieIsCached ? "cached" : "missing (nothing plays)")
                  playable: \(Format.fixed(status.playable.prefixSeconds, 2)) s from the start
                  ranges:   \(ranges.isEmpty ? "none" : ranges.joined(separator: ", "))

                """)
            }
        case "stat":
            let entries = CacheDirectory.entries(directory)
            let cached = entries.reduce(0) { $0 + $1.cachedBytes }, allocated = entries.reduce(0) { $0 + $1.allocatedBytes }
            output.write("\(entries.count) entr\(entries.count == 1 ? "y" : "ies"), \(entries.filter(\.isComplete).count) complete, \(Format.bytes(cached)) cached, \(Format.bytes(allocated)) on disk\n")
        case "evict":
            guard let limit = try scanner.size("max-size") else { throw ArgumentScanner.UsageError(description: "evict needs --max-size SIZE") }
            let removed = try CacheDirectory.evict(directory, toAtMost: limit)
            output.write("evicted \(removed.count) entr\(removed.count == 1 ? "y" : "ies") (least recently used first)\n")
            for e in removed { output.write("  \(e.resource)\n") }
        case "export":
            guard words.count == 4 else { throw ArgumentScanner.UsageError(description: "expected cache export DIR RESOURCE OUT") }
            try CacheDirectory.export(directory, resource: words[2], to: words[3])
            output.write("exported \(words[2]) to \(words[3])\n")
        default:
            throw ArgumentScanner.UsageError(description: "unknown cache action '\(words[0])' (ls, stat, evict, export)")
        }
        return ExitCode.success.rawValue
    }

    static func json(_ status: CacheStatus) -> JSONValue {
        .object([("resource", .string(status.resource)), ("length", .uint(status.length)), ("cachedBytes", .uint(status.cachedBytes)),
                 ("movieCached", .bool(status.movieIsCached)), ("playableSeconds", .double(status.playable.prefixSeconds)),
                 ("cachedTimeRanges", .array(status.playable.ranges.map { .array([.double($0.lowerBound), .double($0.upperBound)]) }))])
    }

    static func json(_ e: CacheDirectory.Entry, playableSeconds: Double? = nil) -> JSONValue {
        .object([("resource", .string(e.resource)), ("length", .uint(e.length)), ("cachedBytes", .uint(e.cachedBytes)), ("allocatedBytes", .uint(e.allocatedBytes)), ("lastUsed", .double(e.lastUsed)), ("complete", .bool(e.isComplete)), ("damaged", .bool(e.isDamaged)),
                 ("playableSeconds", playableSeconds.map { .double($0) } ?? .null), ("preloaded", .bool(e.isPreloadedUnplayed))])
    }

    /// `cache ls` as text: a header, then one line per entry, most recently used first:
    /// state (complete, the percent cached, or damaged), bytes cached of the length, seconds
    /// playable from the start (`-`: no `moov` cached, or not a film), last use (UTC), whether it
    /// was preloaded and not played since, and the resource.
    static func listing(_ entries: [CacheDirectory.Entry], playable: [String: Double]) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        var rows = [["STATE", "CACHED/LENGTH", "PLAYABLE", "LAST USED (UTC)", "PRELOADED", "RESOURCE"]]
        for e in entries {
            let state = e.isDamaged ? "damaged" : (e.isComplete ? "complete" : "\(Format.fixed(Double(e.cachedBytes) * 100 / Double(max(e.length, 1)), 1))%")
            let seconds = playable[e.resource].map { $0 > 0 ? Format.fixed($0, 1) + " s" : "0 s" } ?? "-"
            rows.append([state, "\(Format.grouped(e.cachedBytes))/\(Format.grouped(e.length))", seconds,
                         formatter.string(from: Date(timeIntervalSince1970: e.lastUsed)), e.isPreloadedUnplayed ? "yes" : "no", e.resource])
        }
        let widths = (0..<5).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            (0..<5).map { row[$0].padding(toLength: widths[$0], withPad: " ", startingAt: 0) }.joined(separator: "  ") + "  " + row[5]
        }.joined(separator: "\n") + "\n"
    }
}
