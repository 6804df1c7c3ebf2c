import MP4Core

/// `mp4probe boxes`: the box tree with offsets, sizes, version/flags and key fields.
enum BoxesReport {
    static let schemaVersion = 1

    struct Options {
        /// Print levels up to this depth (1 = top level only); `nil` for all.
        var maxDepth: Int?
        /// Print table entries.
        var full: Bool
        /// At most this many entries per table with `full`.
        var entryLimit: Int
    }

    static func json(_ file: MP4File, options: Options) -> JSONValue {
        let nodes = zip(file.topLevelNodes, BoxNode.childPaths(file.topLevelNodes, parent: BoxPath()))
        return .object([
            ("schemaVersion", .int(Int64(schemaVersion))),
            ("file", .object([("name", .string(file.name)), ("size", .uint(file.layout.fileSize))])),
            ("boxes", .array(nodes.map { nodeJSON($0.0, path: $0.1, depth: 1, options: options) })),
            ("findings", .array(file.findings.map(InfoReport.findingJSON))),
        ])
    }

    static func nodeJSON(_ node: BoxNode, path: BoxPath, depth: Int, options: Options) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("type", .string(node.type.description)),
            ("path", .string(path.description)),
            ("name", .optional(name(of: node, path: path), JSONValue.string)),
            ("offset", .uint(node.header.offset)),
            ("size", .uint(node.header.size)),
            ("headerSize", .int(Int64(node.header.headerSize))),
            ("version", .optional(node.version) { .uint(UInt64($0)) }),
            ("flags", .optional(node.flags) { .uint(UInt64($0)) }),
            ("truncated", .bool(node.isTruncated)),
        ]
        if node.header.usesLargeSize { members.append(("largeSize", .bool(true))) }
        if node.header.extendsToEnd { members.append(("extendsToEnd", .bool(true))) }
        if let uuid = node.header.userTypeString { members.append(("userType", .string(uuid))) }
        let fields = BoxFields.fields(of: node)
        if !fields.isEmpty { members.append(("fields", .object(fields))) }
        if options.full, let table = BoxFields.entries(of: node, limit: options.entryLimit) {
            members.append(("entryFields", .array(table.names.map { .string($0) })))
            members.append(("entries", .array(table.rows.map { .array($0) })))
        }
        if !node.children.isEmpty, options.maxDepth.map({ depth < $0 }) ?? true {
            let paths = BoxNode.childPaths(node.children, parent: path)
            members.append(("children", .array(zip(node.children, paths).map { nodeJSON($0.0, path: $0.1, depth: depth + 1, options: options) })))
        }
        return .object(members)
    }

    static func name(of node: BoxNode, path: BoxPath) -> String? {
        if path.components.dropLast().last?.type == .stsd { return "SampleEntry" }
        return BoxCatalog.descriptor(for: node.type)?.name
    }

    static func text(_ file: MP4File, options: Options) -> String {
        var out = "\(file.name): \(Format.grouped(file.layout.fileSize)) bytes\n"
        for (node, path) in zip(file.topLevelNodes, BoxNode.childPaths(file.topLevelNodes, parent: BoxPath())) {
            write(node, path: path, depth: 1, options: options, into: &out)
        }
        if file.layout.unparsedTailByteCount > 0 {
            out += "(\(file.layout.unparsedTailByteCount) bytes at the end do not form a box)\n"
        }
        let problems = file.findings.filter { $0.severity != .info }
        if !problems.isEmpty {
            out += "Findings:\n"
            for finding in problems { out += "  \(finding)\n" }
        }
        return out
    }

    static func write(_ node: BoxNode, path: BoxPath, depth: Int, options: Options, into out: inout String) {
        let indent = String(repeating: "  ", count: depth - 1)
        let label = path.components.last.map { c in c.ordinalNumber.map { "\(c.type)[\($0)]" } ?? c.type.description } ?? node.type.description
        var line = "\(indent)\(label) @\(node.header.offset) size \(node.header.size)"
        if node.header.usesLargeSize { line += " (64-bit)" }
        if node.header.extendsToEnd { line += " (size 0: to end)" }
        if let version = node.version, let flags = node.flags { line += " v\(version) flags \(Format.hexFlags(flags))" }
        if let uuid = node.header.userTypeString { line += " uuid \(uuid)" }
        if node.isTruncated { line += " TRUNCATED" }
        let fields = BoxFields.fields(of: node)
        if !fields.isEmpty {
            line += "  " + fields.map { "\($0.0)=\(textValue($0.1))" }.joined(separator: " ")
        }
        if node.type == .mdat { line += "  (media data, not read)" }
        out += line + "\n"
        if options.full, let table = BoxFields.entries(of: node, limit: options.entryLimit) {
            for (index, row) in table.rows.enumerated() {
                out += "\(indent)    [\(index)] " + zip(table.names, row).map { "\($0.0)=\(textValue($0.1))" }.joined(separator: " ") + "\n"
            }
            if table.total > table.rows.count {
                out += "\(indent)    ... \(table.total - table.rows.count) more entries (--entries N to print more)\n"
            }
        }
        guard options.maxDepth.map({ depth < $0 }) ?? true else {
            if !node.children.isEmpty { out += "\(indent)  ... \(node.children.count) child box(es) (raise --depth)\n" }
            return
        }
        for (child, childPath) in zip(node.children, BoxNode.childPaths(node.children, parent: path)) {
            write(child, path: childPath, depth: depth + 1, options: options, into: &out)
        }
    }

    static func textValue(_ value: JSONValue) -> String {
        switch value {
        case .string(let s): return s.contains(" ") || s.isEmpty ? "\"\(s)\"" : s
        case .array(let items): return "[" + items.map(textValue).joined(separator: ",") + "]"
        case .double(let d): return d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : Format.fixed(d, 3)
        default: return value.rendered(pretty: false)
        }
    }
}
