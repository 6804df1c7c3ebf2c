/// A non-fatal observation about a file: an oddity, a tolerated defect, or a hint.
///
/// Findings never stop parsing. Each has a stable ``id`` (kebab-case, part of the JSON schema)
/// so that tools can match on it, a ``severity``, and a message that says what is wrong and,
/// where there is one, what to do about it.
public struct Finding: Sendable, Hashable, Codable, CustomStringConvertible {
    /// How much a finding matters.
    public enum Severity: String, Sendable, Hashable, Codable, Comparable {
        /// Worth knowing; nothing is wrong.
        case info
        /// Tolerated, but players or tools may misbehave.
        case warning
        /// Part of the file is broken or unreadable.
        case error

        private var rank: Int {
            switch self {
            case .info: return 0
            case .warning: return 1
            case .error: return 2
            }
        }

        public static func < (lhs: Severity, rhs: Severity) -> Bool { lhs.rank < rhs.rank }
    }

    /// A stable identifier such as `box-truncated` or `trailing-bytes`.
    public var id: String
    /// How much it matters.
    public var severity: Severity
    /// What was found, in a sentence.
    public var message: String
    /// Absolute file offset, when the finding is about a place in the file.
    public var offset: UInt64?
    /// Box path, when the finding is about a box.
    public var path: String?

    /// Creates a finding.
    public init(id: String, severity: Severity, message: String, offset: UInt64? = nil, path: BoxPath? = nil) {
        self.id = id
        self.severity = severity
        self.message = message
        self.offset = offset
        self.path = path?.description
    }

    public var description: String {
        var location = ""
        if let path { location += " [\(path)]" }
        if let offset { location += " @\(offset)" }
        return "\(severity.rawValue) \(id)\(location): \(message)"
    }
}
