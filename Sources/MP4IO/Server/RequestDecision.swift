/// What ``HTTPServer`` does with a request whose head has arrived, decided from the head
/// alone, without I/O (`RequestDecisionTests` goes through it row by row): the version, the
/// body's framing and size, the `Host`, the method.
enum RequestDecision: Equatable, Sendable {
    /// Answer `status` with `text` and no handler. `logged`: the request is reported (its
    /// head was well formed). `keepAlive`: the connection may carry another request.
    case refuse(status: Int, text: String, keepAlive: Bool, logged: Bool, allow: String?)
    /// Read a body of `bodyLength` bytes (0: none) and hand the request to the handler.
    case handle(keepAlive: Bool, bodyLength: Int)

    /// The decision for a head with `method`, `version` and fields `fields`, for a server at
    /// `allowedHosts`.
    static func decide(method: String, version: String, fields: HTTPFields, options: HTTPServer.Options, allowedHosts: Set<String>) -> RequestDecision {
        func refuse(_ status: Int, _ text: String) -> RequestDecision {
            .refuse(status: status, text: text, keepAlive: false, logged: false, allow: nil)
        }
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else { return refuse(505, "HTTP/1.1 only") }
        let takesBody = options.methodsWithBodies.contains(method)
        // Request bodies only for the methods that take one, framed by Content-Length.
        if fields["transfer-encoding"] != nil { return refuse(takesBody ? 411 : 400, "request bodies are framed by Content-Length here") }
        var bodyLength = 0
        if let declared = fields["content-length"], declared != "0" {
            guard takesBody else { return refuse(400, "request bodies are not accepted") }
            guard declared.allSatisfy(\.isASCIIDigit), declared.count <= 9, let count = Int(declared) else { return refuse(400, "malformed Content-Length") }
            let limit = maxBody(options)
            guard count <= limit else { return refuse(413, "request body over \(limit) bytes") }
            bodyLength = count
        }
        guard let host = fields["host"]?.lowercased(), allowedHosts.contains(host) else {
            return .refuse(status: 421, text: "unknown Host (this server answers only to its own address)", keepAlive: false, logged: true, allow: nil)
        }
        let keepAlive = version == "HTTP/1.1" && !(fields["connection"]?.hasToken("close") ?? false)
        guard method == "GET" || method == "HEAD" || takesBody else {
            return .refuse(status: 405, text: "only GET and HEAD", keepAlive: keepAlive, logged: true,
                           allow: (["GET", "HEAD"] + options.methodsWithBodies.sorted()).joined(separator: ", "))
        }
        return .handle(keepAlive: keepAlive, bodyLength: bodyLength)
    }

    /// The largest request body: the option, within what the connection's buffer holds
    /// beside a head.
    static func maxBody(_ options: HTTPServer.Options) -> Int {
        min(options.maxRequestBody, SocketConnection.bufferSize - HTTPMessage.maxHeadSize)
    }
}
