import Foundation
import MP4Core
import MP4IO
import MP4Report

/// `mp4probe fetch URL --cache DIR [--time T [--duration D] | --all]`: fills the cache with
/// `moov` and exactly the byte ranges a seek needs (or the whole resource).
enum FetchCommand: Command {
    static let spec = CommandSpec(
        name: "fetch",
        summary: "fill an on-disk cache with moov and the ranges a seek needs (or everything)",
        usage: ["mp4probe fetch URL|FILE --cache DIR [--time T [--duration D] | --all] [--block SIZE]",
                "mp4probe fetch URL [URL...] --cache DIR --seconds N [--jobs J]"],
        description: """
        Fills the cache in DIR for URL: the box headers and moov, plus with --time exactly the byte
        ranges a player needs to show T..T+D (the seek plan), or with --all the whole resource (one
        streamed request per missing part, written to the cache as it arrives; memory stays
        bounded whatever the size). What arrived is committed (data fsync, then the range table)
        every --block bytes (default 16M), or later when the commit before is still running (the
        transfer goes on meanwhile), so an interrupted fetch keeps it. Reads already cached
        are not fetched again; an entry whose upstream changed (length, ETag, Last-Modified) is
        emptied first. With --seconds N, preloads each URL by time: its headers, moov and the
        bytes of its first N seconds on every track (pre-roll and what the decoders need
        included, whatever the layout: moov-at-end files too), J at a time (default 4); one line
        per URL says what plays from the cache; exit 0 only if every URL succeeded. See
        docs/cache.md and docs/serving.md ("Feeds").
        """,
        options: [
            .value("time", "T", "cache what a player needs to start at T"),
            .value("duration", "D", "with --time: and to play D seconds"),
            .flag("all", "cache the whole resource"),
            .value("seconds", "N", "preload the first N seconds of every track (several URLs allowed)"),
            .value("jobs", "J", "with --seconds: URLs preloaded at once (default 4, at most 32)"),
            .value("block", "SIZE", "commit every SIZE bytes (default 16M)"),
            .flag("json", "accepted for symmetry; the summary is text"),
            .flag("quiet", "no progress line (one is drawn on a terminal, never in a pipe)"),
        ], groups: [CommandTable.source, CommandTable.limits], exitCodes: CommandTable.readingExits)

    static func run(_ arguments: [String], output: some TextOutput, errors: some TextOutput) async throws -> Int32 {
        let scanner = try ArgumentScanner(arguments, for: spec)
        guard scanner.value("cache") != nil else { throw ArgumentScanner.UsageError(description: "fetch needs --cache DIR") }
        if scanner.value("seconds") != nil { return try await preload(scanner, output: output, errors: errors) }
        let location = try scanner.singleFile()
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
        if location == "-" { throw ArgumentScanner.UsageError(description: "fetch reads a path or an http(s) URL, not standard input") }
        let layers = try await MP4Probe.openLayers(location, try MP4Probe.sourceOptions(scanner), cacheOptions: cacheOptions)
        let source = layers.source
        guard let cached = layers.cache else { throw MP4Error(.io, "\(location): the cache cannot take a new entry") }
        let length = try await cached.length()
        var summary = ""
        if scanner.flag("all") {
            // One streamed request per missing part; the data goes straight to the cache file.
            let present = await cached.cachedRanges.byteCount
            let progress = scanner.flag("quiet") || !ProgressLine.onTerminal ? nil : ProgressLine.start(total: length, done: present) { await cached.bytesFetched }
            do {
                try await cached.fill(0..<length)
                await progress?.finish()
            } catch {
                await progress?.finish()
                throw error
            }
            summary = "cached all \(Format.grouped(length)) bytes of \(location)"
        } else {
            let limits = try MP4Probe.parseLimits(scanner)
            let file = try await MP4File.open(cached, options: MP4File.Options(limits: limits, facts: .structure))
            summary = "cached the headers and moov of \(location)"
            if let time {
                let plan = try await SeekPlanner.plan(file, from: cached, at: time, duration: duration, limits: limits)
                for range in plan.ranges { _ = try await cached.read(range) }
                summary += " and \(Format.count(plan.ranges.count, "range")) (\(Format.bytes(plan.byteCount))) a player needs from \(Format.clock(plan.keyframeTime)) to \(Format.clock(plan.windowEnd))"
            }
        }
        await cached.fetchesEnded()   // counted whole (a fill ends when its bytes are committed)
        let statistics = await cached.statistics
        let present = await cached.cachedRanges
        output.write(summary + "\n")
        output.write("cache:     \(Format.grouped(present.byteCount)) of \(Format.grouped(length)) bytes present in \(Format.count(present.ranges.count, "range")); this run fetched \(Format.grouped(statistics.upstreamBytes)) bytes in \(Format.count(statistics.upstreamReads, "upstream read"))\n")
        if let http = layers.http {
            // What the network carried, which is more when the server ignores Range.
            let traffic = http.statistics
            output.write("network:   \(Format.grouped(traffic.bytesReceived)) body bytes received in \(Format.count(traffic.requests, "HTTP request"))" + (http.supportsRanges ? "" : " (the server ignores Range: each read downloads from the first byte)") + "\n")
        }
        await MP4Probe.reportStatistics(source, nil, scanner, errors: errors)
        return ExitCode.success.rawValue
    }

