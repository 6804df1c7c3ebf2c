import Foundation
import Testing
@testable import MP4IO
import MP4TestSupport

/// `serve --access-log` (issue 46 item 2): one line a request, the secret and the origin's
/// query never written, a client's bytes unable to forge a line.
@Suite struct AccessLogTests {
    static let secret = "abc123secret"

    static func exchange(target: String?, range: String? = nil, status: Int = 206, failure: String? = nil, split: (UInt64, UInt64)? = nil) -> HTTPServer.Exchange {
        HTTPServer.Exchange(start: Date(timeIntervalSince1970: 1_795_700_000), method: target == nil ? nil : "GET", target: target, range: range,
                            status: status, bytesSent: 1024, seconds: 0.25, failure: failure, fromCache: split?.0, fromOrigin: split?.1)
    }

    @Test func aLineSaysWhatWasAskedAndAnsweredWithoutTheSecretOrTheOriginsQuery() {
        let target = "/\(Self.secret)/v.mp4?url=https%3A%2F%2Fcdn.example.com%3A8443%2Fpath%2Fv.mp4%3Ftoken%3DSIGNED&faststart=1"
        let line = AccessLog.line(Self.exchange(target: target, range: "bytes=0-1023"), secret: Self.secret)
        #expect(line == "127.0.0.1 - - [26/Nov/2026:13:33:20 +0000] \"GET /…/v.mp4 HTTP/1.1\" 206 1024 \"bytes=0-1023\" 0.250 origin=https://cdn.example.com:8443")
        #expect(!line.contains(Self.secret) && !line.contains("SIGNED") && !line.contains("path"))
        let split = AccessLog.line(Self.exchange(target: target, range: "bytes=0-1023", split: (24, 1000)), secret: Self.secret)
        #expect(split.hasSuffix(" origin=https://cdn.example.com:8443 cache=24 fetched=1000"), "\(split)")
    }

    /// `serve --stats`: exchanges summed by status class and by where their bytes came from.
    @Test func theStatisticsSumEveryExchange() {
        let statistics = ServeStatistics()
        statistics.add(Self.exchange(target: "/a", split: (1000, 24)))
        statistics.add(Self.exchange(target: "/a", failure: "the client went away after 10 of 2000 bytes", split: (0, 10)))
        statistics.add(Self.exchange(target: "/a", status: 400, failure: "missing ?url=ORIGIN"))
        let totals = statistics.current
        #expect(totals.requests == 3 && totals.byClass[2] == 2 && totals.byClass[4] == 1 && totals.clientsLeft == 1)
        #expect(totals.fromCache == 1000 && totals.fromOrigin == 34 && totals.bytesSent == 3072)
    }

    @Test func refusalsCarryTheirReasonAndUnreadableHeadsADash() {
        let refused = AccessLog.line(Self.exchange(target: "/\(Self.secret)/", status: 400, failure: "missing ?url=ORIGIN"), secret: Self.secret)
        #expect(refused.hasSuffix("\"GET /…/ HTTP/1.1\" 400 1024 \"-\" 0.250 \"missing ?url=ORIGIN\""), "\(refused)")
        let malformed = AccessLog.line(Self.exchange(target: nil, status: 431), secret: Self.secret)
        #expect(malformed.contains("\"-\" 431 1024 \"-\""), "\(malformed)")
    }

    /// The computed time and seconds fields equal what Foundation's formatters print, across
    /// leap years, month ends, centuries and the epoch's either side.
    @Test func timesAreWhatADateFormatterSays() {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "dd/MMM/yyyy:HH:mm:ss Z"
        var generator = SystemRandomNumberGenerator()
        var instants: [Double] = [0, -1, 951_782_400, 951_868_799.999, 4_107_542_399, 1_795_700_000.5, -2_208_988_800]
        for _ in 0..<2000 { instants.append(Double(Int64.random(in: -4_000_000_000...8_000_000_000, using: &generator))) }
        for instant in instants {
            let date = Date(timeIntervalSince1970: instant)
            #expect(AccessLog.timestamp(date) == formatter.string(from: date), "\(instant)")
        }
        for value in [0, 0.0004, 0.0005, 0.25, 1.9996, 12.3456, 3600] {
            #expect(AccessLog.seconds(value) == String(format: "%.3f", value), "\(value)")
        }
    }

    /// Quotes, backslashes, line breaks and other bytes a client sends are escaped: one
    /// request, one line, its fields where they belong.
    @Test func aClientCannotForgeALine() {
        let line = AccessLog.line(Self.exchange(target: "/x\"y\\z\r\n127.0.0.1 fake\u{7}", range: "bytes=0-\"\n"), secret: Self.secret)
        #expect(!line.contains("\n") && !line.contains("\r") && !line.contains("\u{7}"))
        #expect(line.contains("/x\\\"y\\\\z\\x0D\\x0A127.0.0.1 fake\\x07") && line.contains("\"bytes=0-\\\"\\x0A\""), "\(line)")
    }
}

