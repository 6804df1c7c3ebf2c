import Foundation
import MP4IO

/// Where a command writes text. Commands take their outputs as parameters so that tests can
/// run them in-process and read what they wrote.
public protocol TextOutput: Sendable {
    /// Writes `text` as is (no newline added).
    func write(_ text: String)
}

/// The process's standard output or standard error.
public struct StandardStream: TextOutput {
    private let isError: Bool

    /// Standard output.
    public static let output = StandardStream(isError: false)
    /// Standard error.
    public static let error = StandardStream(isError: true)

    public func write(_ text: String) {
        Platform.writeAll(isError ? 2 : 1, text)
    }
}

/// Collects text in memory (for tests).
public final class CapturedOutput: TextOutput, Sendable {
    private let buffer = Locked("")

    /// An empty capture.
    public init() {}

    public func write(_ text: String) { buffer.withLock { $0 += text } }

    /// Everything written so far.
    public var text: String { buffer.withLock { $0 } }
}
