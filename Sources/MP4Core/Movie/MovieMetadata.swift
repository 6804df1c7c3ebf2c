/// What a movie says about itself beyond its tracks, as ffprobe's format tags and chapters
/// show it: tags from iTunes metadata (`moov/udta/meta/ilst`), QuickTime metadata keys
/// (`moov/meta/keys` + `ilst`) and QuickTime user-data text (`moov/udta/©nam`...), the
/// creation time of `mvhd`, and chapters (Nero `chpl`; titles of a QuickTime chapter track are
/// read by ``MP4File/readingChapterTitles(from:limits:)``).
public struct MovieMetadata: Sendable, Hashable {
    /// One tag: its name as ffprobe shows it (`title`, `encoder`, `com.apple.quicktime.make`)
    /// and its value as text (images as `image/jpeg, N bytes`).
    public struct Tag: Sendable, Hashable {
        public var key: String
        public var value: String
    }

    /// One chapter.
    public struct Chapter: Sendable, Hashable {
        public var startSeconds: Double
        public var title: String
    }

    /// Where the chapters come from.
    public enum ChapterSource: String, Sendable, Hashable {
        case neroChapterList = "chpl"
        case chapterTrack = "chapter-track"
    }

    /// Tags in file order; at most ``maximumTags``. A key may repeat (``dictionary`` keeps the
    /// last value, as ffprobe shows it).
    public var tags: [Tag]

    /// The tags as ffprobe's dictionary has them: for a key that repeats, its last value.
    public var dictionary: [Tag] {
        var last: [String: Int] = [:]
        for (index, tag) in tags.enumerated() { last[tag.key] = index }
        return tags.enumerated().filter { last[$0.element.key] == $0.offset }.map(\.element)
    }
    /// Chapters in time order; at most ``maximumChapters``.
    public var chapters: [Chapter]
    public var chapterSource: ChapterSource?
    /// The track holding chapter titles (`tref/chap` of another track), when there is one.
    public var chapterTrackID: UInt32?

    /// Bounds: a hostile file may list millions of items.
    public static let maximumTags = 512
    public static let maximumChapters = 1024

    /// The value of the tag named `key` (the last when it repeats).
    public func tag(_ key: String) -> String? { tags.last { $0.key == key }?.value }

    /// Reads the metadata of a parsed `moov`.
    public init(moov: BoxNode) {
        var tags: [Tag] = []
        func add(_ key: String, _ value: String) {
            guard tags.count < Self.maximumTags, !value.isEmpty else { return }
            tags.append(Tag(key: key, value: String(value.prefix(4096))))
        }
        if let header = moov.first(.mvhd)?.model(MovieHeaderBox.self), header.creationTime > 0,
           let text = Self.isoDate(secondsSince1904: header.creationTime) {
            add("creation_time", text)
        }
        // In file order, as ffmpeg reads them (a later value of a key replaces an earlier one
        // in its dictionary: ``dictionary`` keeps the last).
        func readMeta(_ meta: BoxNode) {
            let keys = meta.first("keys")?.model(MetadataKeysBox.self)?.keys
            for item in meta.first(.ilst)?.children ?? [] {
                guard let value = Self.itemValue(item) else { continue }
                if let keys {
                    // QuickTime metadata: items are 1-based indices into keys.
                    let index = Int(item.type.rawValue)
                    if index >= 1, index <= keys.count { add(keys[index - 1].name, value) }
                } else if item.type == "----" {
                    // iTunes free-form item: mean, name, data.
                    if let name = item.first("name"), name.payload.count > 4 { add(String(decoding: name.payload.dropFirst(4), as: UTF8.self), value) }
                } else {
                    add(Self.tagName(item.type), value)
                }
            }
        }
        let udta = moov.first(.udta)
        for child in moov.children {
            if child.type == .meta { readMeta(child) }
            guard child.type == .udta else { continue }
            for entry in child.children {
                if entry.type == .meta { readMeta(entry); continue }
                if let loci = entry.model(LocationInformationBox.self) {
                    add("location", loci.iso6709)
                    if loci.language != "und", !loci.language.hasPrefix("mac:") { add("location-" + loci.language, loci.iso6709) }
                    continue
                }
                // QuickTime user-data text ('©nam': a length and a language, then text); with
                // a language, ffmpeg also names it key-lang ("location-eng").
                guard entry.type.rawValue >> 24 == 0xA9, entry.children.isEmpty else { continue }
                var reader = ByteReader(Array(entry.payload))
                guard let length = try? reader.readUInt16(), let language = try? reader.readUInt16(),
                      let text = try? reader.readBytes(min(Int(length), reader.remaining)) else { continue }
                let key = Self.tagName(entry.type), value = String(decoding: text, as: UTF8.self)
                add(key, value)
                let code = MediaHeaderBox.language(language)
                if code != "und", !code.hasPrefix("mac:") { add(key + "-" + code, value) }
            }
        }
        self.tags = tags
        var chapters: [Chapter] = []
        var source: ChapterSource?
        if let list = udta?.first("chpl")?.model(NeroChapterListBox.self), !list.chapters.isEmpty {
            chapters = list.chapters.prefix(Self.maximumChapters).map { Chapter(startSeconds: Double($0.start) / 10_000_000, title: $0.title) }
            source = .neroChapterList
        }
        self.chapters = chapters
        self.chapterSource = source
        // tref/chap: the referenced track holds chapter titles as text samples.
        var chapterTrack: UInt32?
        for trak in moov.all(.trak) {
            guard let chap = trak.first(.tref)?.first("chap"), chap.payload.count >= 4 else { continue }
            var reader = ByteReader(Array(chap.payload.prefix(4)))
            chapterTrack = try? reader.readUInt32()
            break
        }
        self.chapterTrackID = chapterTrack
    }

