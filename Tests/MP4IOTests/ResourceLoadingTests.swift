import Foundation
import Testing
import MP4Core
@testable import MP4IO
import MP4TestSupport

/// The AVPlayer adapter's logic, tested here (its AVFoundation shell cannot be: see
/// Tests/AppleShell/typecheck.sh and docs/apple.md): URL mapping, request arithmetic, content
/// answers, delivery in bounded pieces, cancellation.
@Suite struct ResourceLoadingTests {
    @Test func originsMapToACustomSchemeAndBack() throws {
        let origin = URL(string: "https://cdn.example.com/v/a.mp4?sig=x%2Fy&t=1")!
        let playable = try #require(ResourceLoading.playableURL(for: origin))
        #expect(playable.absoluteString == "mp4probe-https://cdn.example.com/v/a.mp4?sig=x%2Fy&t=1")
        #expect(ResourceLoading.origin(of: playable) == origin.absoluteString)
        let plain = try #require(ResourceLoading.playableURL(for: URL(string: "http://127.0.0.1:8080/b.m4a")!))
        #expect(ResourceLoading.origin(of: plain) == "http://127.0.0.1:8080/b.m4a")
        // Not ours: declined.
        #expect(ResourceLoading.playableURL(for: URL(string: "file:///tmp/a.mp4")!) == nil)
        #expect(ResourceLoading.origin(of: URL(string: "https://a/b.mp4")!) == nil)
        #expect(ResourceLoading.origin(of: URL(string: "mp4probe-ftp://a/b.mp4")!) == nil)
    }

    @Test func dataRequestsBecomeRanges() {
        typealias R = ResourceLoading.DataRequest
        let length: UInt64 = 1000
        #expect(R(offset: 0, length: 2, toEnd: false).range(resourceLength: length) == 0..<2)          // AVPlayer's first probe
        #expect(R(offset: 100, length: 0, toEnd: true).range(resourceLength: length) == 100..<1000)
        #expect(R(offset: 900, length: 500, toEnd: false).range(resourceLength: length) == 900..<1000)  // clamped
        #expect(R(offset: 1000, length: 10, toEnd: false).range(resourceLength: length) == 1000..<1000) // at the end: nothing
        #expect(R(offset: 5000, length: 10, toEnd: true).range(resourceLength: length) == 1000..<1000)
        #expect(R(offset: .max, length: .max, toEnd: false).range(resourceLength: .max) == UInt64(Int64.max)..<(UInt64.max - 1))  // the largest asked: no trap
        #expect(R(offset: -1, length: 10, toEnd: false).range(resourceLength: length) == nil)
        #expect(R(offset: 0, length: -5, toEnd: false).range(resourceLength: length) == nil)
        #expect(R(offset: 0, length: -5, toEnd: true).range(resourceLength: length) == 0..<1000)        // length ignored
    }

    @Test func contentIsAnsweredWithUniformTypes() throws {
        #expect(ResourceLoading.uniformType(ofMIMEType: "video/mp4") == "public.mpeg-4")
        #expect(ResourceLoading.uniformType(ofMIMEType: "Video/QuickTime; charset=x") == "com.apple.quicktime-movie")
        #expect(ResourceLoading.uniformType(ofMIMEType: "audio/mp4") == "com.apple.m4a-audio")
        #expect(ResourceLoading.uniformType(ofMIMEType: "application/octet-stream") == "public.mpeg-4")
        let answer = try ResourceLoading.answer(ContentInformation(length: UInt64.max, contentType: "audio/mp4"))
        #expect(answer == .init(contentType: "com.apple.m4a-audio", contentLength: Int64.max, isByteRangeAccessSupported: true))
    }

