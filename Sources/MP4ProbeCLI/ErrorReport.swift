import MP4Core

/// How every command shows a failure: one renderer, so that the same error reads the same way
/// from `info`, `seek`, `faststart` or `check`.
///
/// A person reads sentences: what is wrong (and about which file), where (box path and byte
/// offset, the path shortened when it is long), and what to do (the option that raises a
/// limit, the first bytes of a file that is not MP4). The error's ``MP4Error/Kind`` is for
/// scripts: it is in the JSON form and decides the exit code, and is not repeated in the text.
enum ErrorReport {
    /// The lines written to standard error, each starting with `mp4probe: ` or indented.
    /// `heading` replaces the words that say what kind of failure it is ("refused: ").
    static func text(_ error: MP4Error, heading: String? = nil) -> String {
        // The file first, once: some messages already start with it.
        var message = error.message, subject = ""
        if let name = error.subject {
            if message.hasPrefix(name + ": ") { message.removeFirst(name.count + 2) }
            if !message.contains(name) { subject = name + ": " }
        }
        var lines = ["mp4probe: " + subject + (heading ?? lead(error.kind)) + message]
        var place: [String] = []
        if let path = error.path { place.append("in " + shortened(path)) }
        // The start of a file that is not MP4, or of a failed request, says nothing more.
        if let offset = error.offset, error.path != nil || ![.notMP4, .io].contains(error.kind) { place.append("at byte \(offset)") }
        if !place.isEmpty { lines.append("  where: " + place.joined(separator: ", ")) }
        if let bytes = error.leadingBytes, !bytes.isEmpty {
            lines.append("  first bytes: " + FileSignature.dump(bytes))
        }
        if let limit = error.limit { lines.append("  " + hint(limit)) }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The JSON form (`{"error": {...}}`, written to standard output when `--json` was given;
    /// schema in docs/json-schema.md).
    static func json(_ error: MP4Error) -> JSONValue {
        var fields: [(String, JSONValue)] = [
            ("kind", .string(error.kind.rawValue)),
            ("message", .string(error.message)),
            ("file", error.subject.map { .string($0) } ?? .null),
            ("offset", error.offset.map { .uint($0) } ?? .null),
            ("path", error.path.map { .string($0.description) } ?? .null),
            ("exitCode", .int(Int64(ExitCode.for(error).rawValue))),
        ]
        if let limit = error.limit { fields.append(("limit", .string(limit.rawValue))) }
        switch error.cause {
        case .system(let code)?: fields.append(("errno", .int(Int64(code))))
        case .sourceChanged?: fields.append(("sourceChanged", .bool(true)))
        case .refused(let status)?: fields.append(("httpStatus", .int(Int64(status))))
        case nil: break
        }
        if let bytes = error.leadingBytes {
            fields.append(("firstBytes", .string(Hex.bytes(bytes))))
            if let what = FileSignature.identify(bytes) { fields.append(("looksLike", .string(what))) }
        }
        return .object([("error", .object(fields))])
    }

    /// The words before the message: what kind of failure this is, in a user's terms.
    static func lead(_ kind: MP4Error.Kind) -> String {
        switch kind {
        case .truncated: return "the file is cut short: "
        case .malformed: return "the file is damaged or not valid MP4: "
        case .unsupported: return "not supported: "
        case .limitExceeded: return "stopped at a safety limit: "
        case .internalError: return "internal error (a bug in mp4probe; please report it with the command line): "
        case .io, .notMP4, .invalidRequest: return ""
        }
    }

    /// A box path of at most seven components: the first two, the number left out, the last four.
    static func shortened(_ path: BoxPath) -> String {
        let parts = path.description.split(separator: "/")
        guard parts.count > 7 else { return path.description }
        return (parts.prefix(2) + ["…(\(parts.count - 6) more)…"] + parts.suffix(4)).joined(separator: "/")
    }

    /// How to go past `limit`: the option that raises it (``CommandTable/limitOptions``).
    static func hint(_ limit: ParseLimits.Name) -> String {
        guard let entry = CommandTable.limitOptions.first(where: { $0.limit == limit }) else {
            return "this bound protects against hostile files and cannot be changed"
        }
        return "to go further: --\(entry.name) \(entry.argument) raises the limit, if you trust the file (\(entry.typical))"
    }
}
