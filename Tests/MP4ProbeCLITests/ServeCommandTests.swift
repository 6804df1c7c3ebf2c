import Foundation
import Testing
@testable import MP4ProbeCLI
@testable import MP4IO
import MP4TestSupport

/// `serve --host`: names a user types, and what binding beyond loopback means.
@Suite struct ServeCommandTests {
    /// `localhost` binds 127.0.0.1 (it was "cannot listen on localhost:0: Invalid argument");
    /// loopback addresses bind without a word; anything else binds with a warning that says
    /// what still protects the proxy (0.0.0.0 was taken silently); a host name is a usage error.
    @Test func hostTakesLoopbackNamesAndWarnsBeyondThem() throws {
        #expect(try ServeCommand.bindAddress("localhost") == ("127.0.0.1", nil))
        #expect(try ServeCommand.bindAddress("LOCALHOST").host == "127.0.0.1")
        #expect(try ServeCommand.bindAddress("127.0.0.2").warning == nil)
        #expect(try ServeCommand.bindAddress("::1").warning == nil)
        for exposed in ["0.0.0.0", "192.168.1.20", "::"] {
            let warning = try #require(try ServeCommand.bindAddress(exposed).warning)
            #expect(warning.contains("not loopback") && warning.contains("secret"), "\(exposed): \(warning)")
        }
        for wrong in ["example.com", "256.1.1.1", "1.2.3", ""] {
            #expect(throws: ArgumentScanner.UsageError.self) { try ServeCommand.bindAddress(wrong) }
        }
        // What `localhost` gives is bound and answers.
        var options = CachingProxy.Options(cacheDirectory: FileSystem.temporaryDirectory("mp4probe-serve-host"))
        defer { FileSystem.removeDirectory(options.loader.cache.directory) }
        options.server.host = try ServeCommand.bindAddress("localhost").host
        let proxy = CachingProxy(options: options)
        try proxy.start()
        defer { proxy.stop() }
        #expect(proxy.baseURL.hasPrefix("http://127.0.0.1:"))
    }

    /// `serve --stats`: the summary of the exchanges summed (ServeStatistics, MP4IO), in words.
    @Test func theStatisticsSummaryInWords() {
        var totals = ServeStatistics.Totals()
        totals.requests = 3; totals.byClass[2] = 2; totals.byClass[4] = 1; totals.clientsLeft = 1
        totals.fromCache = 1000; totals.fromOrigin = 34; totals.bytesSent = 3072
        let lines = ServeCommand.summary(totals)
        #expect(lines.first == "served 3 requests (2 2xx, 1 4xx), 3.0 KiB to players: 1000 B from the cache, 34 B fetched from origins, 2.0 KiB made here (faststart moov, pages)", "\(lines)")
        #expect(lines.last == "1 answer left by the client before the end, 0 cut short by a failing origin", "\(lines)")
    }

    /// The CLI's end-to-end tests skip without the built executable; where the run says it must
    /// be there (`.ci/run`, the Apple workflow: `MP4PROBE_REQUIRE_EXECUTABLE`), its absence
    /// fails instead of passing as skips (macOS's test runner is not beside it).
    @Test func theExecutableUnderTestIsFoundWhereRequired() {
        #expect(!Executables.requiredButMissing, "MP4PROBE_REQUIRE_EXECUTABLE is set and no mp4probe was found (MP4PROBE_BINARY, beside the tests, .build/debug, .build/release)")
    }
}
