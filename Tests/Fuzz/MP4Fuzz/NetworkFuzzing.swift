// The network-facing parsers, fuzzed (issue 32): what an origin or a client sends is attacker
// input. Each checks invariants as well as "no trap": a violated one is a finding (it traps).
import Foundation
import MP4Core
@testable import MP4IO

/// An HTTP message head as both sides parse it: the end of the head, the head itself, the
/// response framing, chunk-size lines, the request target's query, Content-Range.
func exerciseHTTPHead(_ bytes: [UInt8]) {
    let slice = bytes[...]
    if let end = HTTPMessage.headEnd(slice) {
        precondition(end <= bytes.count, "head end \(end) past the \(bytes.count) bytes")
    }
    if let head = try? HTTPMessage.parseHead(slice) {
        precondition(head.fields.count <= HTTPMessage.maxFieldCount, "more fields than the bound")
        for field in head.fields {
            precondition(!field.value.contains("\r") && !field.value.contains("\n") && !field.value.contains("\0"), "a line break or NUL in a value")
        }
        for status in [200, 206, 204, 304, 101] {
            _ = try? HTTPMessage.responseFraming(status: status, head: head)
        }
        let (method, target, _) = head.startLine
        _ = HTTPServer.request(method: method, target: target, headers: head.fields)
        if let contentRange = head.values("content-range").first, let parsed = HTTPByteSource.parseContentRange(contentRange) {
            precondition(parsed.first <= parsed.last && parsed.total.map { parsed.last < $0 } ?? true, "a Content-Range believed: \(contentRange)")
        }
        _ = head.values("content-type").first.flatMap(HTTPByteSource.passable)
    }
    for line in bytes.split(separator: 0x0A, maxSplits: 16) {
        if let size = try? HTTPMessage.chunkSize(line) { precondition(size < 1 << 62, "chunk size \(size)") }
    }
}

/// A player's `Range` and `If-Range` (the input's first two lines) against resources of
/// several lengths: the answer is 200, a 206 whose Content-Range and body agree and lie
/// inside the resource, or a 416.
func exerciseRange(_ bytes: [UInt8]) {
    let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
    let range = lines.first, ifRange = lines.count > 1 ? lines[1] : nil
    for length: UInt64 in [0, 1, 1000, 1 << 40, UInt64(Int64.max)] {
        switch RangeRequest.parse(range, length: length) {
        case .partial(let part):
            precondition(part.lowerBound < part.upperBound && part.upperBound <= length, "range \(part) of a \(length)-byte resource")
        case .whole, .unsatisfiable:
            break
        }
    }
    var headers: HTTPFields = [("Host", "127.0.0.1:1")]
    if let range { headers.append(("Range", range)) }
    if let ifRange { headers.append(("If-Range", ifRange)) }
    let request = HTTPServerRequest(method: "GET", target: "/x", path: "/x", query: [:], headers: headers)
    let information = ContentInformation(length: 1000, contentType: "video/mp4", lastModified: "Tue, 24 Nov 2026 10:00:00 GMT", entityTag: "\"abc\"")
    let response = SourceResponder.response(for: request, information: information, body: MemorySource([UInt8](repeating: 1, count: 1000), name: "fuzz"))
    switch response.status {
    case 200:
        precondition(response.body.count == 1000, "a 200 of \(response.body.count) bytes")
    case 206:
        guard let contentRange = response.headers.first(where: { $0.name.lowercased() == "content-range" })?.value,
              let parsed = HTTPByteSource.parseContentRange(contentRange) else { preconditionFailure("a 206 without a valid Content-Range") }
        precondition(parsed.total == 1000 && parsed.last - parsed.first + 1 == response.body.count, "\(contentRange) with \(response.body.count) bytes")
    case 416:
        break
    default:
        preconditionFailure("status \(response.status) for a GET")
    }
}

/// A cache table as read from disk (torn, corrupt or hostile), past its checksum: a table
/// that loads has sorted, disjoint ranges inside its length and checksums only for blocks it
/// holds.
func exerciseCacheTable(_ bytes: [UInt8]) {
    for checksummed in [false, true] {
        guard let table = try? CacheTable.decode(Data(bytes), path: "fuzz", checksummed: checksummed) else { continue }
        var previous: UInt64 = 0
        for range in table.rangeSet.ranges {
            precondition(range.lowerBound >= previous && range.lowerBound < range.upperBound && range.upperBound <= table.length, "range \(range) of \(table.length)")
            previous = range.upperBound
        }
        for index in table.blockChecksums.keys {
            precondition(table.rangeSet.contains(table.block(index)), "a checksum for block \(index), which is not present")
        }
        _ = table.rangeSet.byteCount
        _ = table.rangeSet.missing(in: 0..<table.length)
    }
}