    /// A request's `allowedContentTypes` (finishing with a type outside them raises in
    /// AVFoundation): ours when allowed, another of the same container when not, an error
    /// when none fits.
    @Test func theAnswersTypeIsOneThePlayerAllows() throws {
        let video = ContentInformation(length: 10, contentType: "video/mp4")
        #expect(try ResourceLoading.answer(video, allowedTypes: nil).contentType == "public.mpeg-4")
        #expect(try ResourceLoading.answer(video, allowedTypes: []).contentType == "public.mpeg-4")
        #expect(try ResourceLoading.answer(video, allowedTypes: ["com.apple.quicktime-movie", "public.mpeg-4"]).contentType == "public.mpeg-4")
        #expect(try ResourceLoading.answer(video, allowedTypes: ["public.mp3", "com.apple.quicktime-movie"]).contentType == "com.apple.quicktime-movie")
        #expect(throws: MP4Error.self) { try ResourceLoading.answer(video, allowedTypes: ["public.mp3", "public.aiff-audio"]) }
        #expect(throws: MP4Error.self) { try ResourceLoading.answer(.init(length: 10, contentType: "audio/mpeg"), allowedTypes: ["public.mpeg-4"]) }
        #expect(try ResourceLoading.answer(video, entirelyCached: true).isEntireLengthAvailableOnDemand)
    }