/// `fetch --all` draws a progress line on a terminal's stderr and never in a pipe (issue 46
/// item 1): a 1 MB film from an origin paced at 512 KB/s, run under `script` (a
/// pseudo-terminal) and with stderr a pipe.
@Suite struct FetchProgressTests {
    @Test(.requires("script"), .enabled(if: Executables.mp4probe != nil, "the mp4probe executable is not built beside the tests"))
    func aTerminalSeesProgressAndAPipeDoesNot() async throws {
        let executable = try #require(Executables.mp4probe), script = try #require(Executables.find("script"))
        var random = SeededRandom(seed: 46)
        let origin = try #require(LoopbackHTTPServer(body: random.bytes(1 << 20), behavior: .trickles(bytes: 16_000, interval: 1.0 / 32)))
        defer { origin.stop() }
        let onTerminal = FileSystem.temporaryDirectory("mp4probe-progress-tty"), inPipe = FileSystem.temporaryDirectory("mp4probe-progress-pipe")
        defer { FileSystem.removeDirectory(onTerminal); FileSystem.removeDirectory(inPipe) }
        let command = "\(executable) fetch --all --cache \(onTerminal) \(origin.url.absoluteString)"
        let terminal = await Executables.runOffPool(script, ["-qec", command, "/dev/null"])
        let lines = terminal.split(separator: "\r").filter { $0.contains(" of 1.0 MiB (") }
        #expect(lines.count >= 2, "\(terminal.debugDescription)")
        #expect(lines.contains { $0.contains("/s") && $0.contains("left") }, "\(lines)")
        #expect(terminal.contains("cached all 1,048,576 bytes"))
        let url = origin.url.absoluteString
        let piped = await Executables.offPool { Executables.run(executable, ["fetch", "--all", "--cache", inPipe, url], stderrToStdout: true) }
        #expect(piped.contains("cached all 1,048,576 bytes") && !piped.contains("\r") && !piped.contains("left"), "\(piped.debugDescription)")
    }

    /// `faststart` of a URL (its bytes arrive at 64 KB/s) draws the same line on a terminal,
    /// every half second (it drew one per 64 MiB written: none for a film this size), and
    /// none in a pipe.
    @Test(.requires("script"), .enabled(if: Executables.mp4probe != nil, "the mp4probe executable is not built beside the tests"))
    func faststartOfAURLShowsProgressOnATerminal() async throws {
        let executable = try #require(Executables.mp4probe), script = try #require(Executables.find("script"))
        let film = try #require(FileSystem.read(Fixtures.sampleMedia + "/quicktime.mov"))   // 257 KB, moov at the end
        let origin = try #require(LoopbackHTTPServer(body: film, behavior: .trickles(bytes: 8_000, interval: 1.0 / 8)))
        defer { origin.stop() }
        let directory = FileSystem.temporaryDirectory("mp4probe-faststart-progress")
        defer { FileSystem.removeDirectory(directory) }
        let terminal = await Executables.runOffPool(script, ["-qec", "\(executable) faststart \(origin.url.absoluteString) \(directory)/tty.mov", "/dev/null"])
        let lines = terminal.split(separator: "\r").filter { $0.contains(" of ") && $0.contains("%)") }
        #expect(lines.count >= 2 && lines.contains { $0.contains("/s") }, Comment(rawValue: terminal.debugDescription))
        let url = origin.url.absoluteString
        let piped = await Executables.offPool { Executables.run(executable, ["faststart", url, directory + "/pipe.mov"], stderrToStdout: true) }
        #expect(!piped.contains("\r") && !piped.contains("%)"), "\(piped.debugDescription)")
    }

    /// `check` of many files draws "checked N of M files (P %), R files/s, m:ss left" on a
    /// terminal, and nothing in a pipe.
    @Test(.requires("script"), .enabled(if: Executables.mp4probe != nil, "the mp4probe executable is not built beside the tests"))
    func checkOfManyFilesShowsProgressOnATerminal() async throws {
        let executable = try #require(Executables.mp4probe), script = try #require(Executables.find("script"))
        let file = Fixtures.sampleMedia + "/faststart.mp4"
        let files = Array(repeating: file, count: 400).joined(separator: " ")
        let terminal = await Executables.runOffPool(script, ["-qec", "\(executable) check --jobs 1 \(files)", "/dev/null"])
        #expect(terminal.contains("checked 1 of 400 files (0 %)"), "\(terminal.prefix(400).debugDescription)")
        let piped = await Executables.offPool { Executables.run(executable, ["check", "--jobs", "1"] + Array(repeating: file, count: 400), stderrToStdout: true) }
        #expect(!piped.contains("checked 1 of"), "\(piped.prefix(400).debugDescription)")
    }
}
