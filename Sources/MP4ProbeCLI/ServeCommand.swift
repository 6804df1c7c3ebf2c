import Foundation
import MP4Core
import MP4IO
import MP4Report

/// `mp4probe serve`: the loopback caching proxy (docs/serving.md).
enum ServeCommand: Command {
    static let spec = CommandSpec(
        name: "serve",
        summary: "serve origins to players through a loopback caching proxy (and as faststart)",
        usage: ["mp4probe serve [--cache DIR] [--max-size SIZE] [--port N] [--origin URL] [options]"],
        description: """
        Starts an HTTP server on the loopback address and prints its base URL on the first line
        of standard output. A player asks for BASE + NAME + "?url=" + the percent-encoded origin
        URL (NAME is free: players that look at the extension see it); "&faststart=1" serves a
        moov-at-end origin as faststart (moov first) without rewriting it. Bytes come from the
        on-disk cache and, when missing, from the origin; ranges, HEAD, 416 and If-Range behave
        as players expect. The base URL holds a random secret: only holders of a URL it handed
        out can use it. Stops on SIGINT or SIGTERM (the cache stays consistent); with --stats it then
        says on stderr what it served and where the bytes came from.
        """,
        options: [
            .value("port", "N", "port to listen on (default 0: a free port)"),
            .value("host", "ADDRESS", "numeric address or localhost to bind (default 127.0.0.1; binding\nanything but loopback exposes the proxy to the network: a warning)"),
            .value("origin", "URL", "print the proxy URL for this origin after the base URL (repeatable)"),
            .flag("faststart", "serve every resource as faststart (moov first); &faststart=0 on a URL\nasks for the original bytes"),
            .value("max-size", "SIZE", "keep the cache under SIZE on disk (default 10G; 64K, 256M, 1G...):\nleast-recently-used entries go first, as writes need room,\nnever one being served"),
            .value("prefetch", "SECONDS", "fetch this many seconds of every track ahead of where a player\nreads or seeks (default 10; 0: off)"),
            .value("origin-wait", "SECONDS", "how long a player's request waits for an unreachable origin, trying\nagain, before it fails (default 30; 0: at once); meanwhile ranges\nare answered with the cached bytes they start in"),
            .value("idle-lifetime", "SECONDS", "how long a resource no request asks for stays open (its origin\nconnections, cache files and movie index; default 30)"),
            .value("preload-jobs", "N", "preloads (POST BASE_/preload) fetching at once, 1 to 16 (default 2);\nthe others wait their turn, and all wait while players fetch"),
            .value("access-log", "FILE", "append one line per request to FILE (- for stderr), as nginx's\ncombined format: time, request (secret and query left out), status,\nbytes sent, Range, seconds, origin host, why it ended early; without\nit, refused requests (4xx, 5xx) are still said on stderr"),
        ], groups: [CommandTable.source], exitCodes: [.success, .usage, .ioError])

    /// The default cache directory: `$XDG_CACHE_HOME/mp4probe`, else `~/.cache/mp4probe`.
    static var defaultCacheDirectory: String {
        let environment = ProcessInfo.processInfo.environment
        if let xdg = environment["XDG_CACHE_HOME"], !xdg.isEmpty { return xdg + "/mp4probe" }
        return (environment["HOME"] ?? NSTemporaryDirectory()) + "/.cache/mp4probe"
    }

    static func run(_ arguments: [String], output: some TextOutput, errors: some TextOutput) async throws -> Int32 {
        let scanner = try ArgumentScanner(arguments, for: spec)
        guard scanner.positionals.isEmpty else { throw ArgumentScanner.UsageError(description: "serve takes no FILE (origins are given per request as ?url=...)") }
        let sourceOptions = try MP4Probe.sourceOptions(scanner)
        var options = CachingProxy.Options(cacheDirectory: sourceOptions.cacheDirectory ?? defaultCacheDirectory)
        options.loader.http = MP4Probe.factoryOptions(sourceOptions).http
        // "The cache disk is full" on stderr, once per episode (docs/serving.md).
        options.loader.cache.entries.warn = options.loader.http.warn
        if let port = try scanner.integer("port") {
            guard port <= 65535 else { throw ArgumentScanner.UsageError(description: "--port must be at most 65535") }
            options.server.port = port
        }
        if let value = scanner.value("host") {
            let address = try bindAddress(value)
            options.server.host = address.host
            if let warning = address.warning { errors.write("mp4probe: warning: \(warning)\n") }
        }
        options.faststartByDefault = scanner.flag("faststart")
        options.loader.cache.maxBytes = try scanner.size("max-size") ?? (10 << 30)
        if let seconds = try scanner.seconds("prefetch") {
            guard seconds <= 600 else { throw ArgumentScanner.UsageError(description: "--prefetch must be at most 600 seconds") }
            options.loader.cache.entries.readAhead.prefetchSeconds = seconds
        }
        if let seconds = try scanner.seconds("origin-wait") {
            guard seconds <= 3600 else { throw ArgumentScanner.UsageError(description: "--origin-wait must be at most 3600 seconds") }
            options.loader.originWait = seconds
        }
        if let seconds = try scanner.seconds("idle-lifetime") {
            guard seconds > 0 && seconds <= 86_400 else { throw ArgumentScanner.UsageError(description: "--idle-lifetime must be more than 0 and at most 86400 seconds") }
            options.loader.idleLifetime = seconds
        }
        if let jobs = try scanner.integer("preload-jobs") {
            guard (1...16).contains(jobs) else { throw ArgumentScanner.UsageError(description: "--preload-jobs must be from 1 to 16") }
            options.loader.preloadJobs = jobs
        }
        // The source options' freshness (--cache-max-age) applies to the proxy's entries too.
        if let maxAge = sourceOptions.cacheMaxAge { options.loader.cache.entries.maxAge = maxAge }
        if let path = scanner.value("access-log") {
            let log = try LineWriter(path: path)
            options.accessLog = { log.write($0) }
        } else {
            let stderr = LineWriter.standardError
            options.refusalLog = { stderr.write("mp4probe: " + $0) }
        }
        let statistics = scanner.flag("stats") ? ServeStatistics() : nil
        options.statistics = statistics
        options.inspectorPage = InspectorPage.live
        let proxy = CachingProxy(options: options)
        try proxy.start()
        output.write(proxy.baseURL + "\n")
        for origin in scanner.values("origin") {
            output.write(proxy.url(for: origin, name: URL(string: origin)?.lastPathComponent ?? "media.mp4") + "\n")
        }
        errors.write("mp4probe: serving on \(proxy.baseURL) (cache \(options.loader.cache.directory)); SIGINT or SIGTERM stops\n")
        await waitForTermination()
        proxy.stop()
        if let statistics {
            for line in summary(statistics.current) { errors.write("mp4probe: \(line)\n") }
        }
        return ExitCode.success.rawValue
    }

