import Foundation
import MP4Core

/// `serve`'s access log: one line a request, close to nginx's combined format, decided here
/// without I/O (the caller writes the line):
///
///     127.0.0.1 - - [26/Nov/2026:13:45:01 +0000] "GET /…/v.mp4 HTTP/1.1" 206 1048576 "bytes=0-" 0.123 origin=https://cdn.example.com cache=65536 fetched=983040
///
/// Fields: the client (always loopback), the time the request arrived, the request line with
/// the secret replaced by `…` and the query dropped (it holds the origin URL, whose own query
/// may be a signed token), the status, body bytes sent, the `Range` asked for (`-` without
/// one), seconds until the answer ended, the origin's scheme and host when the request named
/// one, for an answer read from a source the body bytes read from the cache (`cache=`) and
/// fetched from the origin during it (`fetched=`; the rest of what was sent the proxy made: a
/// faststart view's `moov`), and, last and quoted, why the answer ended early or was refused.
public enum AccessLog {
    /// The line for `exchange` on a proxy whose secret path segment is `secret`.
    public static func line(_ exchange: HTTPServer.Exchange, secret: String) -> String {
        let time = timestamp(exchange.start)
        let request: String
        if let method = exchange.method, let target = exchange.target {
            request = "\(clean(method)) \(redacted(target, secret: secret)) HTTP/1.1"
        } else {
            request = "-"
        }
        var line = "127.0.0.1 - - [\(time)] \"\(request)\" \(exchange.status) \(exchange.bytesSent) \"\(exchange.range.map(clean) ?? "-")\" \(seconds(exchange.seconds))"
        if let target = exchange.target, let origin = originHost(target) { line += " origin=\(origin)" }
        if let cache = exchange.fromCache, let fetched = exchange.fromOrigin { line += " cache=\(cache) fetched=\(fetched)" }
        if let failure = exchange.failure { line += " \"\(clean(String(failure.prefix(300))))\"" }
        return line
    }

    /// The target with the secret segment replaced and the query dropped.
    static func redacted(_ target: String, secret: String) -> String {
        var path = String(target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
        if !secret.isEmpty { path = path.replacingOccurrences(of: secret, with: "…") }
        return clean(path)
    }

    /// `scheme://host[:port]` of the `url` parameter of `target`, if it has one.
    static func originHost(_ target: String) -> String? {
        guard let query = target.split(separator: "?", maxSplits: 1).dropFirst().first else { return nil }
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[0] == "url", let value = HTTPServer.percentDecoded(parts[1], plusIsSpace: true),
                  let url = URL(string: value), let scheme = url.scheme, let host = url.host else { continue }
            return clean("\(scheme)://\(host)" + (url.port.map { ":\($0)" } ?? ""))
        }
        return nil
    }

    /// Printable ASCII only, quotes and backslashes escaped: a client's bytes cannot forge a
    /// line or a field.
    static func clean(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case " "..."~", "…": out.unicodeScalars.append(scalar)
            default: out += String(format: "\\x%02X", min(scalar.value, 0xFF))
            }
        }
        return out
    }

    /// `dd/Mon/yyyy:HH:mm:ss +0000`, computed (a `DateFormatter` made for each line was an
    /// eighth of the proxy's CPU time when a player asked for 300 ranges in half a second).
    static func timestamp(_ date: Date) -> String {
        let interval = date.timeIntervalSince1970
        let civil = CivilDate(unixSeconds: interval.isFinite && abs(interval) < 1e15 ? Int64(interval.rounded(.down)) : 0)
        let names = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let time = civil.secondOfDay
        return "\(two(civil.day))/\(names[Int(civil.month - 1)])/\(civil.year):\(two(time / 3600)):\(two(time / 60 % 60)):\(two(time % 60)) +0000"
    }

    /// Seconds with three decimals (`0.123`).
    static func seconds(_ value: Double) -> String {
        let millis = value.isFinite ? Int64((max(value, 0) * 1000).rounded()) : 0
        let fraction = String(millis % 1000)
        return "\(millis / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }

    private static func two(_ value: Int64) -> String { CivilDate.two(value) }
}
