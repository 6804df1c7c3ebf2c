import Foundation
import MP4Core
import MP4IO

/// `mp4probe fetch URL --cache DIR [--time T [--duration D] | --all]`: fills the cache with
/// `moov` and exactly the byte ranges a seek needs (or the whole resource).
enum FetchCommand: Command {
    static let spec = CommandSpec(
        name: "fetch",
        summary: "fill an on-disk cache with moov and the ranges a seek needs (or everything)",
        usage: ["mp4probe fetch URL|FILE --cache DIR [--time T [--duration D] | --all] [--block SIZE]"],
        description: """
        Fills the cache in DIR for URL: the box headers and moov, plus with --time exactly the byte
        ranges a player needs to show T..T+D (the seek plan), or with --all the whole resource (one
        streamed request per missing part, written to the cache as it arrives; memory stays
        bounded whatever the size). Every --block bytes (default 16M) what arrived is committed
        (data fsync, then the range table), so an interrupted fetch keeps it. Reads already cached
        are not fetched again; an entry whose upstream changed (length, ETag, Last-Modified) is
        emptied first. See docs/cache.md.
        """,
        options: [
            .value("time", "T", "cache what a player needs to start at T"),
            .value("duration", "D", "with --time: and to play D seconds"),
            .flag("all", "cache the whole resource"),
            .value("block", "SIZE", "commit every SIZE bytes (default 16M)"),
            .flag("json", "accepted for symmetry; the summary is text"),
        ], groups: [CommandTable.source, CommandTable.limits], exitCodes: CommandTable.readingExits)

    static func run(_ arguments: [String], output: some TextOutput, errors: some TextOutput) async throws -> Int32 {
        let scanner = try ArgumentScanner(arguments, for: spec)
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
