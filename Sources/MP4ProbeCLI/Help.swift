/// Help texts (kept in step with `docs/cli.md`).
enum Help {
    static let exitCodes = """
    Exit codes:
      0   success
      1   mp4probe check: a file failed a rule
      2   usage error (unknown command or option, bad argument)
      3   invalid input (not MP4/QuickTime, or broken beyond reading)
      4   I/O error (missing file, permission, read failure)
      5   resource limit reached (e.g. moov larger than --max-moov-size)
      6   faststart refused a file it cannot rewrite safely (nothing written)
      70  internal error

    """

    /// `mp4probe --help`: every command of ``CommandTable`` with its first usage line and
    /// summary, then what all commands share.
    static var general: String {
        var text = """
        mp4probe \(MP4Probe.version): layout, tracks and boxes of MP4 / QuickTime / fragmented MP4 files,
        read from box headers and moov only (the media data is never read).

        Usage:
          mp4probe FILE                 summary (same as 'mp4probe info FILE')

        """
        for command in CommandTable.all {
            let spec = command.spec
            text += "  " + (spec.usage.first ?? "mp4probe " + spec.name) + "\n"
            // Summaries wrap under their column: the page stays within 100 columns.
            let indent = String(repeating: " ", count: 32)
            text += wrapped(spec.summary, width: 100 - 32).split(separator: "\n").map { indent + $0.trimmingLeadingSpaces() }.joined(separator: "\n") + "\n"
        }
        text += """
          mp4probe help COMMAND         every option of one command
          mp4probe --version

        FILE may be an http:// or https:// URL for info, boxes, samples, seek, check and fetch;
        'mp4probe help COMMAND' lists the options for URLs (headers, credentials, timeouts, a cache)
        and the limits against hostile files that every reading command accepts.

        \(exitCodes)
        """
        return text
    }

    /// The help of one command, rendered from ``CommandTable``.
    static func text(for command: CommandSpec) -> String {
        var text = "Usage: " + command.usage.joined(separator: "\n       ") + "\n\n" + command.description + "\n"
        func label(_ option: CommandSpec.Option) -> String { "--" + option.name + (option.argument.map { " " + $0 } ?? "") }
        // One column for the whole page; a label longer than it gets its own line.
        let width = min(command.allOptions.map { label($0).count }.max() ?? 0, 24) + 2
        func section(_ title: String, _ options: [CommandSpec.Option]) {
            guard !options.isEmpty else { return }
            text += "\n\(title):\n"
            let labels = options.map(label)
            for (label, option) in zip(labels, options) {
                let lines = option.help.split(separator: "\n", omittingEmptySubsequences: false)
                let pad = label.count < width ? String(repeating: " ", count: width - label.count) : "\n" + String(repeating: " ", count: width + 2)
                text += "  " + label + pad + lines[0] + "\n"
                for line in lines.dropFirst() { text += String(repeating: " ", count: width + 2) + line + "\n" }
            }
        }
        section("Options", command.options + [.flag("help", "this help")])
        for group in command.groups { section(group.title, group.options) }
        text += "\n" + wrapped("Exit codes: " + command.exitCodes.map { "\($0.rawValue) \($0.summary)" }.joined(separator: ", "), width: 90) + "\n"
        return text
    }

    /// `text` broken at spaces into lines of at most `width` columns, continuation lines
    /// indented by two.
    static func wrapped(_ text: String, width: Int) -> String {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty && line.count + 1 + word.count > width {
                lines.append(line)
                line = " "   // with the separator below: an indent of two
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        if !line.isEmpty { lines.append(line) }
        return lines.joined(separator: "\n")
    }
}

extension Substring {
    func trimmingLeadingSpaces() -> Substring { drop { $0 == " " } }
}
