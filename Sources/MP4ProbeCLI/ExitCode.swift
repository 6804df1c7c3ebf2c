import MP4Core

/// The process exit codes, defined in exactly one place (documented in `docs/cli.md`).
public enum ExitCode: Int32, Sendable, CaseIterable {
    /// Success.
    case success = 0
    /// `mp4probe check`: at least one file failed a rule.
    case checkFailed = 1
    /// Bad command line: unknown command or option, missing or malformed argument.
    case usage = 2
    /// The input is not a readable MP4/QuickTime file (not MP4, malformed beyond recovery,
    /// unsupported).
    case invalidInput = 3
    /// The input could not be read (missing file, permission, network).
    case ioError = 4
    /// A resource limit was reached (`moov` too large, nesting too deep).
    case limitExceeded = 5
    /// `faststart` refused a file it cannot rewrite safely (`cmov`, offsets outside every box,
    /// a truncated input...); nothing was written.
    case rewriteRefused = 6
    /// A bug: an unexpected internal error.
    case internalError = 70

    /// A few words for help texts.
    public var summary: String {
        switch self {
        case .success: return "success"
        case .checkFailed: return "a file failed a rule"
        case .usage: return "usage error"
        case .invalidInput: return "not MP4 or broken"
        case .ioError: return "cannot read"
        case .limitExceeded: return "limit reached"
        case .rewriteRefused: return "rewrite refused"
        case .internalError: return "internal error"
        }
    }

    /// The exit code for a library error.
    public static func `for`(_ error: MP4Error) -> ExitCode {
        switch error.kind {
        case .io: return .ioError
        case .limitExceeded: return .limitExceeded
        case .truncated, .malformed, .unsupported, .notMP4: return .invalidInput
        case .invalidRequest: return .usage
        case .internalError: return .internalError
        }
    }
}
