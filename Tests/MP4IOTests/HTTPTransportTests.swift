import Foundation
import Testing
@testable import MP4IO

/// The transports' choice and URLSession's receive path, without a network.
@Suite struct HTTPTransportTests {
    /// Which client makes `http:` requests: ours over sockets only on Linux without a proxy;
    /// on Apple platforms always URLSession (system proxy, PAC, ATS, cellular, VPN on demand).
    @Test func httpGoesThroughURLSessionOnApplePlatforms() {
        #expect(HTTPByteSource.usesOwnClient(.automatic, proxyConfigured: false, onApplePlatform: false))
        #expect(!HTTPByteSource.usesOwnClient(.automatic, proxyConfigured: true, onApplePlatform: false))
        #expect(!HTTPByteSource.usesOwnClient(.urlSession, proxyConfigured: false, onApplePlatform: false))
        #expect(!HTTPByteSource.usesOwnClient(.automatic, proxyConfigured: false, onApplePlatform: true))
        #if canImport(Darwin)
        #expect(!HTTPByteSource.usesOwnClient(.automatic, proxyConfigured: false))
        #endif
    }

    /// The URLSession body pipe hands pieces on in order as they arrive; when the reader is
    /// more than its capacity behind, the transfer is to be cancelled and the exchange ends
    /// paused (not failed), the buffered pieces still delivered.
    @Test func theBodyPipeIsBoundedAndPausesWhenTheReaderFallsBehind() async throws {
        let pipe = BodyPipe(capacity: 1 << 16)
        let piece = Data(repeating: 0xAB, count: 16 << 10)
        for _ in 0..<4 { #expect(!pipe.received(piece), "within the capacity") }
        #expect(pipe.received(piece), "a fifth piece is over 64 KiB: cancel")
        #expect(!pipe.received(piece), "nothing is kept after the pause")
        pipe.completed(URLError(.cancelled), response: nil)
        var taken = 0
        while let next = await pipe.next() { taken += next.count }
        #expect(taken == 5 * (16 << 10))
        #expect(pipe.outcome.paused && pipe.outcome.failure == nil, "a pause is not a failure")
        #expect(pipe.arrived == 5 * (16 << 10))
    }

    /// A reader that waits gets each piece as it is appended; the end of the transfer ends it,
    /// with the transfer's error; a reader that closes the pipe makes the next piece a cancel.
    @Test func theBodyPipeHandsPiecesOnAsTheyArrive() async throws {
        let pipe = BodyPipe(capacity: 1 << 20)
        let reader = Task { () -> [Int] in
            var sizes: [Int] = []
            while let next = await pipe.next() { sizes.append(next.count) }
            return sizes
        }
        for size in [10, 20, 30] {
            #expect(!pipe.received(Data(count: size)))
            try await Task.sleep(for: .milliseconds(5))
        }
        pipe.completed(URLError(.networkConnectionLost), response: nil)
        #expect(await reader.value == [10, 20, 30])
        #expect((pipe.outcome.failure as? URLError)?.code == .networkConnectionLost)
        let closed = BodyPipe(capacity: 1 << 20)
        closed.close()
        #expect(closed.received(Data(count: 1)), "a closed pipe cancels its transfer")
        #expect(await closed.next() == nil)
    }
}
