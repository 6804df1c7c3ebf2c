import Foundation
import MP4Core
import MP4IO

/// `mp4probe [info] FILE`.
enum InfoCommand: Command {
    static let spec = CommandSpec(
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
        options: CommandTable.output, groups: [CommandTable.source, CommandTable.limits], exitCodes: CommandTable.readingExits)

    static func run(_ arguments: [String], output: some TextOutput, errors: some TextOutput) async throws -> Int32 {
        let scanner = try ArgumentScanner(arguments, for: spec)
        let location = try scanner.singleFile()
        // The library's facts pass, as a caller of MP4File.open gets it: this command reads
        // nothing of its own (fragment tables from a local file, an index's duration, MP3
        // frame headers, chapter titles).
        let (file, source, _) = try await MP4Probe.openWithSource(location, scanner, loadsAllBoxes: false, facts: nil)
        if scanner.flag("json") {
            output.write(InfoReport.json(file).rendered(pretty: !scanner.flag("compact")) + "\n")
        } else {
            output.write(InfoReport.text(file))
        }
        await MP4Probe.reportStatistics(source, file, scanner, errors: errors)
        if !MP4Probe.isURL(location) { MP4Probe.mentionLeftovers(of: location, errors: errors) }
        return ExitCode.success.rawValue
    }
}
