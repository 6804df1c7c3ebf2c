/// The "shall"s of ISO/IEC 14496-12 (ISO BMFF, 2022 edition) that can be checked from the
/// boxes `MP4File` loads (`ftyp`, `moov` and the top-level layout), each a finding of the
/// `conformance` category whose message and ``rule(_:)`` name the spec's section. Decided
/// here from the parsed tree, without I/O; `check --conformance` makes them errors
/// (``CheckPolicy/conformance``), the default check ("will it play and transcode") does not
/// look at them.
///
/// QuickTime files (major brand `qt  `, or no `ftyp` and QuickTime's component types in
/// `hdlr`) are judged by QuickTime's rules: no `ftyp` needed, `hdlr` is a component
/// description (its fields and Pascal-string name are QuickTime's), `gmhd` is a media header.
/// Media segments (`styp`, `moof` without `moov`) are judged as segments: none of the movie's
/// rules apply.
public enum Conformance {
    /// One rule: its finding kind, the section, the rule as the spec words it, and what to do.
    public struct Rule: Sendable, Hashable {
        public var kind: Finding.Kind
        /// `§8.4.3.3` of ISO/IEC 14496-12:2022.
        public var section: String
        public var rule: String
        public var remedy: String
    }

    /// Every rule, in the order `check --explain` and docs/check.md list them.
    public static let rules: [Rule] = [
        Rule(kind: .isoFileType, section: "§4.3.1",
             rule: "A file has exactly one FileTypeBox ('ftyp'), placed as early as possible: before any significant variable-size box such as 'moov', 'mdat' or 'free' (a segment may start with 'styp' instead; a media segment need not have either, §8.16.2 only recommends 'styp').",
             remedy: "Remux with a tool that writes 'ftyp' first (ffmpeg -c copy, MP4Box -add); QuickTime files may lack it (judged as QuickTime)."),
        Rule(kind: .isoMovieCount, section: "§8.2.1",
             rule: "A presentation has exactly one MovieBox ('moov') at the top level.",
             remedy: "Remux (ffmpeg -c copy): a second 'moov' is usually left by an append or an interrupted faststart."),
        Rule(kind: .isoBoxCount, section: "§8.1-§8.7 (Table 1)",
             rule: "Each container holds its mandatory boxes exactly once and no box more often than allowed: 'moov' one 'mvhd'; 'trak' one 'tkhd' and one 'mdia'; 'mdia' one 'mdhd', 'hdlr' and 'minf'; 'minf' one media header ('vmhd', 'smhd', 'hmhd', 'sthd', 'nmhd'), one 'dinf' and one 'stbl'; 'dinf' one 'dref'; 'stbl' one 'stsd', 'stts', 'stsc', one of 'stsz'/'stz2' and one of 'stco'/'co64', at most one 'ctts', 'cslg', 'stss', 'stsh', 'padb', 'stdp', 'sdtp'; 'edts' at most one 'elst'; 'mvex' at most one 'mehd'.",
             remedy: "Remux with a conforming writer; a tool that hand-edits boxes left the container incomplete or doubled."),
        Rule(kind: .isoTrackID, section: "§8.3.2.3",
             rule: "track_ID uniquely identifies a track over the presentation's life and cannot be zero.",
             remedy: "Remux (ffmpeg -c copy renumbers tracks); files joined by hand often repeat IDs."),
        Rule(kind: .isoNextTrackID, section: "§8.2.2.3",
             rule: "next_track_ID is non-zero and larger than the largest track_ID in use (or all 1s: search for an unused ID).",
             remedy: "Remux; a writer that added tracks did not update 'mvhd'."),
        Rule(kind: .isoHandlerFields, section: "§8.4.3.2, §8.4.3.3",
             rule: "In 'hdlr', pre_defined is 0, the three reserved words are 0, and name is a null-terminated UTF-8 string. (iTunes metadata, 'meta' with handler 'mdir', may carry 'appl' in the first reserved word, as every Apple and ffmpeg file does.)",
             remedy: "Remux with a conforming writer (QuickTime files are judged by QuickTime's component description instead)."),
        Rule(kind: .isoSizeZero, section: "§4.2",
             rule: "A box whose size is 0 extends to the end of the file and shall be the last box in the file: only the last top-level box may have size 0.",
             remedy: "Rewrite the box with its real size (a writer that could not seek back left 0); a nested box of size 0 is always wrong."),
        Rule(kind: .isoDataReference, section: "§8.7.2.3",
             rule: "'dref' holds at least one entry, and each sample entry's data_reference_index is between 1 and that count.",
             remedy: "Remux: the sample descriptions point at data references the file does not have."),
    ]

