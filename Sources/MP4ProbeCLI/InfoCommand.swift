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
        var (file, source, limits) = try await MP4Probe.openWithSource(location, scanner, loadsAllBoxes: false)
        // A fragmented file's durations and sample counts are in its moofs: read their
        // headers when the file is local (over HTTP each moof would cost a request).
        if file.isFragmented, (file.movie?.durationSeconds ?? 0) == 0 || (file.movie?.tracks.contains { $0.sampleCount == 0 } ?? false),
           !MP4Probe.isURL(location),
           let planner = try? await SeekPlanner.index(file, from: source, limits: limits) {
            file = file.completingFragments(with: planner)
        }
        // Facts the header boxes leave open: an index's duration, an MP3 track's channels.
        file = try await file.completingDuration(from: source, limits: limits)
        file = try await file.probingFirstFrames(from: source, limits: limits)
        file = try await file.readingChapterTitles(from: source, limits: limits)
        if scanner.flag("json") {
            output.write(InfoReport.json(file).rendered(pretty: !scanner.flag("compact")) + "\n")
        } else {
            output.write(InfoReport.text(file))
        }
        await MP4Probe.reportStatistics(source, file, scanner, errors: errors)
        return ExitCode.success.rawValue
    }
}
