/// What a box holds once parsed: a typed model for the boxes the library understands,
/// children for containers, and raw bytes for everything else (``BoxNode/payload``).
public enum BoxContent: Sendable, Hashable {
    /// A container; see ``BoxNode/children``.
    case container
    /// A box the library keeps as raw bytes.
    case raw
    /// `stsd`: the entries are the children.
    case sampleDescription(declaredEntryCount: UInt32)
    /// A child of `stsd`.
    case sampleEntry(SampleEntry)
    /// `dref`: the entries are the children.
    case dataReference(declaredEntryCount: UInt32)
    /// A box declared as a ``BoxModel`` (``BoxCatalog/models``).
    case model(AnyBoxModel)
    /// A box of a known type whose payload did not parse; kept raw, with the reason.
    case invalid(MP4Error)
}

/// A parsed box: header, version and flags for full boxes, typed content, children, and the
/// raw payload bytes (shared with the buffer the box was read into, never copied).
public struct BoxNode: Sendable, Hashable {
    /// The box's model when it is a `T` (`node.model(MovieHeaderBox.self)`).
    public func model<T: BoxModel>(_ type: T.Type) -> T? {
        if case .model(let model) = content { return model.as(type) }
        return nil
    }

    /// The header as read.
    public var header: BoxHeader
    /// The full box version, for full boxes.
    public var version: UInt8?
    /// The full box flags, for full boxes.
    public var flags: UInt32?
    /// The parsed content.
    public var content: BoxContent
    /// Child boxes, for containers and sample entries.
    public var children: [BoxNode]
    /// Whether the box claims more bytes than its container (or the file) holds.
    public var isTruncated: Bool
    /// The payload bytes after the header that are actually present.
    public var payload: ArraySlice<UInt8>
    /// The box's number among its siblings of the same type, from 1, when there are several
    /// (`trak[2]`); `nil` when it is the only one. Set once, where the box is parsed.
    public var ordinalNumber: Int?

    /// Creates a node.
    public init(header: BoxHeader, version: UInt8? = nil, flags: UInt32? = nil, content: BoxContent, children: [BoxNode] = [], isTruncated: Bool = false, payload: ArraySlice<UInt8> = []) {
        self.header = header
        self.version = version
        self.flags = flags
        self.content = content
        self.children = children
        self.isTruncated = isTruncated
        self.payload = payload
    }

    /// The box type.
    public var type: FourCC { header.type }

    /// The first child of `type`.
    public func first(_ type: FourCC) -> BoxNode? { children.first { $0.type == type } }

    /// All children of `type`, in order.
    public func all(_ type: FourCC) -> [BoxNode] { children.filter { $0.type == type } }

    /// The sample table of child `type` (`stts`, `stsz`, `stco`, ...), when present and parsed.
    public func table(_ type: FourCC) -> SampleTableData? { first(type)?.sampleTable }

    /// This box's table, when it is a parsed sample-table box (``SampleTableBoxModel``).
    public var sampleTable: SampleTableData? {
        if case .model(let model) = content { return model.base.asSampleTableBox?.table }
        return nil
    }

    /// This box's decoder configuration, when it is a parsed ``CodecConfigurationBoxModel``.
    public var codecConfiguration: CodecConfiguration? {
        if case .model(let model) = content { return model.base.asCodecConfigurationBox.map(CodecConfiguration.init) }
        return nil
    }

    /// The fields a dump shows (`mp4probe boxes`, text and JSON), in order: the model's, the
    /// sample entry's, the declared entry count of `stsd`/`dref`, or why the payload did not
    /// parse. Empty for containers and raw boxes.
    public var fields: [(name: String, value: FieldValue)] {
        switch content {
        case .container, .raw: return []
        case .model(let model): return model.base.fields
        case .sampleEntry(let entry): return entry.fields
        case .sampleDescription(let count), .dataReference(let count): return [("entryCount", .uint(UInt64(count)))]
        case .invalid(let error): return [("error", .string(error.message))]
        }
    }

    /// The box's entries for a `--full` dump, when its model is a ``TabularBoxModel``.
    public var tabularModel: (any TabularBoxModel)? {
        if case .model(let model) = content { return model.base.asTabularBox }
        return nil
    }

    /// The first descendant reached by following `types` one level at a time.
    public func descendant(_ types: FourCC...) -> BoxNode? {
        var node: BoxNode? = self
        for type in types { node = node?.first(type) }
        return node
    }

    /// What a walk does after visiting a box.
    public enum WalkStep: Sendable {
        /// Visit its children next.
        case descend
        /// Go on with its next sibling, not its children.
        case skipChildren
        /// End the walk.
        case stop
    }

    /// The one walk of a box tree: depth-first, each box with its path, the visitor deciding
    /// whether to descend, skip the children or stop. Returns false when it was stopped.
    @discardableResult
    public func walk(path: BoxPath, _ visit: (BoxNode, BoxPath) throws -> WalkStep) rethrows -> Bool {
        switch try visit(self, path) {
        case .stop: return false
        case .skipChildren: return true
        case .descend: break
        }
        for (child, childPath) in zip(children, BoxNode.childPaths(children, parent: path)) {
            guard try child.walk(path: childPath, visit) else { return false }
        }
        return true
    }

    /// The paths of `children` under `parent`, from their ``ordinalNumber``s.
    public static func childPaths(_ children: [BoxNode], parent: BoxPath) -> [BoxPath] {
        children.map { parent.appending($0.type, ordinalNumber: $0.ordinalNumber) }
    }

    /// The ordinal numbers of boxes of `types`, in order: types that occur more than once are
    /// numbered from 1, the others have none. The one place siblings are numbered.
    public static func ordinalNumbers(of types: [FourCC]) -> [Int?] {
        var totals: [FourCC: Int] = [:]
        for type in types { totals[type, default: 0] += 1 }
        var seen: [FourCC: Int] = [:]
        return types.map { type in
            seen[type, default: 0] += 1
            return (totals[type] ?? 0) > 1 ? seen[type] : nil
        }
    }
}
