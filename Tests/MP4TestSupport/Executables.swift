import Foundation
import Testing

/// Finding and running the external tools the end-to-end tests use.
public enum Executables {
    /// The `mp4probe` executable built beside the test bundle, when it was built (`swift test`
    /// builds it; a filtered build may not).
    public static let mp4probe: String? = {
        let path = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("mp4probe").path
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }()

    /// The path of executable `name` on `PATH` (or /usr/bin, /usr/local/bin), or `nil`.
    public static func find(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") + ["/usr/bin", "/usr/local/bin"] {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// ``run(_:_:stderrToStdout:)`` on a thread of its own, for async tests: waiting for a
    /// process on a cooperative-pool thread (two on a 2-core machine) stalls every other test's
    /// tasks, servers included.
    public static func runOffPool(_ tool: String, _ arguments: [String], stderrToStdout: Bool = false) async -> String {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: run(tool, arguments, stderrToStdout: stderrToStdout)) }.start()
        }
    }

    /// Runs blocking `body` (process waits, socket loops, sleeps) on a thread of its own, for
    /// async tests, for the same reason as ``runOffPool(_:_:stderrToStdout:)``.
    public static func offPool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: body()) }.start()
        }
    }

    /// Runs `tool` and returns its standard output (and standard error, when asked).
    public static func run(_ tool: String, _ arguments: [String], stderrToStdout: Bool = false) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = stderrToStdout ? pipe : FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch { return "" }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}

extension Executables {
    /// Whether this run is the AddressSanitizer one of `.ci/run` (`MP4PROBE_UNDER_ASAN=1`):
    /// tests whose time goes to an external browser, not to our code, run in the plain run
    /// only (CI's time limit).
    public static let underSanitizer = ProcessInfo.processInfo.environment["MP4PROBE_UNDER_ASAN"] != nil

    /// Chromium under any of its usual names, or `nil`.
    public static let chromium: String? = find("chromium") ?? find("chromium-browser") ?? find("google-chrome")

    /// Whether `program` can be used: `nginx` means the nginx serving SampleMedia started,
    /// `chromium` any of its names, anything else an executable on `PATH`.
    public static func available(_ program: String) -> Bool {
        switch program {
        case "nginx": return NginxServer.sampleMedia != nil
        case "chromium": return chromium != nil
        default: return find(program) != nil
        }
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test only when every program named is available (``Executables/available(_:)``);
    /// otherwise Swift Testing reports it as skipped, with the programs and how to install
    /// them (`.ci/run` does).
    public static func requires(_ programs: String...) -> Self {
        let packages = programs.map { $0 == "ffprobe" ? "ffmpeg" : $0 }
        return .enabled(Comment(rawValue: "needs \(programs.joined(separator: ", ")): skipped without (apt-get install -y \(packages.joined(separator: " ")))")) {
            programs.allSatisfy(Executables.available)
        }
    }
}
