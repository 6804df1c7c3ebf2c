/// A fragmented film's duration from its last movie fragment alone: where each fragment's
/// `tfdt` says when its samples start, the last fragment's start plus its samples' durations
/// is where the film ends. Over the network that is one read of the file's end, not one
/// request per `moof`. No I/O here: the caller reads ``tailBytes`` of the end and hands
/// them over.
public enum LastFragment {
    /// How much of the file's end is read to find the last `moof`: a fragment of several
    /// seconds at a few Mbit/s. A longer last fragment (or one without `tfdt`) leaves the
    /// duration unknown.
    public static let tailBytes: UInt64 = 1 << 20

    /// Box types that may follow a fragment's `moof` to the end of a file.
    static let trailingTypes: Set<FourCC> = [.moof, .mdat, .free, .skip, .mfra, .sidx, .styp, "emsg", "prft", .udta, .meta, "uuid"]

    /// The range of the last top-level `moof` in `tail` (the file's bytes from `start` to its
    /// end at `fileSize`): the last place that holds a `moof` header whose boxes, followed
    /// by their sizes, end exactly at the end of the file. Bytes that merely spell `moof`
    /// inside media data do not chain to the end (and a chain that does is what a player
    /// would walk too).
    public static func lastMovieFragment(in tail: ArraySlice<UInt8>, start: UInt64, fileSize: UInt64) -> Range<UInt64>? {
        guard tail.count >= 16, start + UInt64(tail.count) == fileSize else { return nil }
        let base = tail.startIndex
        func header(at offset: UInt64) -> (size: UInt64, type: FourCC)? {
            guard offset >= start, offset - start + 8 <= UInt64(tail.count) else { return nil }
            let i = base + Int(offset - start)
            var size32: UInt64 = 0, raw: UInt32 = 0
            for k in 0..<4 { size32 = size32 << 8 | UInt64(tail[i + k]) }
            for k in 4..<8 { raw = raw << 8 | UInt32(tail[i + k]) }
            let type = FourCC(rawValue: raw)
            if size32 == 0 { return (fileSize - offset, type) }
            if size32 == 1 {
                guard offset - start + 16 <= UInt64(tail.count) else { return nil }
                var large: UInt64 = 0
                for k in 8..<16 { large = large << 8 | UInt64(tail[i + k]) }
                return large >= 16 ? (large, type) : nil
            }
            return size32 >= 8 ? (size32, type) : nil
        }
        var index = tail.count - 8
        while index >= 0 {
            defer { index -= 1 }
            // "moof" at index + 4.
            guard tail[base + index + 4] == 0x6D, tail[base + index + 5] == 0x6F, tail[base + index + 6] == 0x6F, tail[base + index + 7] == 0x66 else { continue }
            let offset = start + UInt64(index)
            guard let moof = header(at: offset), moof.size >= 16, moof.size <= fileSize - offset,
                  offset + moof.size <= fileSize, UInt64(index) + moof.size <= UInt64(tail.count) else { continue }
            // The boxes after it chain to the end of the file.
            var next = offset + moof.size, steps = 0
            while next < fileSize, steps < 64, let box = header(at: next), trailingTypes.contains(box.type), box.size <= fileSize - next {
                next += box.size
                steps += 1
            }
            if next == fileSize { return offset..<(offset + moof.size) }
        }
        return nil
    }

    /// When each track's samples in `moof` end, in its own timescale: its `tfdt` plus the
    /// durations of its samples (from `trun`, else `tfhd`'s default, else `trex`'s). Tracks
    /// whose `traf` has no `tfdt` are left out (their times are relative to nothing).
    static func endTimes(of moof: BoxNode, defaults: [UInt32: TrackExtendsBox], fileSize: UInt64, limits: ParseLimits) -> [UInt32: Int64] {
        var ends: [UInt32: Int64] = [:]
        var implicitBase = moof.header.offset
        for traf in moof.all(.traf) {
            guard let header = traf.first(.tfhd)?.model(TrackFragmentHeaderBox.self),
                  traf.first(.tfdt)?.model(TrackFragmentDecodeTimeBox.self) != nil else { continue }
            var builder = FragmentTableBuilder(trackID: header.trackID, defaults: defaults[header.trackID], maxSamples: limits.maxFragmentSamples, allSamplesSync: false)
            implicitBase = builder.append(traf: traf, path: .top(.moof).appending(.traf), header: header, moofOffset: moof.header.offset, implicitBase: implicitBase, fileLength: fileSize)
            let table = builder.build()
            guard let last = table.timeRuns.last else { continue }
            let (span, overflow) = Int64(last.count).multipliedReportingOverflow(by: last.delta)
            guard !overflow else { continue }
            let (end, over) = last.firstTime.addingReportingOverflow(span)
            guard !over else { continue }
            ends[header.trackID] = max(ends[header.trackID] ?? .min, end)
        }
        return ends
    }
}
