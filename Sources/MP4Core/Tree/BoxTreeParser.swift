/// Parses boxes that are already in memory into ``BoxNode`` trees.
///
/// Synchronous and free of I/O: the caller loads a top-level box (usually `moov`) in one read
/// and hands its bytes over. Every payload parser gets a reader sliced to its own box; a child
/// that claims more bytes than its parent holds is clamped to the parent and reported as a
/// finding; nesting depth and the total number of boxes are bounded by ``ParseLimits``.
/// A payload that fails to parse does not stop the walk: the box is kept raw with
/// ``BoxContent/invalid(_:)`` and a finding.
public struct BoxTreeParser: Sendable {
    /// What the parent knows that decides how a child is read.
    struct Context {
        var handler: FourCC?
        var parent: FourCC?
    }

    /// The limits in force.
    public let limits: ParseLimits
    /// Non-fatal problems met so far.
    public private(set) var findings: [Finding] = []
    /// Boxes parsed so far (all trees), bounded by ``ParseLimits/maxBoxCount``.
    public private(set) var boxCount = 0

    /// Creates a parser.
    public init(limits: ParseLimits = .default) { self.limits = limits }

    /// Parses one complete box.
    ///
    /// - Parameters:
    ///   - bytes: the box's bytes, header included (possibly fewer than the header claims
    ///     when the file is truncated).
    ///   - offset: the file offset of `bytes[0]`.
    ///   - path: the box's path (for messages).
    /// - Throws: ``MP4Error/Kind/limitExceeded`` when the depth or box-count limit is reached;
    ///   header errors of the box itself.
    public mutating func parse(_ bytes: [UInt8], at offset: UInt64, path: BoxPath) throws -> BoxNode {
        let header: BoxHeader
        do {
            header = try BoxHeader.parse(bytes[...], at: offset, containerEnd: offset + UInt64(bytes.count))
        } catch let error as MP4Error {
            throw error.at(path: path)
        }
        let available = min(UInt64(bytes.count), header.size)
        return try parseBox(header: header, storage: bytes, range: 0..<Int(available), baseOffset: offset, path: path, depth: 1, context: Context())
    }

