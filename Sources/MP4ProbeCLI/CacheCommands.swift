import Foundation
import MP4Core
import MP4IO

/// `mp4probe fetch URL --cache DIR [--time T [--duration D] | --all]`: fills the cache with
/// `moov` and exactly the byte ranges a seek needs (or the whole resource).
enum FetchCommand {
    static func run(_ arguments: [String], output: some TextOutput, errors: some TextOutput) async throws -> Int32 {
        let scanner = try ArgumentScanner(arguments, for: CommandTable.fetch)
        let location = try scanner.singleFile()
        guard scanner.value("cache") != nil else { throw ArgumentScanner.UsageError(description: "fetch needs --cache DIR") }
        let time = try scanner.value("time").map { text -> Double in
            guard let t = SeekCommand.parseTime(text) else { throw ArgumentScanner.UsageError(description: "--time must be seconds or hh:mm:ss.mmm, not '\(text)'") }
            return t
        }
        let duration = try scanner.value("duration").map { text -> Double in
            guard let d = SeekCommand.parseTime(text) else { throw ArgumentScanner.UsageError(description: "--duration must be seconds or hh:mm:ss.mmm, not '\(text)'") }
            return d
        } ?? 0
        if scanner.flag("all") && time != nil { throw ArgumentScanner.UsageError(description: "use either --all or --time") }
        var cacheOptions = CachedByteSource.Options()
        if let block = try scanner.size("block") {
            guard block > 0 else { throw ArgumentScanner.UsageError(description: "--block must be at least 1 byte") }
            cacheOptions.commitInterval = block
        }
        let source = try await MP4Probe.openCachedSource(location, try MP4Probe.sourceOptions(scanner), cacheOptions: cacheOptions)
        guard let cached = source as? CachedByteSource else { throw MP4Error(.io, "no cache") }
        let length = try await cached.length()
        var summary = ""
        if scanner.flag("all") {
            // One streamed request per missing part; the data goes straight to the cache file.
            try await cached.fill(0..<length)
            summary = "cached all \(Format.grouped(length)) bytes of \(location)"
        } else {
            let limits = try MP4Probe.parseLimits(scanner)
            let file = try await MP4File.open(cached, options: MP4File.Options(limits: limits))
            summary = "cached the headers and moov of \(location)"
            if let time {
                let plan = try await SeekPlanner.plan(file, from: cached, at: time, duration: duration, limits: limits)
                for range in plan.ranges { _ = try await cached.read(range) }
                summary += " and \(Format.count(plan.ranges.count, "range")) (\(Format.bytes(plan.byteCount))) a player needs from \(Format.clock(plan.keyframeTime)) to \(Format.clock(plan.windowEnd))"
            }
        }
        let statistics = await cached.statistics
        let present = await cached.cachedRanges
        output.write(summary + "\n")
        output.write("cache:     \(Format.grouped(present.byteCount)) of \(Format.grouped(length)) bytes present in \(Format.count(present.ranges.count, "range")); this run fetched \(Format.grouped(statistics.upstreamBytes)) bytes in \(Format.count(statistics.upstreamReads, "upstream read"))\n")
        if let http = cached.upstream as? HTTPByteSource {
            // What the network carried, which is more when the server ignores Range.
            let traffic = http.statistics
            output.write("network:   \(Format.grouped(traffic.bytesReceived)) body bytes received in \(Format.count(traffic.requests, "HTTP request"))" + (http.supportsRanges ? "" : " (the server ignores Range: each read downloads from the first byte)") + "\n")
        }
        await MP4Probe.reportStatistics(source, nil, scanner, errors: errors)
        return ExitCode.success.rawValue
    }
}

/// `mp4probe cache ls|stat|evict|export DIR ...`.
enum CacheCommand {
    static func run(_ arguments: [String], output: some TextOutput, errors: some TextOutput) async throws -> Int32 {
        let scanner = try ArgumentScanner(arguments, for: CommandTable.cache)
        let words = scanner.positionals
        guard words.count >= 2 else { throw ArgumentScanner.UsageError(description: "expected ls, stat, evict or export and a cache DIR") }
        let directory = words[1]
        guard FileManager.default.fileExists(atPath: directory) else { throw MP4Error(.io, "\(directory): no such cache directory") }
        switch words[0] {
        case "ls":
            let entries = CacheDirectory.entries(directory)
            if scanner.flag("json") {
                output.write(JSONValue.array(entries.map(json)).rendered(pretty: true) + "\n")
            } else {
                for e in entries {
                    let state = e.isDamaged ? "damaged" : (e.isComplete ? "complete" : "\(Format.fixed(Double(e.cachedBytes) * 100 / Double(max(e.length, 1)), 1))%")
                    output.write("\(state)\t\(Format.grouped(e.cachedBytes))/\(Format.grouped(e.length))\t\(e.resource)\n")
                }
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

    static func json(_ e: CacheDirectory.Entry) -> JSONValue {
        .object([("resource", .string(e.resource)), ("length", .uint(e.length)), ("cachedBytes", .uint(e.cachedBytes)), ("allocatedBytes", .uint(e.allocatedBytes)), ("lastUsed", .double(e.lastUsed)), ("complete", .bool(e.isComplete)), ("damaged", .bool(e.isDamaged))])
    }
}
