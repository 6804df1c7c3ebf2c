import MP4Core

/// The one table of commands: name, usage, description, options and exit codes. Argument
/// scanning accepts exactly the options listed here and `--help` prints exactly them, so the
/// two cannot drift apart (docs/cli.md follows it).
struct CommandSpec: Sendable {
    /// One option: a flag (`--json`) or an option with a value (`--depth N`).
    struct Option: Sendable {
        /// The name without dashes.
        var name: String
        /// What the value is called in help (`N`, `SIZE`); nil for a flag.
        var argument: String?
        /// One or more lines of help.
        var help: String

        static func flag(_ name: String, _ help: String) -> Option { Option(name: name, argument: nil, help: help) }
        static func value(_ name: String, _ argument: String, _ help: String) -> Option { Option(name: name, argument: argument, help: help) }
    }

    /// A titled set of options several commands share.
    struct Group: Sendable {
        var title: String
        var options: [Option]
    }

    var name: String
    /// One line for the general help.
    var summary: String
    /// The usage lines (without "Usage: ").
    var usage: [String]
    /// What the command does, as paragraphs.
    var description: String
    /// The command's own options.
    var options: [Option]
    /// Shared option groups it accepts.
    var groups: [Group] = []
    /// The exit codes it can return.
    var exitCodes: [ExitCode]

    /// Every option it accepts, `--help` included.
    var allOptions: [Option] { options + groups.flatMap(\.options) + [.flag("help", "this help")] }
}

/// The commands and their shared option groups.
enum CommandTable {
    static let output: [CommandSpec.Option] = [
        .flag("json", "machine-readable output (schema: docs/json-schema.md); an error is\nwritten as {\"error\": {...}} too"),
        .flag("compact", "with --json: one line instead of indented output"),
    ]

    static let source = CommandSpec.Group(title: "Reading URLs (http://, https://) and caching", options: [
        .value("header", "\"Name: value\"", "send this header with every request (repeatable)"),
        .value("secret-header", "\"Name: value\"", "like --header, but dropped on a redirect to another origin,\nas Authorization, Cookie and Proxy-Authorization always are"),
        .value("timeout", "S", "give up when nothing arrives for S seconds (default 30)"),
        .value("max-time", "S", "give up when the command's reading takes longer than S seconds\nin all (default: no limit; for serve, each read of an origin)"),
        .value("ca-file", "FILE", "trust https servers whose certificate chains to a CA in FILE\n(PEM) instead of the system's CAs (as curl's --cacert)"),
        .flag("allow-insecure-redirect", "follow a redirect from https: to http: (refused by default: the\nbytes would travel unencrypted under the https URL's name)"),
        .value("cache", "DIR", "read through the on-disk cache in DIR (docs/cache.md)"),
        .value("cache-max-age", "S", "use a cached entry without asking the origin for S seconds\nafter it last confirmed it (default 86400; 0: ask every time;\nan unreachable origin is never needed for cached bytes)"),
        .flag("stats", "print the reads, HTTP requests and bytes the command cost"),
    ])

    /// One option that raises a bound of ``ParseLimits``: the one table from which the option
    /// group, the parsing (``MP4Probe/parseLimits(_:)``) and the hint of an error at that bound
    /// (``ErrorReport``) all come.
    struct LimitOption: Sendable {
        var limit: ParseLimits.Name
        var name: String
        /// `SIZE` (suffixes K, M, G) or `N`.
        var argument: String
        var help: String
        /// What real files need, for the hint.
        var typical: String
    }

    static let limitOptions: [LimitOption] = [
        LimitOption(limit: .maxMovieBoxSize, name: "max-moov-size", argument: "SIZE", help: "largest moov loaded (default 256M; suffixes K, M, G)", typical: "a two-hour film's moov is about 8 MB"),
        LimitOption(limit: .maxOtherBoxSize, name: "max-box-size", argument: "SIZE", help: "largest other box loaded, e.g. sidx or moof (default 16M)", typical: "real index and fragment boxes are a few MB at most"),
        LimitOption(limit: .maxMetadataBytes, name: "max-metadata", argument: "SIZE", help: "all boxes besides moov and media data, together (default 256M)", typical: "the boxes besides moov and media rarely add up to more than a few MB"),
        LimitOption(limit: .maxDepth, name: "max-depth", argument: "N", help: "deepest box nesting (default 32)", typical: "real files nest fewer than 12 levels"),
        LimitOption(limit: .maxBoxCount, name: "max-boxes", argument: "N", help: "boxes parsed in all (default 2000000)", typical: "a two-hour film has a few thousand boxes"),
        LimitOption(limit: .maxSamplesPerQuery, name: "max-samples", argument: "N", help: "samples one listing or seek may walk (default 50000000)", typical: "a two-hour film has about 500,000 samples"),
        LimitOption(limit: .maxFragmentSamples, name: "max-fragment-samples", argument: "N", help: "fragment samples indexed (default 20000000)", typical: "a two-hour fragmented film has about 500,000 samples"),
    ]

    static let limits = CommandSpec.Group(title: "Limits against hostile files (raise them only for files you trust)",
                                          options: limitOptions.map { .value($0.name, $0.argument, $0.help) })

    static let readingExits: [ExitCode] = [.success, .usage, .invalidInput, .ioError, .limitExceeded]

    /// Every command, in the order the general help lists them. A new command is one file
    /// (an enum conforming to ``Command``) and one entry here.
    static var all: [any Command.Type] { [InfoCommand.self, BoxesCommand.self, SamplesCommand.self, SeekCommand.self, InspectCommand.self, FaststartCommand.self, CheckCommand.self, FetchCommand.self, CacheCommand.self, ServeCommand.self] }

    static func named(_ name: String) -> (any Command.Type)? { all.first { $0.spec.name == name } }
}

/// A subcommand: its spec (name, usage, options, help) and what it does.
protocol Command {
    static var spec: CommandSpec { get }
    /// Runs the command with its arguments (the command name removed); returns the exit code.
    static func run(_ arguments: [String], output: some TextOutput, errors: some TextOutput) async throws -> Int32
}

extension ArgumentScanner {
    /// Scans `arguments` accepting exactly the options of `command`.
    init(_ arguments: [String], for command: CommandSpec) throws {
        let options = command.allOptions
        try self.init(arguments, flags: Set(options.filter { $0.argument == nil }.map(\.name)), options: Set(options.filter { $0.argument != nil }.map(\.name)))
    }
}
