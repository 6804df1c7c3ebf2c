import Foundation
import MP4Core
import MP4IO
import MP4Report

/// `mp4probe inspect FILE|URL [-o OUT.html]`.
enum InspectCommand: Command {
    static let spec = CommandSpec(
        name: "inspect",
        summary: "write an HTML page that shows the file: byte map, box tree, tracks, interleaving, seek plans",
        usage: ["mp4probe inspect FILE|URL [-o OUT.html]"],
        description: """
        Writes one self-contained HTML page (docs/inspect.md) that shows FILE: the faststart
        verdict, a byte map of its top-level boxes with the bytes a progressive player needs
        before playback, the tracks, tags and chapters, each track's chunks along the file (the
        interleaving), a seek explorer (a time, its keyframe and the byte ranges its plan reads,
        drawn on the map) and the box tree. The page loads nothing from the network and works
        from a file:// URL offline. Without -o it is written to a temporary file; the path is
        printed. `serve` answers the same page live at {BASE}_/inspect?url=ORIGIN.
        """,
        options: [.value("output", "OUT.html", "write the page here (-o; default: a temporary file)")],
        groups: [CommandTable.source, CommandTable.limits], exitCodes: CommandTable.readingExits)

    static func run(_ arguments: [String], output: some TextOutput, errors: some TextOutput) async throws -> Int32 {
        let scanner = try ArgumentScanner(arguments, for: spec)
        let location = try scanner.singleFile()
        // A local file's tree is read whole, as `boxes` shows it; over HTTP each fragment's
        // header would cost a request.
        let (file, source, limits) = try await MP4Probe.openWithSource(location, scanner, loadsAllBoxes: !MP4Probe.isURL(location), facts: nil)
        let data = await InspectorData.gather(file, from: source, limits: limits)
        let page = InspectorPage.html(data)
        let path = scanner.value("output") ?? temporaryPath(for: file.name)
        try TemporaryFiles.writeAtomically(Array(page.utf8), to: path)
        output.write("\(path)\n")
        errors.write("wrote the inspector page of \(file.name): \(Format.bytes(UInt64(page.utf8.count))); open it in a browser\n")
        await MP4Probe.reportStatistics(source, file, scanner, errors: errors)
        return ExitCode.success.rawValue
    }

    /// `$TMPDIR/mp4probe-inspect-NAME-RANDOM.html`.
    static func temporaryPath(for name: String) -> String {
        let base = (name as NSString).lastPathComponent
        let safe = String(base.map { $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_" ? $0 : "_" }.prefix(60))
        let directory = NSTemporaryDirectory()
        return (directory as NSString).appendingPathComponent("mp4probe-inspect-\(safe)-\(UInt32.random(in: 0...UInt32.max)).html")
    }
}