    /// The rule for `kind`, if it is a conformance kind.
    public static func rule(_ kind: Finding.Kind) -> Rule? { rules.first { $0.kind == kind } }

    /// Every conformance finding of `file`, at its default severity (a warning).
    public static func findings(_ file: MP4File) -> [Finding] {
        var findings: [Finding] = []
        let quickTime = isQuickTime(file)
        fileType(file, quickTime: quickTime, into: &findings)
        sizeZero(file, into: &findings)
        guard file.kind != .mediaSegment else { return findings }
        let movies = file.layout.boxes.filter { $0.type == .moov }
        if movies.count > 1 {
            findings.append(finding(.isoMovieCount, "\(movies.count) 'moov' boxes at the top level (at \(movies.map { String($0.offset) }.joined(separator: ", ")))", offset: movies[1].offset, path: .top(.moov)))
        }
        if let movie = file.movieBox {
            let path = BoxPath.top(.moov)
            boxCounts(movie, path: path, quickTime: quickTime, into: &findings)
            trackIDs(movie, into: &findings)
            if !quickTime { handlers(movie, path: path, into: &findings) }
            dataReferences(movie, path: path, into: &findings)
        }
        return findings
    }

    static func finding(_ kind: Finding.Kind, _ message: String, offset: UInt64?, path: BoxPath?) -> Finding {
        Finding(kind, message: "\(message) (ISO/IEC 14496-12 \(rule(kind)?.section ?? ""))", offset: offset, path: path)
    }

    /// QuickTime's rules apply: the major brand says so, or there is no `ftyp` and a handler
    /// carries QuickTime's component type.
    static func isQuickTime(_ file: MP4File) -> Bool {
        if let fileType = file.fileType { return fileType.isQuickTime }
        guard let movie = file.movieBox else { return false }
        return descendants(movie).contains { $0.model(HandlerBox.self).map { $0.componentType.rawValue != 0 } ?? false }
    }

    private static func fileType(_ file: MP4File, quickTime: Bool, into findings: inout [Finding]) {
        let boxes = file.layout.boxes
        let kinds = boxes.filter { $0.type == .ftyp }
        if kinds.count > 1 {
            findings.append(finding(.isoFileType, "\(kinds.count) 'ftyp' boxes", offset: kinds[1].offset, path: .top(.ftyp)))
        }
        let significant: Set<FourCC> = [.moov, .mdat, .free, .skip, .moof, .mfra, .sidx]
        guard let first = boxes.firstIndex(where: { $0.type == .ftyp || $0.type == .styp }) else {
            // A media segment is only recommended to start with 'styp' (§8.16.2).
            if !quickTime && !boxes.isEmpty && file.kind != .mediaSegment {
                findings.append(finding(.isoFileType, "the file has no 'ftyp'", offset: 0, path: nil))
            }
            return
        }
        if let before = boxes[..<first].first(where: { significant.contains($0.type) }) {
            findings.append(finding(.isoFileType, "'\(boxes[first].type)' at \(boxes[first].offset) comes after '\(before.type)' at \(before.offset)", offset: boxes[first].offset, path: .top(boxes[first].type)))
        }
    }

    private static func sizeZero(_ file: MP4File, into findings: inout [Finding]) {
        let boxes = file.layout.boxes
        for (index, box) in boxes.enumerated() where box.header.extendsToEnd && index != boxes.count - 1 {
            findings.append(finding(.isoSizeZero, "'\(box.type)' has size 0 but is not the last box of the file", offset: box.offset, path: .top(box.type)))
        }
        for node in file.topLevelNodes {
            walk(node, path: .top(node.type)) { child, path in
                if child.header.extendsToEnd {
                    findings.append(finding(.isoSizeZero, "'\(child.type)' inside '\(path.components.dropLast().last?.type.description ?? "")' has size 0: only the file's last box may", offset: child.header.offset, path: path))
                }
            }
        }
    }

