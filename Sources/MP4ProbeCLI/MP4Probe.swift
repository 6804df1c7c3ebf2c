import Foundation
import MP4Core
import MP4IO

/// The `mp4probe` command: parses arguments, runs a subcommand, writes to the given outputs
/// and returns the exit code. The executable's `main` only calls ``run(_:output:errors:)``.
public enum MP4Probe {
    /// The tool's version.
    public static let version = "0.1.0"

    static let commands: [(name: String, summary: String)] = [
        ("info", "summarise a file: brands, duration, tracks and codecs, faststart verdict, findings (default)"),
        ("boxes", "print the box tree with offsets, sizes, version/flags and key fields"),
        ("samples", "list every sample: dts, pts, duration, offset, size, sync, chunk"),
        ("seek", "map a time (and duration) to the keyframe and the byte ranges a player needs"),
        ("faststart", "move moov in front of the media, safely (temp file, fsync, rename)"),
        ("check", "CI gate: check files or directories against a policy (faststart, integrity, keyframes...)"),
        ("help", "show help for a command"),
    ]

    /// Runs the tool with the process's arguments and exits with its exit code.
    public static func main() async -> Never {
        exit(await run(Array(CommandLine.arguments.dropFirst())))
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
        var command = "info"
        if commands.contains(where: { $0.name == first }) {
            command = first
            arguments.removeFirst()
        } else if !first.hasPrefix("-") && looksLikeMistypedCommand(first) {
            errors.write("mp4probe: unknown command '\(first)' (and no such file); see 'mp4probe --help'\n")
            return ExitCode.usage.rawValue
        }
        do {
            switch command {
            case "boxes": return try await BoxesCommand.run(arguments, output: output, errors: errors)
            case "samples": return try await SamplesCommand.run(arguments, output: output, errors: errors)
            case "seek": return try await SeekCommand.run(arguments, output: output, errors: errors)
            case "faststart": return try await FaststartCommand.run(arguments, output: output, errors: errors)
            case "check": return try await CheckCommand.run(arguments, output: output, errors: errors)
            default: return try await InfoCommand.run(arguments, output: output, errors: errors)
            }
        } catch let error as ArgumentScanner.UsageError {
            errors.write("mp4probe \(command): \(error.description)\nsee 'mp4probe \(command) --help'\n")
            return ExitCode.usage.rawValue
        } catch let error as MP4Error {
            errors.write("mp4probe: \(error)\n")
            return ExitCode.for(error).rawValue
        } catch {
            errors.write("mp4probe: internal error: \(error)\n")
            return ExitCode.internalError.rawValue
        }
    }

    static func help(_ command: String, output: some TextOutput, errors: some TextOutput) -> Int32 {
        switch command {
        case "info": output.write(Help.info)
        case "boxes": output.write(Help.boxes)
        case "samples": output.write(Help.samples)
        case "seek": output.write(Help.seek)
        case "faststart": output.write(Help.faststart)
        case "check": output.write(Help.check)
        default:
            errors.write("mp4probe: no help for unknown command '\(command)'\n")
            return ExitCode.usage.rawValue
        }
        return ExitCode.success.rawValue
    }

    /// A bare word without a dot or slash that is not a command is more likely a typo than a
    /// file name; only say so when no such file exists.
    static func looksLikeMistypedCommand(_ word: String) -> Bool {
        !word.contains(".") && !word.contains("/") && (try? FileSource(path: word)) == nil
    }

    /// Opens the source named on the command line.
    static func openSource(_ location: String) throws -> any ByteSource {
        let lower = location.lowercased()
        if lower.hasPrefix("http://") || lower.hasPrefix("https://") {
            throw MP4Error(.unsupported, "\(location): HTTP(S) sources are not available in this version; download the file first")
        }
        return try FileSource(path: location)
    }

    /// Opens and parses one file with the limits given on the command line.
    static func open(_ location: String, _ scanner: ArgumentScanner, loadsAllBoxes: Bool) async throws -> MP4File {
        try await openWithSource(location, scanner, loadsAllBoxes: loadsAllBoxes).file
    }

    /// Opens one file and keeps its source and limits for later reads (fragments).
    static func openWithSource(_ location: String, _ scanner: ArgumentScanner, loadsAllBoxes: Bool) async throws -> (file: MP4File, source: any ByteSource, limits: ParseLimits) {
        var limits = ParseLimits()
        if let cap = try scanner.size("max-moov-size") { limits.maxMovieBoxSize = cap }
        let source = try openSource(location)
        do {
            return (try await MP4File.open(source, options: .init(limits: limits, loadsAllBoxes: loadsAllBoxes)), source, limits)
        } catch let error as MP4Error {
            var named = error
            if !named.message.hasPrefix(location) { named.message = "\(location): \(named.message)" }
            throw named
        }
    }
}

/// `mp4probe [info] FILE`.
enum InfoCommand {
    static func run(_ arguments: [String], output: some TextOutput, errors: some TextOutput) async throws -> Int32 {
        let scanner = try ArgumentScanner(arguments, flags: ["json", "help", "compact"], options: ["max-moov-size"])
        if scanner.flag("help") {
            output.write(Help.info)
            return ExitCode.success.rawValue
        }
        let location = try scanner.singleFile()
        let file = try await MP4Probe.open(location, scanner, loadsAllBoxes: false)
        if scanner.flag("json") {
            output.write(InfoReport.json(file).rendered(pretty: !scanner.flag("compact")) + "\n")
        } else {
            output.write(InfoReport.text(file))
        }
        return ExitCode.success.rawValue
    }
}

/// `mp4probe boxes FILE`.
enum BoxesCommand {
    static func run(_ arguments: [String], output: some TextOutput, errors: some TextOutput) async throws -> Int32 {
        let scanner = try ArgumentScanner(arguments, flags: ["json", "help", "full", "compact"], options: ["depth", "entries", "max-moov-size"])
        if scanner.flag("help") {
            output.write(Help.boxes)
            return ExitCode.success.rawValue
        }
        let location = try scanner.singleFile()
        let depth = try scanner.integer("depth")
        if depth == 0 { throw ArgumentScanner.UsageError(description: "--depth must be at least 1") }
        let options = BoxesReport.Options(maxDepth: depth, full: scanner.flag("full"), entryLimit: try scanner.integer("entries") ?? Int.max)
        let file = try await MP4Probe.open(location, scanner, loadsAllBoxes: true)
        if scanner.flag("json") {
            output.write(BoxesReport.json(file, options: options).rendered(pretty: !scanner.flag("compact")) + "\n")
        } else {
            output.write(BoxesReport.text(file, options: options))
        }
        return ExitCode.success.rawValue
    }
}
