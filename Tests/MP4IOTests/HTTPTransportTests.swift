import Foundation
import Testing
@testable import MP4IO

/// The transport's receive path, without a network: receiving a body in N chunks must cost
/// O(N) copies, not O(N²) (issue 21: the body was copied out of the locked dictionary,
/// appended to and stored back, so copy-on-write copied the whole body for every chunk).
@Suite struct HTTPTransportTests {
    /// Counts how often the body's storage moves while 2,000 chunks of 16 KiB arrive. Growing
    /// in place moves it only when the capacity doubles (about log2(2000) times); a copy per
    /// chunk moves it every time. No clock is involved.
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

    @Test func receivingIsLinearInTheBodySize() {
        let chunk = Data(repeating: 0xAB, count: 16 * 1024)
        var table: [Int: URLSessionClient.Received] = [7: URLSessionClient.Received(limit: Int.max, skipWhole: 0)]
        var moves = 0
        var last: UnsafeRawPointer?
        for _ in 0..<2000 {
            _ = URLSessionClient.receive(chunk, status: 206, at: 7, in: &table, through: \.self)
            let base = table[7]?.body.withUnsafeBytes { $0.baseAddress }
            if base != last { moves += 1; last = base }
        }
        #expect(table[7]?.body.count == 2000 * 16 * 1024)
        #expect(moves < 64, "the body moved \(moves) times in 2,000 chunks: copied per chunk")
    }

    /// What the delegate did before: copy out, append, store back. The same counter sees a
    /// move for every chunk, so the test above would catch a return to it.
    @Test func theCopyOutPatternIsWhatTheCounterCatches() {
        let chunk = Data(repeating: 0xCD, count: 1024)
        var table: [Int: URLSessionClient.Received] = [1: URLSessionClient.Received(limit: Int.max, skipWhole: 0)]
        var moves = 0
        var last: UnsafeRawPointer?
        for _ in 0..<200 {
            guard var entry = table[1] else { break }
            _ = entry.receive(chunk, status: 206)
            table[1] = entry
            let base = table[1]?.body.withUnsafeBytes { $0.baseAddress }
            if base != last { moves += 1; last = base }
        }
        #expect(moves > 150)
    }

    /// A 200 answer to a range request drops the bytes before the range, and the limit stops
    /// the transfer.
    @Test func skipsAndStops() {
        var table: [Int: URLSessionClient.Received] = [1: URLSessionClient.Received(limit: 10, skipWhole: 5)]
        #expect(!URLSessionClient.receive(Data(0..<8), status: 200, at: 1, in: &table, through: \.self))
        #expect(URLSessionClient.receive(Data(8..<20), status: 200, at: 1, in: &table, through: \.self))
        #expect(table[1]?.body == Array(5..<15))
        #expect(table[1]?.skipped == 5 && table[1]?.stopped == true)
    }
}