    /// What each container must hold: (children that must appear exactly once, groups of
    /// which exactly one member must appear, children allowed at most once).
    private static let arity: [FourCC: (once: [FourCC], oneOf: [[FourCC]], atMostOnce: [FourCC])] = [
        .moov: ([.mvhd], [], [.mvex]),
        .trak: ([.tkhd, .mdia], [], [.edts, .tref]),
        .mdia: ([.mdhd, .hdlr, .minf], [], []),
        .minf: ([.dinf, .stbl], [["vmhd", "smhd", "hmhd", "sthd", "nmhd"]], []),
        .dinf: ([.dref], [], []),
        .stbl: ([.stsd, .stts, .stsc], [[.stsz, .stz2], [.stco, .co64]], [.ctts, "cslg", .stss, "stsh", "padb", "stdp", .sdtp]),
        .edts: ([], [], [.elst]),
        .mvex: ([], [], [.mehd]),
    ]

    private static func boxCounts(_ movie: BoxNode, path: BoxPath, quickTime: Bool, into findings: inout [Finding]) {
        check(movie, path: path, quickTime: quickTime, into: &findings)
        walk(movie, path: path) { node, path in check(node, path: path, quickTime: quickTime, into: &findings) }
    }

    private static func check(_ node: BoxNode, path: BoxPath, quickTime: Bool, into findings: inout [Finding]) {
        guard var rule = arity[node.type] else { return }
        if quickTime && node.type == .minf {
            // QuickTime: a base media information header ('gmhd') serves text, timecode and
            // other tracks; 'minf' also holds a data handler's 'hdlr'.
            rule.oneOf = [["vmhd", "smhd", "hmhd", "sthd", "nmhd", "gmhd"]]
        }
        let counts = Dictionary(node.children.map { ($0.type, 1) }, uniquingKeysWith: +)
        for type in rule.once where counts[type, default: 0] != 1 {
            let count = counts[type, default: 0]
            findings.append(finding(.isoBoxCount, "'\(node.type)' holds \(count == 0 ? "no" : "\(count)") '\(type)' (exactly one is required)", offset: node.header.offset, path: path))
        }
        for group in rule.oneOf {
            let count = group.reduce(0) { $0 + counts[$1, default: 0] }
            guard count != 1 else { continue }
            let names = group.map { "'\($0)'" }.joined(separator: " or ")
            findings.append(finding(.isoBoxCount, "'\(node.type)' holds \(count == 0 ? "none" : "\(count)") of \(names) (exactly one is required)", offset: node.header.offset, path: path))
        }
        for type in rule.atMostOnce where counts[type, default: 0] > 1 {
            findings.append(finding(.isoBoxCount, "'\(node.type)' holds \(counts[type, default: 0]) '\(type)' (at most one is allowed)", offset: node.header.offset, path: path))
        }
    }

    private static func trackIDs(_ movie: BoxNode, into findings: inout [Finding]) {
        var seen: [UInt32: Int] = [:]
        var largest: UInt32 = 0
        for (index, trak) in movie.children.filter({ $0.type == .trak }).enumerated() {
            guard let tkhd = trak.children.first(where: { $0.type == .tkhd }), let header = tkhd.model(TrackHeaderBox.self) else { continue }
            let path = BoxPath.top(.moov).appending(.trak, ordinalNumber: trak.ordinalNumber).appending(.tkhd)
            if header.trackID == 0 {
                findings.append(finding(.isoTrackID, "track \(index + 1) has track_ID 0", offset: tkhd.header.offset, path: path))
            } else if let earlier = seen[header.trackID] {
                findings.append(finding(.isoTrackID, "tracks \(earlier) and \(index + 1) both have track_ID \(header.trackID)", offset: tkhd.header.offset, path: path))
            }
            seen[header.trackID] = seen[header.trackID] ?? index + 1
            largest = max(largest, header.trackID)
        }
        if let mvhd = movie.children.first(where: { $0.type == .mvhd }), let header = mvhd.model(MovieHeaderBox.self),
           header.nextTrackID != .max, header.nextTrackID == 0 || header.nextTrackID <= largest {
            findings.append(finding(.isoNextTrackID, "next_track_ID is \(header.nextTrackID) but track_ID \(largest) is in use", offset: mvhd.header.offset, path: .top(.moov).appending(.mvhd)))
        }
    }

