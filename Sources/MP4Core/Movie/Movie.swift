/// A summary of `moov`: the movie header, the tracks and whether the movie is fragmented.
public struct Movie: Sendable, Hashable {
    /// `mvhd`.
    public var header: MovieHeaderBox?
    /// Tracks in file order.
    public var tracks: [Track]
    /// Whether `moov` has `mvex` (the samples are in movie fragments).
    public var hasMovieExtends: Bool
    /// `mvex/mehd` fragment duration, in the movie time scale.
    public var fragmentDuration: UInt64?
    /// Inconsistencies found while summarising.
    public var findings: [Finding]
    /// Tags, creation time and chapters.
    public var metadata: MovieMetadata

    /// Summarises a parsed `moov`.
    public init(moov: BoxNode) {
        var findings: [Finding] = []
        if let h = moov.first(.mvhd)?.model(MovieHeaderBox.self) { header = h } else {
            header = nil
            findings.append(Finding(.missingMvhd, message: "moov has no readable mvhd", path: .top(.moov)))
        }
        let mvex = moov.first(.mvex)
        hasMovieExtends = mvex != nil
        fragmentDuration = mvex?.first(.mehd)?.model(MovieExtendsHeaderBox.self)?.fragmentDuration
        metadata = MovieMetadata(moov: moov)
        var tracks: [Track] = []
        for (child, path) in zip(moov.children, BoxNode.childPaths(moov.children, parent: .top(.moov))) where child.type == .trak {
            tracks.append(Track(trak: child, path: path, findings: &findings))
        }
        var seen: Set<UInt32> = []
        for track in tracks where !seen.insert(track.trackID).inserted {
            findings.append(Finding(.duplicateTrackId, message: "track ID \(track.trackID) is used by more than one track", path: track.path))
        }
        if tracks.isEmpty { findings.append(Finding(.noTracks, message: "moov has no tracks", path: .top(.moov))) }
        self.tracks = tracks
        self.findings = findings
    }

    /// How long `track` plays after its edit list: the non-empty edits' durations, in seconds
    /// (what ffprobe reports as a stream's duration); `nil` without an edit list.
    public func presentationDurationSeconds(of track: Track) -> Double? {
        guard let edits = track.editList?.entries, !edits.isEmpty, let timescale = header?.timescale, timescale > 0 else { return nil }
        var total: UInt64 = 0
        for edit in edits where !edit.isEmpty { total = total &+ edit.segmentDuration }
        return Double(total) / Double(timescale)
    }

    /// The duration the segment index (`sidx`) declares: the sum of its subsegment
    /// durations, when it was read (``MP4File/completingDuration(from:)``).
    public var indexedDurationSeconds: Double?
    /// The duration the last movie fragment gives (its `tfdt` plus its samples), when the
    /// fragments were not all read (a remote file: ``MP4File/Facts/lastFragmentDuration``).
    public var lastFragmentDurationSeconds: Double?

    /// Duration in seconds, as a player sees the file: `mvhd`, unless the samples measured in
    /// `moov` and the fragments (``MP4File/Facts/fragmentTables``) run past it (a hybrid
    /// file's `mvhd` counts only the samples in `moov`: one said 0.134 s of a 1.156 s film);
    /// for a fragmented movie without it, the span its samples hold (a segment cut from a
    /// longer stream holds less than its `mehd` declares), else `mehd`, else what `sidx`
    /// declares; else the longest track.
    public var durationSeconds: Double? {
        let measured = tracks.filter(\.factsFromFragments).compactMap(\.fragmentDurationSeconds).max() ?? 0
        if let header, header.duration > 0, let seconds = header.durationSeconds { return max(seconds, measured) }
        if measured > 0 { return measured }
        if let fragmentDuration, let header, header.timescale > 0, fragmentDuration > 0 {
            return Double(fragmentDuration) / Double(header.timescale)
        }
        if let indexedDurationSeconds, indexedDurationSeconds > 0 { return indexedDurationSeconds }
        if let lastFragmentDurationSeconds, lastFragmentDurationSeconds > 0 { return lastFragmentDurationSeconds }
        return tracks.compactMap(\.durationSeconds).max()
    }
}
