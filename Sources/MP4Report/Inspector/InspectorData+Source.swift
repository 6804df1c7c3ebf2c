import MP4Core

extension InspectorData {
    /// The data of `file`, opened from `source`: its sample index comes from `moov` (no read)
    /// for a progressive file, from every `moof` for a local fragmented one (one read per
    /// fragment, never the media); a remote fragmented file is not walked (each fragment would
    /// cost a request), so its page has no chunks or seek plans. An index that cannot be built
    /// leaves them out too.
    public static func gather(_ file: MP4File, from source: some ByteSource, limits: ParseLimits = .default, cachedRanges: [Range<UInt64>]? = nil, live: Live? = nil) async -> InspectorData {
        var planner: SeekPlanner?
        if file.movie != nil {
            if !file.isFragmented {
                planner = SeekPlanner(file: file, limits: limits)
            } else if !source.isRemote {
                planner = try? await SeekPlanner.index(file, from: source, limits: limits)
            }
        }
        return InspectorData(file: file, planner: planner, cachedRanges: cachedRanges, live: live)
    }
}