    mutating func parseBox(header: BoxHeader, storage: [UInt8], range: Range<Int>, baseOffset: UInt64, path: BoxPath, depth: Int, context: Context) throws -> BoxNode {
        boxCount += 1
        if boxCount > limits.maxBoxCount {
            throw MP4Error(.limitExceeded, "more than \(limits.maxBoxCount) boxes", offset: header.offset, path: path, limit: .maxBoxCount)
        }
        if depth > limits.maxDepth {
            throw MP4Error(.limitExceeded, "boxes nested deeper than \(limits.maxDepth) levels", offset: header.offset, path: path, limit: .maxDepth)
        }
        let payloadStart = range.lowerBound + header.headerSize
        let isTruncated = UInt64(range.count) < header.size
        var node = BoxNode(header: header, content: .raw, isTruncated: isTruncated, payload: storage[min(payloadStart, range.upperBound)..<range.upperBound])
        guard payloadStart <= range.upperBound else { return node }
        var reader = ByteReader(storage: storage, range: payloadStart..<range.upperBound, baseOffset: baseOffset)
        var childContext = context
        childContext.parent = header.type
        do {
            if context.parent == .stsd {
                try parseSampleEntry(&node, &reader, storage: storage, baseOffset: baseOffset, path: path, depth: depth, context: childContext)
                return node
            }
            if context.parent == .ilst {
                // iTunes metadata items ('©nam', 'covr', ...) hold 'data' boxes.
                node.content = .container
                node.children = try parseChildren(storage: storage, range: reader.position..<reader.end, baseOffset: baseOffset, parentPath: path, depth: depth, context: childContext)
                return node
            }
            // A declared model parses itself (one catalogue lookup per box).
            if let model = BoxCatalog.model(for: header.type) {
                if model.isFullBox { try readVersionAndFlags(&node, &reader) }
                node.content = .model(AnyBoxModel(try model.parse(&reader, version: node.version ?? 0, flags: node.flags ?? 0)))
                if reader.remaining > 0 {
                    findings.append(Finding(.boxExtraBytes, message: "'\(header.type)' has \(reader.remaining) bytes after its fields", offset: header.offset, path: path))
                }
                return node
            }
            guard let descriptor = BoxCatalog.descriptor(for: header.type) else { return node }
            switch descriptor.structure {
            case .container:
                node.content = .container
                if header.type == .trak { childContext.handler = Self.handlerType(storage: storage, range: reader.position..<reader.end) }
            case .fullContainer:
                try readVersionAndFlags(&node, &reader)
                node.content = .container
            case .meta:
                if !Self.isQuickTimeMeta(reader) { try readVersionAndFlags(&node, &reader) }
                node.content = .container
            case .sampleDescription, .dataReference:
                try readVersionAndFlags(&node, &reader)
                let declared = try reader.readUInt32()
                node.content = descriptor.structure == .sampleDescription ? .sampleDescription(declaredEntryCount: declared) : .dataReference(declaredEntryCount: declared)
            case .fullLeaf:
                // Known, kept raw: version and flags are shown.
                try readVersionAndFlags(&node, &reader)
                return node
            case .leaf:
                return node
            }
        } catch let error as MP4Error where error.kind != .limitExceeded {
            let located = error.at(path: path)
            node.content = .invalid(located)
            if error.kind == .truncated, Self.descriptiveTypes.contains(header.type) {
                findings.append(Finding(.boxShort, message: "'\(header.type)' is shorter than its fields (\(located.message)); players ignore it, and so does this report", offset: located.offset ?? header.offset, path: path))
            } else {
                findings.append(Finding(.invalidBox, message: "'\(header.type)' could not be parsed: \(located.message)", offset: located.offset ?? header.offset, path: path))
            }
            return node
        }
        node.children = try parseChildren(storage: storage, range: reader.position..<reader.end, baseOffset: baseOffset, parentPath: path, depth: depth, context: childContext)
        if case .sampleDescription(let declared) = node.content, UInt64(node.children.count) != UInt64(declared) {
            findings.append(Finding(.entryCountMismatch, message: "stsd declares \(declared) sample entries but holds \(node.children.count)", offset: header.offset, path: path))
        }
        return node
    }

    /// Boxes that describe how to present a track (colour, aspect ratio, clean aperture,
    /// declared bit rates, fields, HDR levels, language and kind): a player that finds one
    /// short of its fields ignores it and plays, so a short one is ``Finding/Kind/boxShort``
    /// (a warning), not ``Finding/Kind/invalidBox``.
    static let descriptiveTypes: Set<FourCC> = [
        "colr", "pasp", "clap", "btrt", "fiel", "mdcv", "clli", "cclv", "amve", "gama", "chrm", "elng", "kind", "tsel", "st3d", "sv3d", "SA3D",
    ]

    private mutating func readVersionAndFlags(_ node: inout BoxNode, _ reader: inout ByteReader) throws {
        let word = try reader.readUInt32()
        node.version = UInt8(word >> 24)
        node.flags = word & 0xFF_FFFF
    }

    private mutating func parseSampleEntry(_ node: inout BoxNode, _ reader: inout ByteReader, storage: [UInt8], baseOffset: UInt64, path: BoxPath, depth: Int, context: Context) throws {
        var (entry, hasChildren) = try SampleEntry.parseFixedFields(format: node.type, handler: context.handler, &reader)
        if hasChildren {
            node.children = try parseChildren(storage: storage, range: reader.position..<reader.end, baseOffset: baseOffset, parentPath: path, depth: depth, context: context)
        }
        entry.complete(children: node.children)
        node.content = .sampleEntry(entry)
    }

