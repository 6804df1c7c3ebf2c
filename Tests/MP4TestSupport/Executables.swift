import Foundation
import Testing

/// Finding and running the external tools the end-to-end tests use.
public enum Executables {
    /// The `mp4probe` executable under test, when it was built: `MP4PROBE_BINARY` when set;
    /// else beside the test bundle (Linux's layout: `swift test` builds it there; a filtered
    /// build may not); else the package's `.build/debug` or `.build/release` (macOS, where the
    /// runner is xctest or swiftpm-testing-helper, elsewhere). With
    /// `MP4PROBE_REQUIRE_EXECUTABLE` set (CI), ``requiredButMissing`` makes a test fail where
    /// the tests that need it would skip.
    public static let mp4probe: String? = {
        let environment = ProcessInfo.processInfo.environment
        if let given = environment["MP4PROBE_BINARY"], !given.isEmpty {
            return FileManager.default.isExecutableFile(atPath: given) ? given : nil
        }
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("mp4probe").path
        let candidates = [beside] + ["debug", "release"].map { Fixtures.packageRoot + "/.build/\($0)/mp4probe" }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// The run asks for the executable (`MP4PROBE_REQUIRE_EXECUTABLE`, set by `.ci/run` and the
    /// Apple workflow) and it was not found: the tests that need it would skip unseen.
    public static var requiredButMissing: Bool {
        ProcessInfo.processInfo.environment["MP4PROBE_REQUIRE_EXECUTABLE"] != nil && mp4probe == nil
    }

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

    /// Runs `tool` and returns its standard output (and standard error, when asked). Where no
    /// process can be started (iOS, tvOS: `Process` is unavailable), nothing runs: "".
    public static func run(_ tool: String, _ arguments: [String], stderrToStdout: Bool = false) -> String {
        #if os(macOS) || os(Linux)
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
        #else
        return ""
        #endif
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
