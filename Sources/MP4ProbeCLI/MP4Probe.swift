import Foundation
import MP4Core
import MP4IO
import MP4Report

/// The `mp4probe` command: parses arguments, runs a subcommand, writes to the given outputs
/// and returns the exit code. The executable's `main` only calls ``start()``.
public enum MP4Probe {
    /// The tool's version.
    public static let version = MP4ProbeVersion.string

    /// Runs the tool with the process's arguments on the calling (main) thread and exits with
    /// its exit code; the executable's `main.swift` calls it. The command starts at once, on
    /// this thread: a command that never waits (`info` on a local file, `--version`) ends
    /// without the concurrency runtime ever starting its worker threads (0.3-0.6 ms of a 3-4 ms
    /// run, measured against an async-main build).
    /// One that does wait (a URL, `serve`) goes on on the runtime's threads while this one
    /// parks in `dispatchMain()`.
    public static func start() -> Never {
        let arguments = Array(CommandLine.arguments.dropFirst())
        // The command runs on this thread: it must see the signals that interrupt a rewrite
        // even when the parent started it with them blocked (an async main's thread waited in
        // sigsuspend, which let them through).
        Platform.unblockTerminationSignals()
        // A program owns its signals: the tool, not the library, asks for temporary files to
        // be removed when it is interrupted.
        TemporaryFiles.removeOnTerminationSignals()
        #if compiler(>=6.2)
        if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
            Task.immediate { exit(await run(arguments)) }
            dispatchMain()
        }
        #endif
        Task { exit(await run(arguments)) }
        dispatchMain()
    }

    /// Runs the tool with `arguments` (without the program name).
    /// - Returns: the process exit code (see ``ExitCode``).
    public static func run(_ arguments: [String], output: some TextOutput = StandardStream.output, errors: some TextOutput = StandardStream.error) async -> Int32 {
        var arguments = arguments
        guard let first = arguments.first else {
            output.write(Help.general)
            return ExitCode.usage.rawValue
        }
        switch first {
        case "--help", "-h", "help":
            if first == "help", arguments.count > 1 { return help(arguments[1], output: output, errors: errors) }
            output.write(Help.general)
            return ExitCode.success.rawValue
        case "--version":
            output.write("mp4probe \(version)\n")
            return ExitCode.success.rawValue
        default:
            break
        }
        var command: any Command.Type = InfoCommand.self
        if let named = CommandTable.named(first) {
            command = named
            arguments.removeFirst()
        } else if !first.hasPrefix("-") && looksLikeMistypedCommand(first) {
            errors.write("mp4probe: unknown command '\(first)' (and no such file); see 'mp4probe --help'\n")
            return ExitCode.usage.rawValue
        }
        if arguments.prefix(while: { $0 != "--" }).contains(where: { $0 == "--help" || $0 == "-h" }) {
            output.write(Help.text(for: command.spec))
            return ExitCode.success.rawValue
        }
        do {
            return try await command.run(arguments, output: output, errors: errors)
        } catch let error as ArgumentScanner.UsageError {
            errors.write("mp4probe \(command.spec.name): \(error.description)\nsee 'mp4probe \(command.spec.name) --help'\n")
            return ExitCode.usage.rawValue
        } catch let error as MP4Error {
            if arguments.contains("--json") { output.write(ErrorReport.json(error).rendered(pretty: !arguments.contains("--compact")) + "\n") }
            errors.write(ErrorReport.text(error))
            return ExitCode.for(error).rawValue
        } catch is CancellationError {
            errors.write("mp4probe: cancelled\n")
            return ExitCode.ioError.rawValue
        } catch {
            let wrapped = MP4Error(.internalError, "\(error)")
            if arguments.contains("--json") { output.write(ErrorReport.json(wrapped).rendered(pretty: !arguments.contains("--compact")) + "\n") }
            errors.write(ErrorReport.text(wrapped))
            return ExitCode.internalError.rawValue
        }
    }

    static func help(_ command: String, output: some TextOutput, errors: some TextOutput) -> Int32 {
        guard let named = CommandTable.named(command) else {
            errors.write("mp4probe: no help for unknown command '\(command)'; the commands are \(CommandTable.all.map { $0.spec.name }.joined(separator: ", "))\n")
            return ExitCode.usage.rawValue
        }
        output.write(Help.text(for: named.spec))
        return ExitCode.success.rawValue
    }

    /// A bare word without a dot or slash that is not a command is more likely a typo than a
    /// file name; only say so when no such file exists.
    static func looksLikeMistypedCommand(_ word: String) -> Bool {
        if isURL(word) { return false }
        return !word.contains(".") && !word.contains("/") && !FileManager.default.fileExists(atPath: word)
    }

    /// How URLs are fetched: what every reading command accepts (`--header "Name: value"`,
    /// repeatable, and `--timeout S` for URLs; `--stats` for the reads made).
    struct SourceOptions: Sendable {
        var headers: [String: String] = [:]
        /// Lower-cased names given with `--secret-header`: dropped on cross-origin redirects
        /// like Authorization and Cookie.
        var secretHeaderNames: Set<String> = []
        var timeout: Double?
        /// `--max-time S`: the most the command's reading may take in all (for `serve`, each
        /// read of an origin).
        var maxTime: Double?
        /// `--ca-file FILE`: the CA certificates https servers are checked against.
        var caFile: String?
        /// `--allow-insecure-redirect`: follow redirects from https: to http:.
        var allowsInsecureRedirects = false
        /// `--cache DIR`: read through an on-disk cache.
        var cacheDirectory: String?
        /// `--cache-max-age S`: how long a cached entry is used without asking the origin.
        var cacheMaxAge: Double?
    }

    static func sourceOptions(_ scanner: ArgumentScanner) throws -> SourceOptions {
        var options = SourceOptions()
        for (option, secret) in [("header", false), ("secret-header", true)] {
            for header in scanner.values(option) {
                guard let colon = header.firstIndex(of: ":"), colon != header.startIndex else {
                    throw ArgumentScanner.UsageError(description: "--\(option) expects \"Name: value\", not '\(header)'")
                }
                let name = String(header[..<colon]).trimmingSpaces(), value = String(header[header.index(after: colon)...]).trimmingSpaces()
                guard HTTPByteSource.isValidHeaderName(name) else {
                    throw ArgumentScanner.UsageError(description: "--\(option): '\(name)' is not a valid header name (letters, digits and !#$%&'*+-.^_`|~)")
                }
                guard HTTPByteSource.isValidHeaderValue(value) else {
                    throw ArgumentScanner.UsageError(description: "--\(option): the value of \(name) contains a line break or NUL (it would inject headers into the request)")
                }
                options.headers[name] = value
                if secret { options.secretHeaderNames.insert(name.lowercased()) }
            }
        }
        options.timeout = try scanner.seconds("timeout")
        options.maxTime = try scanner.seconds("max-time")
        if let caFile = scanner.value("ca-file") {
            guard let text = try? String(contentsOfFile: caFile, encoding: .utf8), !PEM.certificates(in: text).isEmpty else {
                throw ArgumentScanner.UsageError(description: "--ca-file: \(caFile) cannot be read, or holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
            }
            options.caFile = caFile
        }
        options.allowsInsecureRedirects = scanner.flag("allow-insecure-redirect")
        options.cacheDirectory = scanner.value("cache")
        options.cacheMaxAge = try scanner.seconds("cache-max-age")
        return options
    }

    /// Removes the temporaries of processes that are gone beside the film at `path` (an
    /// output's, an in-place journal's: a kill before their rename leaves them) and says on
    /// `errors` which it left: those of a running process (a write under way, or an id in
    /// use again).
    static func mentionLeftovers(of path: String, names: [String]? = nil, errors: some TextOutput) {
        for leftover in Leftovers.sweep(beside: path, names: names) {
            errors.write("note: \(leftover.path) is a temporary file of mp4probe process \(leftover.process), which is running (a write under way, or a leftover whose process id is in use again): left alone; remove it when no mp4probe is at work on \(path)\n")
        }
    }

    /// Finishes or undoes an in-place faststart of `path` that a crash interrupted, and says so
    /// on standard error.
    static func recoverInterruptedFaststart(_ path: String) throws {
        if let recovery = try InPlaceFaststart.recover(path: path) { sayRecovered(path, recovery) }
    }

    /// What a recovery did, on standard error.
    @Sendable static func sayRecovered(_ path: String, _ recovery: InPlaceFaststart.Recovery) {
        switch recovery {
        case .rolledBack: StandardStream.error.write("note: an interrupted in-place faststart of \(path) was undone: the file is as it was before\n")
        case .finished: StandardStream.error.write("note: an interrupted in-place faststart of \(path) was finished: moov is at the front\n")
        }
    }

    /// Whether `location` is an http(s) URL.
    static func isURL(_ location: String) -> Bool { SourceFactory.isURL(location) }

    /// The source for a path or URL (through the cache with `--cache DIR`), opened by
    /// ``SourceFactory`` with the command line's options.
    static func openCachedSource(_ location: String, _ options: SourceOptions, cacheOptions: CachedByteSource.Options = CachedByteSource.Options()) async throws -> any ByteSource {
        if location == "-" {
            throw ArgumentScanner.UsageError(description: "reading standard input ('-') is not supported: an MP4 file is read out of order (its moov is often at the end); give a file name or an http(s) URL")
        }
        // Without a cache, a local file needs none of the URL options (building them was 8%
        // of `info` on a small file). Either way the factory recovers an interrupted in-place
        // faststart, once, and says so here.
        if !isURL(location) && options.cacheDirectory == nil { return try SourceFactory.openFile(location, recovered: sayRecovered) }
        return try await openLayers(location, options, cacheOptions: cacheOptions).source
    }

    /// `location` opened as ``openCachedSource(_:_:cacheOptions:)`` opens it, with its layers
    /// by type (the cache, the HTTP origin).
    static func openLayers(_ location: String, _ options: SourceOptions, cacheOptions: CachedByteSource.Options = CachedByteSource.Options()) async throws -> SourceFactory.Opened {
        var factory = factoryOptions(options)
        factory.recovered = sayRecovered
        // A reading command's --max-time is one deadline for all its reads (head, moov, ...).
        factory.http.maxTotalTime = options.maxTime
        factory.cache?.entries = cacheOptions
        if let maxAge = options.cacheMaxAge { factory.cache?.entries.maxAge = maxAge }
        return try await SourceFactory.opened(location, options: factory)
    }

    /// The command line's URL options (`--header`, `--secret-header`, `--timeout`,
    /// `--max-time`, `--cache`) as ``SourceFactory`` takes them: for the reading commands and
    /// for the proxy's origins.
    static func factoryOptions(_ options: SourceOptions) -> SourceFactory.Options {
        var factory = SourceFactory.Options()
        factory.http.headers = options.headers
        factory.http.credentialHeaders.formUnion(options.secretHeaderNames)
        factory.http.warn = { StandardStream.error.write("mp4probe: warning: \($0)\n") }
        // For side-by-side measurements (Tests/Benchmarks/http-benchmark.sh).
        if let client = getenv("MP4PROBE_HTTP_CLIENT"), String(cString: client) == "urlsession" { factory.http.client = .urlSession }
        if let timeout = options.timeout { factory.http.timeout = timeout }
        factory.http.maxTime = options.maxTime
        factory.http.caFile = options.caFile
        factory.http.allowsInsecureRedirects = options.allowsInsecureRedirects
        factory.cache = options.cacheDirectory.map(CacheConfiguration.init(directory:))
        factory.cache?.entries.warn = factory.http.warn
        return factory
    }

    /// With `--stats`, writes what reading cost to `errors`: each layer's summary, or for a
    /// local file the reads made to open it.
    static func reportStatistics(_ source: any ByteSource, _ file: MP4File?, _ scanner: ArgumentScanner, errors: some TextOutput) async {
        guard scanner.flag("stats") else { return }
        if let reporting = source as? any ReportsReadCost {
            for line in await reporting.readCostSummary() { errors.write("mp4probe: \(line)\n") }
        } else if let file {
            errors.write("mp4probe: \(Format.count(file.statistics.readCount, "read")), \(file.statistics.byteCount) bytes read to open the file\n")
        }
    }

    /// Opens one file and keeps its source and limits for later reads (fragments). `facts`:
    /// what the open reads beyond `ftyp` and `moov` (nil: what `info` shows).
    static func openWithSource(_ location: String, _ scanner: ArgumentScanner, loadsAllBoxes: Bool, facts: MP4File.Facts? = .structure) async throws -> (file: MP4File, source: any ByteSource, limits: ParseLimits) {
        let limits = try parseLimits(scanner)
        do {
            let source = try await openCachedSource(location, try sourceOptions(scanner))
            var options = MP4File.Options(limits: limits, loadsAllBoxes: loadsAllBoxes, facts: facts)
            // Over HTTP, each fragment header would cost a request: a sidx says where they are
            // (a box listing still walks them all).
            options.followsSegmentIndex = isURL(location) && !loadsAllBoxes
            // `info` and the inspector of a URL: a fragmented file's fragments are not walked
            // (a request per `moof`); its duration comes from the last one (one read of the end).
            if isURL(location) && facts == nil && !loadsAllBoxes { options.stopsAtFirstFragment = true }
            return (try await MP4File.open(source, options: options), source, limits)
        } catch let error as MP4Error {
            throw error.about(location)
        }
    }

    /// The limits given on the command line (``CommandTable/limitOptions``), defaults for the rest.
    static func parseLimits(_ scanner: ArgumentScanner) throws -> ParseLimits {
        var limits = ParseLimits()
        for option in CommandTable.limitOptions {
            let value = option.argument == "SIZE" ? try scanner.size(option.name) : try scanner.integer(option.name).map { UInt64($0) }
            if let value { limits[option.limit] = value }
        }
        return limits
    }
}