    /// Parses the boxes in `storage[range]`.
    mutating func parseChildren(storage: [UInt8], range: Range<Int>, baseOffset: UInt64, parentPath: BoxPath, depth: Int, context: Context) throws -> [BoxNode] {
        var headers: [(BoxHeader, Range<Int>)] = []
        var position = range.lowerBound
        let containerEnd = baseOffset + UInt64(range.upperBound)
        while position < range.upperBound {
            let remaining = range.upperBound - position
            if remaining < 8 {
                if !storage[position..<range.upperBound].allSatisfy({ $0 == 0 }) {
                    findings.append(Finding(.trailingBytes, message: "\(remaining) bytes after the last child box", offset: baseOffset + UInt64(position), path: parentPath))
                }
                break
            }
            let header: BoxHeader
            do {
                header = try BoxHeader.parse(storage[position..<min(position + BoxHeader.maximumSize, range.upperBound)], at: baseOffset + UInt64(position), containerEnd: containerEnd)
            } catch let error as MP4Error {
                if storage[position..<min(position + 4, range.upperBound)].allSatisfy({ $0 == 0 }) && storage[position..<range.upperBound].allSatisfy({ $0 == 0 }) {
                    break  // QuickTime zero terminator / padding
                }
                findings.append(Finding(.invalidBoxHeader, message: error.message + "; \(remaining) bytes of '\(parentPath.components.last?.type ?? "    ")' left unparsed", offset: error.offset, path: parentPath))
                break
            }
            let available: Int
            if header.size > UInt64(remaining) {
                available = remaining
                findings.append(Finding(.boxOverrunsParent, message: "'\(header.type)' claims \(header.size) bytes but only \(remaining) remain in its parent; read as truncated", offset: header.offset, path: parentPath.appending(header.type)))
            } else {
                available = Int(header.size)
            }
            headers.append((header, position..<(position + available)))
            position += available
            if headers.count > limits.maxBoxCount {
                throw MP4Error(.limitExceeded, "more than \(limits.maxBoxCount) boxes", offset: header.offset, path: parentPath, limit: .maxBoxCount)
            }
        }
        let ordinals = BoxNode.ordinalNumbers(of: headers.map(\.0.type))
        var children: [BoxNode] = []
        children.reserveCapacity(headers.count)
        for ((header, childRange), ordinal) in zip(headers, ordinals) {
            let path = parentPath.appending(header.type, ordinalNumber: ordinal)
            var child = try parseBox(header: header, storage: storage, range: childRange, baseOffset: baseOffset, path: path, depth: depth + 1, context: context)
            child.ordinalNumber = ordinal
            children.append(child)
        }
        return children
    }

    /// ISO `meta` is a full box; QuickTime's is a plain container. Decide by whether the
    /// payload starts with a plausible child header (a `hdlr` right away).
    static func isQuickTimeMeta(_ reader: ByteReader) -> Bool {
        var probe = reader
        guard probe.remaining >= 8, let size = try? probe.readUInt32(), let type = try? probe.readFourCC() else { return false }
        return size >= 8 && UInt64(size) <= UInt64(reader.remaining) && (type == .hdlr || type == "keys" || type == "ilst" || type == "mhdr")
    }

    /// Finds `mdia/hdlr`'s handler type inside a `trak` payload without parsing it fully.
    static func handlerType(storage: [UInt8], range: Range<Int>) -> FourCC? {
        func find(_ type: FourCC, in range: Range<Int>) -> Range<Int>? {
            var p = range.lowerBound
            while range.upperBound - p >= 8 {
                var r = ByteReader(storage: storage, range: p..<range.upperBound, baseOffset: 0)
                guard let size = try? r.readUInt32(), let t = try? r.readFourCC(), size >= 8, Int(size) <= range.upperBound - p else { return nil }
                if t == type { return (p + 8)..<(p + Int(size)) }
                p += Int(size)
            }
            return nil
        }
        guard let mdia = find(.mdia, in: range), let hdlr = find(.hdlr, in: mdia), hdlr.count >= 12 else { return nil }
        var r = ByteReader(storage: storage, range: hdlr, baseOffset: 0)
        try? r.skip(8)
        return try? r.readFourCC()
    }
}