    /// The summary, one line each: "served 12 requests (10 2xx, 2 4xx), 3.2 MiB to players:
    /// 2.9 MiB from the cache, 256.0 KiB fetched from origins, 64.0 KiB made here; 3 left by
    /// their client before the end, 0 cut short".
    static func summary(_ totals: ServeStatistics.Totals) -> [String] {
        let classes = (1...5).compactMap { index in totals.byClass[index] > 0 ? "\(totals.byClass[index]) \(index)xx" : nil }
        let made = totals.bytesSent - min(totals.bytesSent, totals.fromCache + totals.fromOrigin)
        var lines = ["served \(Format.count(totals.requests, "request"))" + (classes.isEmpty ? "" : " (\(classes.joined(separator: ", ")))")
                     + ", \(Format.bytes(totals.bytesSent)) to players: \(Format.bytes(totals.fromCache)) from the cache, "
                     + "\(Format.bytes(totals.fromOrigin)) fetched from origins, \(Format.bytes(made)) made here (faststart moov, pages)"]
        lines.append("\(Format.count(totals.clientsLeft, "answer")) left by the client before the end, \(totals.cutShort) cut short by a failing origin")
        return lines
    }

    /// The address `--host VALUE` binds: a numeric IPv4 or IPv6 address, or `localhost`
    /// (127.0.0.1: a name would be resolved to whatever the system says, and `bind` takes
    /// numbers), with a warning when it is not loopback, saying what still protects the proxy.
    static func bindAddress(_ value: String) throws -> (host: String, warning: String?) {
        let host = value.lowercased() == "localhost" ? "127.0.0.1" : value
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        let isIPv4 = parts.count == 4 && parts.allSatisfy { !$0.isEmpty && $0.count <= 3 && $0.allSatisfy { ("0"..."9").contains($0) } && Int($0).map { $0 <= 255 } == true }
        let isIPv6 = host.contains(":") && host.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
        guard isIPv4 || isIPv6 else {
            throw ArgumentScanner.UsageError(description: "--host takes a numeric address (127.0.0.1, ::1) or localhost, not '\(value)'")
        }
        let loopback = (isIPv4 && parts[0] == "127") || host == "::1" || host == "0:0:0:0:0:0:0:1"
        guard !loopback else { return (host, nil) }
        return (host, "--host \(host) is not loopback: other machines can connect to the proxy. What still keeps them out: every path needs the secret in the base URL (404 without it, and the connection closed), and a Host header that names another address is refused (421); anyone who sees a URL it hands out can use it, and its traffic is plain HTTP")
    }

    /// Returns when the process receives SIGINT or SIGTERM.
    static func waitForTermination() async {
        let (signals, delivered) = AsyncStream<Int32>.makeStream()
        // The sources live as long as this function waits.
        let sources = [SIGINT, SIGTERM].map { number -> DispatchSourceSignal in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: DispatchQueue(label: "mp4probe.serve.signal"))
            source.setEventHandler { delivered.yield(number) }
            source.resume()
            return source
        }
        for await _ in signals { break }
        sources.forEach { $0.cancel() }
    }
}

/// Lines appended to a file (or stderr), one write each, from any task.
final class LineWriter: Sendable {
    /// The file; one write at a time.
    private let handle: Locked<FileHandle>

    static let standardError = LineWriter(handle: .standardError)

    private init(handle: FileHandle) { self.handle = Locked(handle) }

    /// Appends to `path` (created 0644 when missing), or stderr for `-`.
    convenience init(path: String) throws {
        if path == "-" { self.init(handle: .standardError); return }
        if !FileManager.default.fileExists(atPath: path) {
            guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o644]) else {
                throw MP4Error(.io, "cannot create the access log \(path)")
            }
        }
        guard let handle = FileHandle(forWritingAtPath: path) else { throw MP4Error(.io, "cannot open the access log \(path) for writing") }
        handle.seekToEndOfFile()
        self.init(handle: handle)
    }

    func write(_ line: String) {
        let bytes = Data((line + "\n").utf8)
        handle.withLock { try? $0.write(contentsOf: bytes) }
    }
}
