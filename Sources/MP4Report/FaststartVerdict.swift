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
                return "yes — moov at \(Format.grouped(moov.offset)) (\(Format.bytes(moov.size))), before the fragments at \(Format.grouped(fragments.range.lowerBound)); playback can start after \(Format.bytes(moov.availableEnd))"
            }
            if let moov = layout.movieBox, layout.firstMediaDataBox == nil, layout.walkStoppedAt != nil, let fragment = layout.boxes.first(where: { $0.type == .moof }) {
                return "yes — moov at \(Format.grouped(moov.offset)) (\(Format.bytes(moov.size))), before the first movie fragment at \(Format.grouped(fragment.offset)); playback can start after \(Format.bytes(moov.availableEnd))"
            }
            guard let moov = layout.movieBox, let mdat = layout.firstMediaDataBox else { return "yes" }
            return "yes — moov at \(Format.grouped(moov.offset)) (\(Format.bytes(moov.size))), before mdat at \(Format.grouped(mdat.offset)); playback can start after \(Format.bytes(moov.availableEnd))"
        case .afterMediaData:
            guard let moov = layout.movieBox, let mdat = layout.firstMediaDataBox else { return "NO" }
            let end = moov.availableEnd
            let whole = end >= layout.fileSize ? "the whole \(Format.bytes(layout.fileSize))" : "\(Format.bytes(end)) of \(Format.bytes(layout.fileSize)) (up to the end of moov)"
            let place = end >= layout.fileSize ? "moov at end (offset \(Format.grouped(moov.offset)), \(Format.bytes(moov.size)))" : "moov at \(Format.grouped(moov.offset)) (\(Format.bytes(moov.size))), after mdat at \(Format.grouped(mdat.offset))"
            return "NO — \(place); a progressive player must download \(whole) before playback"
        case .noMediaData:
            return kind == .initSegment ? "n/a — init segment, no media data" : "n/a — moov without media data"
        case .noMovie:
            return kind == .mediaSegment ? "n/a — media segment, no moov" : "NO — no moov box"
        }
    }
}