    /// The text of an `ilst` item's first `data` box (`trkn`/`disk` as `n/m`).
    static func itemValue(_ item: BoxNode) -> String? {
        guard let data = item.first("data")?.model(MetadataValueBox.self) else { return nil }
        if (item.type == "trkn" || item.type == "disk"), data.typeIndicator & 0xFF_FFFF == 0, data.value.count >= 6 {
            let bytes = Array(data.value)
            let number = Int(bytes[2]) << 8 | Int(bytes[3]), total = Int(bytes[4]) << 8 | Int(bytes[5])
            return total > 0 ? "\(number)/\(total)" : "\(number)"
        }
        return data.summary
    }

    /// ffprobe's names for the well-known items; others by their four characters.
    static func tagName(_ type: FourCC) -> String {
        // A switch, not a dictionary: building one costs more than a small file's whole parse.
        switch type.rawValue {
        case 0xA96E_616D: return "title"
        case 0xA941_5254: return "artist"
        case 0xA961_6C62: return "album"
        case 0xA963_6D74: return "comment"
        case 0xA964_6179: return "date"
        case 0xA967_656E: return "genre"
        case 0xA974_6F6F, 0xA965_6E63, 0xA973_7772: return "encoder"
        case 0xA977_7274: return "composer"
        case 0xA96C_7972: return "lyrics"
        case 0xA967_7270: return "grouping"
        case 0xA963_7079: return "copyright"
        case 0xA964_6573: return "description"
        case 0xA96D_616B: return "make"
        case 0xA96D_6F64: return "model"
        case 0xA978_797A: return "location"
        default: break
        }
        switch type {
        case "aART": return "album_artist"
        case "desc": return "description"
        case "ldes": return "synopsis"
        case "cprt": return "copyright"
        case "trkn": return "track"
        case "disk": return "disc"
        case "tvsh": return "show"
        case "tven": return "episode_id"
        case "tvsn": return "season_number"
        case "tves": return "episode_sort"
        case "covr": return "cover"
        default: return type.description
        }
    }

    /// `seconds` since 1904-01-01 (the QuickTime epoch) as ISO 8601 UTC, `nil` when absurd. A
    /// value before 1970 is taken as seconds since 1970, as ffmpeg does: writers that used the
    /// Unix epoch by mistake are common, movies from the 1960s are not.
    static func isoDate(secondsSince1904: UInt64) -> String? {
        let raw = Int64(clamping: secondsSince1904)
        let unix = raw >= 2_082_844_800 ? raw - 2_082_844_800 : raw
        guard unix > -2_082_844_800, unix < 253_402_300_800 else { return nil }  // years 1904...9999
        let date = CivilDate(unixSeconds: unix)
        let two = CivilDate.two, seconds = date.secondOfDay
        return "\(date.year)-\(two(date.month))-\(two(date.day))T\(two(seconds / 3600)):\(two(seconds / 60 % 60)):\(two(seconds % 60)).000000Z"
    }
}
