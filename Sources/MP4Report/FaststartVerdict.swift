import MP4Core

extension MP4File {
    /// The faststart verdict as `info` states it, and the inspector page shows it: whether
    /// `moov` comes before the media, where each is, and what a progressive player must
    /// download before playback ("yes — moov at 28 (1.2 KiB), before mdat at 2,144; playback
    /// can start after 1.2 KiB").
    public var faststartVerdict: String {
        let layout = self.layout
        switch layout.moviePlacement {
        case .beforeMediaData:
            if let moov = layout.movieBox, layout.firstMediaDataBox == nil, let fragments = layout.indexedRanges.first {
                return "yes — moov at \(Format.grouped(moov.offset)) (\(Format.bytes(moov.size))), before the fragments at \(Format.grouped(fragments.range.lowerBound)); \(firstFragmentStart(layout))"
            }
            if let moov = layout.movieBox, layout.firstMediaDataBox == nil, layout.walkStoppedAt != nil, let fragment = layout.boxes.first(where: { $0.type == .moof }) {
                return "yes — moov at \(Format.grouped(moov.offset)) (\(Format.bytes(moov.size))), before the first movie fragment at \(Format.grouped(fragment.offset)); \(firstFragmentStart(layout))"
            }
            if let moov = layout.movieBox, let fragment = layout.boxes.first(where: { $0.type == .moof }), fragment.offset > moov.offset {
                return "yes — moov at \(Format.grouped(moov.offset)) (\(Format.bytes(moov.size))), before the first movie fragment at \(Format.grouped(fragment.offset)); \(firstFragmentStart(layout))"
            }
            guard let moov = layout.movieBox, let mdat = layout.firstMediaDataBox else { return "yes" }
            return "yes — moov at \(Format.grouped(moov.offset)) (\(Format.bytes(moov.size))), before mdat at \(Format.grouped(mdat.offset)); playback can start after \(Format.bytes(moov.availableEnd))"
        case .afterMediaData:
            guard let moov = layout.movieBox, let mdat = layout.firstMediaDataBox else { return "NO" }
            let end = moov.availableEnd
            let atEnd = end >= layout.fileSize
            let place = atEnd ? "moov at end (offset \(Format.grouped(moov.offset)), \(Format.bytes(moov.size)))" : "moov at \(Format.grouped(moov.offset)) (\(Format.bytes(moov.size))), after mdat at \(Format.grouped(mdat.offset))"
            // What each kind of player pays (measured in docs/serving.md: players that read
            // ranges started in 0.08-1.2 s on a 124 MiB film).
            let withoutRanges = atEnd ? "the whole \(Format.bytes(layout.fileSize))" : "\(Format.bytes(end)) of \(Format.bytes(layout.fileSize)) (up to the end of moov)"
            return "NO — \(place); players that read ranges (browsers, AVPlayer, ExoPlayer, ffmpeg) fetch moov first: an extra round trip and \(Format.bytes(moov.size)) before the first frame; a player or server without ranges must download \(withoutRanges) before playback"
        case .noMediaData:
            return kind == .initSegment ? "n/a — init segment, no media data" : "n/a — moov without media data"
        case .noMovie:
            return kind == .mediaSegment ? "n/a — media segment, no moov" : "NO — no moov box"
        }
    }

    /// The bytes from the start a player reading front to back has before it can show the
    /// first frame: up to the end of `moov` for a progressive file (the whole file up to it when
    /// `moov` comes last), up to the end of the first fragment's `mdat` for a fragmented one
    /// (its `moov` holds no samples); `nil` without `moov`.
    public var bytesBeforePlayback: UInt64? {
        let layout = self.layout
        guard let moov = layout.movieBox else { return nil }
        if layout.moviePlacement == .beforeMediaData, let index = layout.boxes.firstIndex(where: { $0.type == .moof }), layout.boxes[index].offset > moov.offset {
            let next = index + 1
            return next < layout.boxes.count && layout.boxes[next].type == .mdat ? layout.boxes[next].availableEnd : layout.boxes[index].availableEnd
        }
        if layout.moviePlacement == .beforeMediaData, layout.firstMediaDataBox == nil, let fragments = layout.indexedRanges.first,
           let first = fragments.subsegments.first {
            return first.upperBound
        }
        return moov.availableEnd
    }

    /// When a fragmented film can start: after its first fragment (`moof` and its `mdat`),
    /// not after `moov` alone, whose tracks hold no samples.
    private func firstFragmentStart(_ layout: FileLayout) -> String {
        guard let index = layout.boxes.firstIndex(where: { $0.type == .moof }) else { return "playback can start after the first fragment" }
        let moof = layout.boxes[index]
        if index + 1 < layout.boxes.count, layout.boxes[index + 1].type == .mdat {
            return "playback can start after the first fragment, \(Format.bytes(layout.boxes[index + 1].availableEnd)) from the start (moov, moof and its mdat)"
        }
        return "playback can start after the first fragment, which begins at \(Format.grouped(moof.offset)) (its moof \(Format.bytes(moof.size)), then its mdat)"
    }
}
