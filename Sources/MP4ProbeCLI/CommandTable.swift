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
        .value("max-time", "S", "give up when one request takes longer than S seconds in all\n(default: no limit)"),
        .value("cache", "DIR", "read through the on-disk cache in DIR (docs/cache.md)"),
        .flag("stats", "print the reads, HTTP requests and bytes the command cost"),
    ])

    static let limits = CommandSpec.Group(title: "Limits against hostile files (raise them only for files you trust)", options: [
        .value("max-moov-size", "SIZE", "largest moov loaded (default 256M; suffixes K, M, G)"),
        .value("max-box-size", "SIZE", "largest other box loaded, e.g. sidx or moof (default 16M)"),
        .value("max-metadata", "SIZE", "all boxes besides moov and media data, together (default 256M)"),
        .value("max-depth", "N", "deepest box nesting (default 32)"),
        .value("max-boxes", "N", "boxes parsed in all (default 2000000)"),
        .value("max-samples", "N", "samples one listing or seek may walk (default 50000000)"),
        .value("max-fragment-samples", "N", "fragment samples indexed (default 20000000)"),
    ])

    static let readingExits: [ExitCode] = [.success, .usage, .invalidInput, .ioError, .limitExceeded]

    static let info = CommandSpec(
        name: "info",
        summary: "summarise a file: brands, duration, tracks and codecs, faststart verdict, findings (default)",
        usage: ["mp4probe [info] FILE [--json [--compact]]"],
        description: """
        Summarises FILE: brands, duration and bit rate, the file kind (progressive, fragmented,
        init or media segment, header only), the faststart verdict (is moov before the first mdat,
        and how many bytes a progressive player needs before it can start), one line per track
        (id, kind, codec and RFC 6381 codec string, resolution or sample rate and channels,
        timescale, duration, samples, language, bit rate, edit list) and findings.
        """,
        options: output, groups: [source, limits], exitCodes: readingExits)

    static let boxes = CommandSpec(
        name: "boxes",
        summary: "print the box tree with offsets, sizes, version/flags and key fields",
        usage: ["mp4probe boxes FILE [--json [--compact]] [--full [--entries N]] [--depth N]"],
        description: """
        Prints the box tree: every top-level box with offset and size, and the tree of every box
        that is not media data or padding, with version/flags and the key fields of known boxes.
        Tables (stts, stsc, stsz, stco, ...) are summarised by their entry counts; with --full
        their entries are printed, streamed (memory does not grow with the table).
        """,
        options: [
            .flag("full", "print the entries of tables, edit lists, sidx and tfra"),
            .value("entries", "N", "with --full: at most N entries per table"),
            .value("depth", "N", "print N levels (1 = top level only)"),
        ] + output, groups: [source, limits], exitCodes: readingExits)

    static let samples = CommandSpec(
        name: "samples",
        summary: "list every sample: dts, pts, duration, offset, size, sync, chunk",
        usage: ["mp4probe samples FILE [--track N] [--range FIRST-LAST] [--limit N] [--json [--compact]]"],
        description: """
        Lists every sample of every track (or of track N) in decode order, from the sample tables:
        index, dts and pts in media time-scale units (before the edit list), duration, byte offset,
        size, sync flag (K), chunk index, and the presentation time in seconds after the edit list.
        These are the facts of `ffprobe -show_packets`; ffprobe's timestamps equal ours plus the
        track's `ffprobeShift` (the first edit's delay minus its media_time). Fragmented files are
        listed from their moof/trun boxes. Output is streamed; a listing of more than
        --max-samples samples (default 50,000,000) without --range or --limit is refused (exit 5).
        """,
        options: [
            .value("track", "N", "only track N (a track id, as info shows)"),
            .value("range", "FIRST-LAST", "sample indexes, inclusive (100- runs to the end)"),
            .value("limit", "N", "at most N samples per track"),
        ] + output, groups: [source, limits], exitCodes: readingExits)

    static let seek = CommandSpec(
        name: "seek",
        summary: "map a time (and duration) to the keyframe and the byte ranges a player needs",
        usage: ["mp4probe seek FILE TIME [--duration D] [--align previous|next|exact] [--json [--compact]]"],
        description: """
        Maps TIME (seconds, or hh:mm:ss.mmm) to what a player needs to show FILE from TIME to
        TIME+D: the sync sample to decode from (on the video track, else the main audio track) and
        its presentation time; per track the first and last sample needed; where reading must start
        and end; and the byte ranges (inclusive, as in an HTTP Range header) holding exactly those
        samples. Edit lists and composition offsets are applied. A window that runs past the end
        of the movie is clamped to it. In a fragmented file with sidx or mfra only the fragments
        around TIME are read (see docs/seeking.md).
        """,
        options: [
            .value("duration", "D", "window length (default 0: just the frame at TIME)"),
            .value("align", "MODE", "previous (default): last sync sample at or before TIME; next: first at\nor after; exact: the sample shown at TIME, no sync alignment"),
        ] + output, groups: [source, limits], exitCodes: readingExits)

    static let faststart = CommandSpec(
        name: "faststart",
        summary: "move moov in front of the media, safely (temp file, fsync, rename)",
        usage: ["mp4probe faststart IN OUT [options]", "mp4probe faststart --in-place FILE [options]", "mp4probe faststart --dry-run IN [--json]"],
        description: """
        Moves moov in front of the media so that progressive players can start before the whole
        file has arrived. Every chunk offset is relocated (stco is promoted to co64 when an offset
        passes 4 GiB; saio and iloc offsets are relocated too); every other box is copied byte for
        byte, with the kernel's copy primitive. The output is written to a temporary file beside
        OUT, flushed to disk and renamed into place: on any error or interruption nothing appears
        at OUT and IN is unchanged. A symbolic link is followed: the file it points to is
        rewritten and the link kept. A file with several hard links is refused with --in-place
        (the rewrite would split them). A file that is already faststart, or fragmented, is copied
        unchanged to OUT (left alone with --in-place). Files that cannot be rewritten safely
        (cmov, offsets outside every box, a truncated input, a top-level meta) are refused with
        exit code 6. IN and OUT are files: '-' (standard input or output) is refused.
        """,
        options: [
            .flag("in-place", "rewrite FILE itself (same temp-and-rename safety, permissions kept)"),
            .flag("dry-run", "print the plan (new layout, offsets relocated, co64 promotion, size)\nwithout writing anything"),
            .flag("verify", "before replacing anything, re-read the output: it must be faststart\nand every sample's bytes must equal the input's"),
            .flag("drop-free", "drop top-level free/skip padding"),
            .flag("quiet", "no progress line (progress is shown only on a terminal anyway)"),
        ] + output, groups: [limits], exitCodes: [.success, .usage, .invalidInput, .ioError, .limitExceeded, .rewriteRefused, .internalError])

    static let check = CommandSpec(
        name: "check",
        summary: "CI gate: check files or directories against a policy (faststart, integrity, keyframes...)",
        usage: ["mp4probe check [OPTIONS] PATH|DIR|URL|- ..."],
        description: """
        Checks every file given (directories recursively; - reads paths or URLs from standard
        input, one per line), reading only box headers and moov, against a policy. Exit 0 when
        every file passes, 1 when any fails a rule, 2 for usage errors (no file to check
        included), 4 when a file cannot be read.
        """,
        options: [
            .value("policy", "FILE", "JSON policy (keys: requireFaststart, maxStartupBytes,\nmaxKeyframeInterval, maxInterleave, allowCodecs, allowBrands, allowFragmented,\nmaxDuration, minResolution, maxResolution); unknown keys are errors; flags override it"),
            .flag("allow-moov-at-end", "do not require faststart"),
            .value("max-startup-bytes", "SIZE", "bytes a progressive player may need before playback"),
            .value("max-keyframe-interval", "S", "longest gap between keyframes, seconds"),
            .value("max-interleave", "S", "how far one track may run ahead of another in file order"),
            .value("allow-codecs", "LIST", "e.g. avc1,hvc1,mp4a (formats or codec-string prefixes)"),
            .value("allow-brands", "LIST", "allowed major brands"),
            .flag("no-fragmented", "fail fragmented files"),
            .value("max-duration", "S", "longest duration, seconds"),
            .value("min-resolution", "WxH", "smallest video resolution"),
            .value("max-resolution", "WxH", "largest video resolution"),
            .value("include", "GLOB", "files to check in directories (repeatable; default: .mp4 .m4v .m4a\n.mov .3gp .3g2 .m4s .cmfv .cmfa .mp4v)"),
            .value("exclude", "GLOB", "files to skip in directories (repeatable)"),
            .value("from-file", "LIST", "also check the paths or URLs listed in LIST, one per line (- reads\nstandard input; blank lines and # comments skipped)"),
            .value("shard", "I/N", "check only shard I of N (1 <= I <= N), chosen by a hash of each name:\nN jobs with I = 1...N check every file exactly once"),
            .value("format", "FORMAT", "text (default), json, jsonl, junit or github"),
            .value("jobs", "N", "files checked at once (default: the number of cores)"),
            .flag("fix", "rewrite files that fail only because of their layout to faststart,\nin place (atomic), then check them again"),
            .flag("quiet", "no progress line (shown only on a terminal)"),
        ], groups: [source, limits], exitCodes: [.success, .checkFailed, .usage, .ioError])

    static let fetch = CommandSpec(
        name: "fetch",
        summary: "fill an on-disk cache with moov and the ranges a seek needs (or everything)",
        usage: ["mp4probe fetch URL|FILE --cache DIR [--time T [--duration D] | --all] [--block SIZE]"],
        description: """
        Fills the cache in DIR for URL: the box headers and moov, plus with --time exactly the byte
        ranges a player needs to show T..T+D (the seek plan), or with --all the whole resource (one
        streamed request per missing part, written to the cache as it arrives; memory stays
        bounded whatever the size). Every --block bytes (default 64M) what arrived is committed
        (data fsync, then the range table), so an interrupted fetch keeps it. Reads already cached
        are not fetched again; an entry whose upstream changed (length, ETag, Last-Modified) is
        emptied first. See docs/cache.md.
        """,
        options: [
            .value("time", "T", "cache what a player needs to start at T"),
            .value("duration", "D", "with --time: and to play D seconds"),
            .flag("all", "cache the whole resource"),
            .value("block", "SIZE", "commit every SIZE bytes (default 64M)"),
            .flag("json", "accepted for symmetry; the summary is text"),
        ], groups: [source, limits], exitCodes: readingExits)

    static let cache = CommandSpec(
        name: "cache",
        summary: "list, measure, evict or export the entries of a cache directory",
        usage: ["mp4probe cache ls DIR [--json]", "mp4probe cache stat DIR", "mp4probe cache evict DIR --max-size SIZE", "mp4probe cache export DIR RESOURCE OUT"],
        description: """
        ls lists the entries (most recently used first) with how much of each is present; stat
        sums them; evict removes least-recently-used entries (data, table and lock files) until
        the data files occupy at most SIZE on disk; export copies a complete entry to OUT as a
        normal file (atomically).
        """,
        options: [
            .flag("json", "with ls: machine-readable list"),
            .value("max-size", "SIZE", "with evict: the size to shrink to"),
        ], exitCodes: [.success, .usage, .ioError])

    /// Every command, in the order the general help lists them.
    static let all: [CommandSpec] = [info, boxes, samples, seek, faststart, check, fetch, cache]

    static func named(_ name: String) -> CommandSpec? { all.first { $0.name == name } }
}

extension ArgumentScanner {
    /// Scans `arguments` accepting exactly the options of `command`.
    init(_ arguments: [String], for command: CommandSpec) throws {
        let options = command.allOptions
        try self.init(arguments, flags: Set(options.filter { $0.argument == nil }.map(\.name)), options: Set(options.filter { $0.argument != nil }.map(\.name)))
    }
}
