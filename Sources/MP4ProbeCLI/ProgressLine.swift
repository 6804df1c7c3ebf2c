import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import MP4Report

/// A progress line on a terminal's stderr for long work (`fetch --all`), as curl and wget
/// draw one: bytes done of the total, rate, time left, redrawn in place every half second and
/// ended with a newline. Never drawn when stderr is not a terminal (a pipe, a log file).
/// (`@unchecked Sendable`: its one stored value, the drawing task, is set once at creation.)
final class ProgressLine: @unchecked Sendable {
    /// Whether stderr is a terminal.
    static var onTerminal: Bool { isatty(STDERR_FILENO) != 0 }

    private let task: Task<Void, Never>

    private init(task: Task<Void, Never>) { self.task = task }

    /// Starts drawing: `done` bytes were there before, `fetched` says how many came since.
    static func start(total: UInt64, done: UInt64, fetched: @escaping @Sendable () async -> UInt64) -> ProgressLine {
        let clock = ContinuousClock(), started = clock.now
        let task = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(500))
                if Task.isCancelled { break }
                let now = await fetched()
                Self.draw(line(total: total, done: done, fetched: now, seconds: Self.seconds(clock.now - started)))
            }
        }
        return ProgressLine(task: task)
    }

    /// Stops drawing and ends the line (the summary follows on stdout).
    func finish() async {
        task.cancel()
        await task.value
        Self.draw("\n")
    }

    /// "12.0 MiB of 124.2 MiB (9 %), 512 KB/s, 3:44 left".
    static func line(total: UInt64, done: UInt64, fetched: UInt64, seconds: Double) -> String {
        let have = min(total, done + fetched)
        let percent = total == 0 ? 100 : Int(Double(have) * 100 / Double(total))
        var text = "\(Format.bytes(have)) of \(Format.bytes(total)) (\(percent) %)"
        if seconds > 0.2 {
            let rate = Double(fetched) / seconds
            text += ", \(Format.bytes(UInt64(rate)))/s"
            if rate > 0, have < total {
                text += ", " + leftText(Int(Double(total - have) / rate)) + " left"
            }
        }
        return "\r" + text + "\u{1B}[K"
    }

    /// "checked 120 of 1,000 files (12 %), 450 files/s, 0:02 left": work counted in items.
    static func countLine(_ verb: String, done: Int, total: Int, noun: String, seconds: Double) -> String {
        let percent = total == 0 ? 100 : done * 100 / total
        var text = "\(verb) \(Format.grouped(UInt64(done))) of \(Format.count(total, noun)) (\(percent) %)"
        if seconds > 0.2, done > 0 {
            let rate = Double(done) / seconds
            text += ", \(Format.fixed(rate, rate < 10 ? 1 : 0)) \(noun)s/s"
            if done < total { text += ", " + leftText(Int(Double(total - done) / rate)) + " left" }
        }
        return "\r" + text + "\u{1B}[K"
    }

    /// "m:ss", or "h:mm:ss" from an hour.
    static func leftText(_ left: Int) -> String {
        left >= 3600 ? "\(left / 3600):" + String(format: "%02d:%02d", left / 60 % 60, left % 60) : String(format: "%d:%02d", left / 60, left % 60)
    }

    private static func draw(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// `duration` in seconds.
    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
