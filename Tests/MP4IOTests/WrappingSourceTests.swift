import Foundation
import Testing
@testable import MP4Core
@testable import MP4IO
import MP4TestSupport

/// Every source that serves another's bytes passes on what it does not change (its name, read
/// size, remoteness, validator and attributes: `WrappingSource`). `WatchedSource` and
/// `FaststartView` did not pass on `isRemote`, so the inspector page of a remote fragmented
/// film through `serve` made a request per fragment (issue 47: 301 for one film).
@Suite struct WrappingSourceTests {
    /// An origin over the network, as the wrappers see one.
    struct Remote: ByteSource {
        let bytes: [UInt8]
        var name: String { "https://cdn.example/film.mp4" }
        var preferredReadSize: Int { 65_536 }
        var isRemote: Bool { true }
        func length() async throws -> UInt64 { UInt64(bytes.count) }
        func read(_ range: Range<UInt64>) async throws -> [UInt8] {
            let upper = min(range.upperBound, UInt64(bytes.count))
            return range.lowerBound < upper ? Array(bytes[Int(range.lowerBound)..<Int(upper)]) : []
        }
        func validator() async throws -> String? { "\"v1\"" }
        func attributes() async throws -> ResourceAttributes { ResourceAttributes(contentType: "video/quicktime", lastModified: "Tue, 01 Dec 2026 00:00:00 GMT") }
    }

    @Test func everyWrapperPassesOnWhatItDoesNotChange() async throws {
        let film = try #require(FileSystem.read(Fixtures.sample("moov-at-end.mp4")))
        let remote = Remote(bytes: film)
        let directory = FileSystem.temporaryDirectory("mp4probe-wrapping")
        defer { FileSystem.removeDirectory(directory) }
        let cached = try await CachedByteSource(upstream: remote, directory: directory)
        let view = try await FaststartView.make(remote)
        let wrappers: [(String, any ByteSource)] = [
            ("WatchedSource", WatchedSource(base: remote, changed: {})),
            ("FaststartView", view),
            ("CheckedOrigin", CheckedOrigin(base: remote, length: UInt64(film.count), validator: "\"v1\"")),
            ("CachedByteSource", cached),
            ("Preload.YieldingReads", Preload.YieldingReads(source: cached, busy: nil)),
            ("WatchedSource over FaststartView", WatchedSource(base: view, changed: {})),
        ]
        for (name, wrapper) in wrappers {
            #expect(wrapper.isRemote, "\(name) is not remote over a remote source")
            #expect(wrapper.name == remote.name, "\(name)")
            #expect(try await wrapper.attributes().contentType == "video/quicktime", "\(name)")
        }
        #expect(WatchedSource(base: remote, changed: {}).preferredReadSize == 65_536)
        #expect(try await WatchedSource(base: remote, changed: {}).validator() == "\"v1\"")
        // What a wrapper changes, it says: the view is another representation.
        #expect(try await view.validator() == "\"v1\";faststart-v1")
        #expect(try await view.attributes().lastModified == nil)
        // A prefix of cached bytes is read as a local file whatever its base.
        #expect(!PrefixSource(base: remote, length: 100).isRemote)
    }
}
