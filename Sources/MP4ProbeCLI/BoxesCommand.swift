import Foundation
import MP4Core
import MP4IO

/// `mp4probe boxes FILE`.
enum BoxesCommand: Command {
    static let spec = CommandSpec(
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
        ] + CommandTable.output, groups: [CommandTable.source, CommandTable.limits], exitCodes: CommandTable.readingExits)

    static func run(_ arguments: [String], output: some TextOutput, errors: some TextOutput) async throws -> Int32 {
        let scanner = try ArgumentScanner(arguments, for: spec)
        let location = try scanner.singleFile()
        let depth = try scanner.integer("depth")
        if depth == 0 { throw ArgumentScanner.UsageError(description: "--depth must be at least 1") }
        let options = BoxesReport.Options(maxDepth: depth, full: scanner.flag("full"), entryLimit: try scanner.integer("entries") ?? Int.max)
        let (file, source, _) = try await MP4Probe.openWithSource(location, scanner, loadsAllBoxes: true)
        if scanner.flag("json") {
            BoxesReport.writeJSON(file, options: options, pretty: !scanner.flag("compact"), to: output)
        } else {
            BoxesReport.writeText(file, options: options, to: output)
        }
        await MP4Probe.reportStatistics(source, file, scanner, errors: errors)
        return ExitCode.success.rawValue
    }
}