    /// AVPlayer's pattern against a real origin: the content information with `bytes 0-1`,
    /// then a request to the end from an offset, delivered exactly, in pieces of at most
    /// 256 KiB.
    @Test(.requires("nginx")) func aPlayersRequestsAreAnsweredFromTheLoader() async throws {
        let root = FileSystem.temporaryDirectory("mp4probe-loading-origin")
        defer { FileSystem.removeDirectory(root) }
        let bytes = try #require(FileSystem.read(Fixtures.sample("moov-at-end.mp4")))
        FileSystem.write(bytes, to: root + "/a.mp4")
        let nginx = try #require(NginxServer.start(root: root))
        defer { nginx.stop() }
        let cache = FileSystem.temporaryDirectory("mp4probe-loading")
        defer { FileSystem.removeDirectory(cache) }
        let loader = MediaLoader(options: .init(cacheDirectory: cache))
        defer { loader.stopEvicting() }
        let url = try #require(URL(string: nginx.baseURL + "/a.mp4"))
        let playable = try #require(ResourceLoading.playableURL(for: url))
        let origin = try #require(ResourceLoading.origin(of: playable))

        let answers = Locked<[ResourceLoading.ContentAnswer]>([]), received = Locked<[[UInt8]]>([])
        try await ResourceLoading.load(loader, origin: origin, wantsInformation: true, data: .init(offset: 0, length: 2, toEnd: false),
                                       answer: { answer in answers.withLock { $0.append(answer) } },
                                       deliver: { piece in received.withLock { $0.append(Array(piece)) } })
        #expect(answers.withLock { $0 } == [.init(contentType: "public.mpeg-4", contentLength: Int64(bytes.count), isByteRangeAccessSupported: true)])
        #expect(received.withLock { Array($0.joined()) } == Array(bytes[0..<2]))

        received.withLock { $0 = [] }
        try await ResourceLoading.load(loader, origin: origin, wantsInformation: false, data: .init(offset: 1000, length: 0, toEnd: true),
                                       answer: { _ in Issue.record("no information was asked for") },
                                       deliver: { piece in received.withLock { $0.append(Array(piece)) } })
        let pieces = received.withLock { $0 }
        #expect(Array(pieces.joined()) == Array(bytes[1000...]))
        #expect(pieces.allSatisfy { $0.count <= ResourceLoading.maxPiece } && pieces.count >= bytes.count / ResourceLoading.maxPiece)

        // Once every byte is cached the answer says so (AVFoundation may then read any part at
        // once); a player that allows no MPEG-4 type gets an error, not an exception.
        try await ResourceLoading.load(loader, origin: origin, wantsInformation: false, data: .init(offset: 0, length: 1000, toEnd: false),
                                       answer: { _ in }, deliver: { _ in })
        answers.withLock { $0 = [] }
        try await ResourceLoading.load(loader, origin: origin, wantsInformation: true, data: nil,
                                       answer: { answer in answers.withLock { $0.append(answer) } }, deliver: { _ in })
        #expect(answers.withLock { $0.map(\.isEntireLengthAvailableOnDemand) } == [true])
        await #expect(throws: MP4Error.self) {
            try await ResourceLoading.load(loader, origin: origin, wantsInformation: true, allowedTypes: ["public.mp3"], data: nil,
                                           answer: { _ in Issue.record("answered with a type the player does not allow") }, deliver: { _ in })
        }
    }

    /// A request the player cancels stops delivering, its load ends without finishing the
    /// request (CancellationError), and the loads in flight are empty again.
    @Test(.requires("nginx")) func aCancelledRequestStopsDelivering() async throws {
        let root = FileSystem.temporaryDirectory("mp4probe-loading-origin")
        defer { FileSystem.removeDirectory(root) }
        var random = SeededRandom(seed: 33)
        FileSystem.write(random.bytes(8 << 20), to: root + "/slow.mp4")
        let nginx = try #require(NginxServer.start(root: root, limitRate: "1m"))
        defer { nginx.stop() }
        let cache = FileSystem.temporaryDirectory("mp4probe-loading")
        defer { FileSystem.removeDirectory(cache) }
        let loader = MediaLoader(options: .init(cacheDirectory: cache))
        defer { loader.stopEvicting() }
        let loads = ResourceLoading.Loads<Int>()
        let delivered = Locked(0), outcome = Locked<String?>(nil)
        loads.start(7) {
            do {
                try await ResourceLoading.load(loader, origin: nginx.baseURL + "/slow.mp4", wantsInformation: false,
                                               data: .init(offset: 0, length: 0, toEnd: true), answer: { _ in },
                                               deliver: { piece in delivered.withLock { $0 += piece.count } })
                outcome.withLock { $0 = "finished" }
            } catch is CancellationError {
                outcome.withLock { $0 = "cancelled" }
            } catch {
                outcome.withLock { $0 = "failed: \(error)" }
            }
        }
        #expect(loads.count == 1)
        // The player's side watches and cancels from a thread of its own (AVFoundation's
        // queue), not from the shared pool: the load runs off the pool (ServingTask), and a
        // watcher on a pool held by other tests saw the 8 MiB end before it could cancel.
        let atEnd = await Executables.offPool { () -> Int in
            for _ in 0..<500 where delivered.withLock({ $0 }) == 0 { usleep(10_000) }
            loads.cancel(7)
            for _ in 0..<500 where outcome.withLock({ $0 }) == nil { usleep(10_000) }
            let atEnd = delivered.withLock { $0 }
            usleep(300_000)
            return atEnd
        }
        #expect(outcome.withLock { $0 } == "cancelled")
        #expect(delivered.withLock { $0 } == atEnd && atEnd > 0 && atEnd < 8 << 20, "delivered \(atEnd) bytes, then \(delivered.withLock { $0 })")
        #expect(loads.count == 0)
    }

    /// A key reused by a new request (an ObjectIdentifier whose request is gone): the new
    /// load replaces the old one, and the old one's end does not forget the new one.
    @Test func aReusedKeyNeverForgetsTheNewLoad() async throws {
        let loads = ResourceLoading.Loads<Int>()
        let release = AsyncStream<Void>.makeStream()
        let oldEnded = Locked(false)
        loads.start(1) {
            // Ends (cancelled) when replaced, after a moment.
            while !Task.isCancelled { try? await Task.sleep(nanoseconds: 10_000_000) }
            oldEnded.withLock { $0 = true }
        }
        loads.start(1) { for await _ in release.stream {} }
        for _ in 0..<300 where !oldEnded.withLock({ $0 }) { try await Task.sleep(nanoseconds: 10_000_000) }
        #expect(oldEnded.withLock { $0 }, "the replaced load was not cancelled")
        #expect(loads.count == 1, "the old load's end forgot the new one")
        loads.cancel(1)
        release.continuation.finish()
        #expect(loads.count == 0)
        loads.cancel(99)   // nothing to cancel: nothing happens
    }
}
