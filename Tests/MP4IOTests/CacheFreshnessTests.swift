import Foundation
import Testing
@testable import MP4Core
@testable import MP4IO
import MP4TestSupport

/// The cache as an HTTP cache (issue 16 item 2): an entry the origin confirmed within the
/// maximum age is used without asking it; an unreachable origin leaves cached bytes usable
/// (stale-if-error) and uncached ones failing cleanly; a changed origin is never mixed in, and
/// is asked again at the next open. Against nginx on 127.0.0.1, stopped and changed under the
/// cache.
@Suite(.serialized) struct CacheFreshnessTests {
    static func film(_ byte: UInt8, count: Int = 300_000) -> [UInt8] {
        var bytes = [UInt8](repeating: byte, count: count)
        for i in stride(from: 0, to: count, by: 997) { bytes[i] = UInt8(truncatingIfNeeded: i) }
        return bytes
    }

    static func source(_ url: String, timeout: Double = 2) throws -> HTTPByteSource {
        var options = HTTPByteSource.Options()
        options.timeout = timeout
        options.retryDelay = 0.01
        options.maxRetries = 1
        return try HTTPByteSource(url: try #require(URL(string: url)), options: options)
    }

    @Test(.requires("nginx"), .hangGuard) func freshEntriesNeedNoOriginAndStaleOnesServeWhatTheyHold() async throws {
        let root = FileSystem.temporaryDirectory(), cache = FileSystem.temporaryDirectory()
        defer { FileSystem.removeDirectory(root); FileSystem.removeDirectory(cache) }
        let original = Self.film(1)
        FileSystem.write(original, to: root + "/film.mp4")
        var nginx = try #require(NginxServer.start(root: root))
        let url = nginx.baseURL + "/film.mp4"
        do {
            let first = try await CachedByteSource(upstream: try Self.source(url), directory: cache)
            #expect(first.freshness == .revalidated)
            #expect(try await first.read(0..<200_000) == Array(original[0..<200_000]))
        }
        await CachedByteSource.forgetOpenEntries(directory: cache)
        nginx.stop()
        try await Task.sleep(for: .milliseconds(300))
        // Within the maximum age: no request at all, cached bytes served, a missing part fails
        // cleanly (the origin is down), never hangs.
        let fresh = try await CachedByteSource(upstream: try Self.source(url), directory: cache)
        #expect(fresh.freshness == .fresh)
        #expect(try await fresh.length() == UInt64(original.count))
        #expect(try await fresh.read(1000..<150_000) == Array(original[1000..<150_000]))
        await #expect(throws: MP4Error.self) { _ = try await fresh.read(250_000..<260_000) }
        await CachedByteSource.forgetOpenEntries(directory: cache)
        // Past the maximum age with the origin down: stale-if-error.
        var options = CachedByteSource.Options()
        options.maxAge = 0
        let stale = try await CachedByteSource(upstream: try Self.source(url), directory: cache, options: options)
        guard case .stale = stale.freshness else { Issue.record("expected stale, got \(stale.freshness)"); return }
        #expect(try await stale.read(0..<1000) == Array(original[0..<1000]))
        options.servesStaleOnError = false
        await CachedByteSource.forgetOpenEntries(directory: cache)
        await #expect(throws: MP4Error.self) { _ = try await CachedByteSource(upstream: try Self.source(url), directory: cache, options: options) }

        // The origin comes back changed (same length, new content and ETag). A fresh entry
        // does not ask, but the first fetch it needs checks first: nothing is mixed.
        await CachedByteSource.forgetOpenEntries(directory: cache)
        let changed = Self.film(2)
        FileSystem.write(changed, to: root + "/film.mp4")
        try await Task.sleep(for: .milliseconds(1100))  // a new second: a new Last-Modified/ETag
        FileSystem.write(changed, to: root + "/film.mp4")
        nginx = try #require(NginxServer.start(root: root))
        defer { nginx.stop() }
        let movedURL = nginx.baseURL + "/film.mp4"
        let again = try await CachedByteSource(upstream: try Self.source(movedURL), directory: cache, key: url)
        #expect(again.freshness == .fresh)
        do {
            _ = try await again.read(250_000..<260_000)
            Issue.record("a changed origin was read into the entry")
        } catch let error as MP4Error {
            #expect(error.cause == .sourceChanged, "\(error)")
        }
        #expect(try await again.read(0..<1000) == Array(original[0..<1000]), "the entry still holds the old bytes, unmixed")
        // The next open asks the origin, finds it changed and starts the entry again.
        await CachedByteSource.forgetOpenEntries(directory: cache)
        let renewed = try await CachedByteSource(upstream: try Self.source(movedURL), directory: cache, key: url)
        #expect(renewed.freshness == .revalidated)
        #expect(try await renewed.read(0..<300_000) == changed)
    }

    /// An entry used without asking (fresh) fetches its first missing byte in one request:
    /// the HTTP origin takes the entry's length and validator as its own and checks them on
    /// the response (If-Range), with no head request first. Whatever validator the origin
    /// has (ETag, Last-Modified only) and when it ignores Range, a changed origin still fails
    /// before any byte is mixed in.
    @Test(.requires("nginx"), .hangGuard) func aFreshEntryFetchesItsFirstMissingByteInOneRequest() async throws {
        let root = FileSystem.temporaryDirectory(), cache = FileSystem.temporaryDirectory()
        defer { FileSystem.removeDirectory(root); FileSystem.removeDirectory(cache) }
        let original = Self.film(3)
        FileSystem.write(original, to: root + "/film.mp4")
        let nginx = try #require(NginxServer.start(root: root))
        defer { nginx.stop() }
        for location in ["", "/no-etag", "/no-ranges"] {
            let url = nginx.baseURL + location + "/film.mp4?one-request"
            do {
                let first = try await CachedByteSource(upstream: try Self.source(url), directory: cache)
                #expect(try await first.read(0..<100_000) == Array(original[0..<100_000]))
            }
            await CachedByteSource.forgetOpenEntries(directory: cache)
            let origin = try Self.source(url)
            let fresh = try await CachedByteSource(upstream: origin, directory: cache)
            #expect(fresh.freshness == .fresh)
            #expect(try await fresh.read(150_000..<300_000) == Array(original[150_000..<300_000]), "\(location)")
            #expect(origin.statistics.requests == 1, "\(location): \(origin.statistics.requests) requests for the first missing part")
            await CachedByteSource.forgetOpenEntries(directory: cache)
        }
        // The origin changes (new content, ETag and Last-Modified): each fresh entry's first
        // fetch fails as "changed", and its cached bytes stay the old ones.
        try await Task.sleep(for: .milliseconds(1100))
        let changed = Self.film(4)
        FileSystem.write(changed, to: root + "/film.mp4")
        for location in ["", "/no-etag", "/no-ranges"] {
            let url = nginx.baseURL + location + "/film.mp4?one-request"
            let fresh = try await CachedByteSource(upstream: try Self.source(url), directory: cache)
            #expect(fresh.freshness == .fresh)
            do {
                _ = try await fresh.read(100_000..<120_000)
                Issue.record("\(location): a changed origin was read into the entry")
            } catch let error as MP4Error {
                #expect(error.cause == .sourceChanged, "\(location): \(error)")
            }
            #expect(try await fresh.read(0..<1000) == Array(original[0..<1000]), "\(location)")
            await CachedByteSource.forgetOpenEntries(directory: cache)
        }
    }
}