    /// Where an 'hdlr' payload's name begins: version and flags, pre_defined, handler_type and
    /// three reserved words.
    static let handlerNameOffset = 4 + 4 + 4 + 12

    private static func handlers(_ movie: BoxNode, path: BoxPath, into findings: inout [Finding]) {
        walk(movie, path: path) { node, path in
            guard node.type == .hdlr, path.components.dropLast().last?.type == .mdia || path.components.dropLast().last?.type == .meta,
                  let handler = node.model(HandlerBox.self) else { return }
            var wrong: [String] = []
            if handler.componentType.rawValue != 0 { wrong.append("pre_defined is '\(handler.componentType)', not 0") }
            // iTunes metadata ('meta' with handler 'mdir') carries Apple's manufacturer code
            // 'appl' in the first reserved word, by its own convention (every ffmpeg and
            // Apple file): not counted.
            let itunes = handler.handlerType == .mdir && handler.reserved.prefix(4).elementsEqual("appl".utf8)
            if handler.reserved.dropFirst(itunes ? 4 : 0).contains(where: { $0 != 0 }) { wrong.append("the reserved words are not 0") }
            // Terminated anywhere: bytes after the terminator are padding (an Apple-made .m4a's
            // iTunes handler has an empty name and one byte after it).
            let name = node.payload.dropFirst(Self.handlerNameOffset)
            if handler.nameForm != .cString || !name.contains(0) { wrong.append("the name is not a null-terminated string") }
            if !wrong.isEmpty {
                findings.append(finding(.isoHandlerFields, "'hdlr' (\(handler.handlerType)): " + wrong.joined(separator: "; "), offset: node.header.offset, path: path))
            }
        }
    }

    private static func dataReferences(_ movie: BoxNode, path: BoxPath, into findings: inout [Finding]) {
        walk(movie, path: path) { node, path in
            guard node.type == .minf else { return }
            let dref = node.children.first { $0.type == .dinf }?.children.first { $0.type == .dref }
            let count = dref?.children.count ?? 0
            if let dref, case .dataReference(let declared) = dref.content, declared == 0 || count == 0 {
                findings.append(finding(.isoDataReference, "'dref' declares \(declared) and holds \(count) data references (at least one is required)", offset: dref.header.offset, path: path.appending(.dinf).appending(.dref)))
            }
            guard let stsd = node.children.first(where: { $0.type == .stbl })?.children.first(where: { $0.type == .stsd }) else { return }
            for (index, child) in stsd.children.enumerated() {
                guard case .sampleEntry(let entry) = child.content, dref != nil, child.type != .free, child.type != .skip else { continue }
                if entry.dataReferenceIndex == 0 || Int(entry.dataReferenceIndex) > count {
                    findings.append(finding(.isoDataReference, "sample entry \(index + 1) ('\(entry.format)') uses data reference \(entry.dataReferenceIndex) of \(count)", offset: child.header.offset, path: path.appending(.stbl).appending(.stsd).appending(child.type)))
                }
            }
        }
    }

    /// Calls `visit` for every descendant of `node` with its path.
    private static func walk(_ node: BoxNode, path: BoxPath, _ visit: (BoxNode, BoxPath) -> Void) {
        for child in node.children {
            let childPath = path.appending(child.type, ordinalNumber: child.ordinalNumber)
            visit(child, childPath)
            walk(child, path: childPath, visit)
        }
    }

    private static func descendants(_ node: BoxNode) -> [BoxNode] {
        node.children + node.children.flatMap(descendants)
    }
}