    /// `fetch URL... --seconds N`: each URL preloaded by time (``Preload``), `--jobs` at a time,
    /// one line per URL in the order given.
    static func preload(_ scanner: ArgumentScanner, output: some TextOutput, errors: some TextOutput) async throws -> Int32 {
        let locations = scanner.positionals
        guard !locations.isEmpty else { throw ArgumentScanner.UsageError(description: "missing URL") }
        guard let text = scanner.value("seconds"), let seconds = SeekCommand.parseTime(text), seconds.isFinite, seconds >= 0 else {
            throw ArgumentScanner.UsageError(description: "--seconds must be seconds or hh:mm:ss.mmm, not '\(scanner.value("seconds") ?? "")'")
        }
        if scanner.flag("all") || scanner.value("time") != nil { throw ArgumentScanner.UsageError(description: "use --seconds alone, without --all or --time") }
        let jobs = try scanner.integer("jobs") ?? 4
        guard (1...32).contains(jobs) else { throw ArgumentScanner.UsageError(description: "--jobs must be 1 to 32, not \(jobs)") }
        let options = try MP4Probe.sourceOptions(scanner)
        let limits = try MP4Probe.parseLimits(scanner)
        let directory = options.cacheDirectory ?? ""
        let showsProgress = locations.count > 1 && isatty(2) == 1 && !scanner.flag("quiet")
        let clock = ContinuousClock(), started = clock.now
        var lines: [String?] = Array(repeating: nil, count: locations.count)
        var failures = 0, done = 0, next = 0
        await withTaskGroup(of: (Int, String, Bool).self) { group in
            func start() {
                guard next < locations.count else { return }
                let index = next, location = locations[index]
                next += 1
                group.addTask {
                    do {
                        guard let cached = try await MP4Probe.openLayers(location, options).cache else { throw MP4Error(.io, "\(location): the cache cannot take a new entry") }
                        let outcome = try await Preload.run(cached, seconds: seconds, limits: limits)
                        // Every byte this run fetched for the entry, its opening's head and
                        // moov included, once the fetch that carried the last ones is counted.
                        await cached.fetchesEnded()
                        let fetched = await cached.statistics.upstreamBytes
                        // What plays, as `cache stat` and `_/status` say it (one definition: CacheStatus).
                        let playable = await CacheStatus.of(cached.name, in: directory, limits: limits)?.playable.prefixSeconds ?? 0
                        return (index, "\(location): \(Format.fixed(playable, 2)) s playable from the cache (asked \(Format.fixed(seconds, 2)) s); \(Format.grouped(outcome.cachedBytes)) of \(Format.grouped(try await cached.length())) bytes cached, \(Format.grouped(fetched)) fetched now", true)
                    } catch let error as MP4Error {
                        return (index, "\(location): \(error.message)", false)
                    } catch {
                        return (index, "\(location): \(error)", false)
                    }
                }
            }
            for _ in 0..<jobs { start() }
            for await (index, line, succeeded) in group {
                lines[index] = line
                done += 1
                if !succeeded { failures += 1 }
                if showsProgress {
                    StandardStream.error.write(ProgressLine.countLine("preloaded", done: done, total: locations.count, noun: "URL", seconds: ProgressLine.seconds(clock.now - started)))
                }
                start()
            }
        }
        if showsProgress { StandardStream.error.write("\r\u{1B}[K") }
        for line in lines.compactMap({ $0 }) { output.write(line + "\n") }
        output.write("preloaded \(locations.count - failures) of \(Format.count(locations.count, "URL")) (\(Format.fixed(seconds, 2)) s each) into \(directory)\n")
        if failures > 0 { errors.write("\(Format.count(failures, "URL")) failed (above)\n") }
        return failures == 0 ? ExitCode.success.rawValue : ExitCode.ioError.rawValue
    }
}

