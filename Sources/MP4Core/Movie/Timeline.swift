/// Maps a track's media times (composition times in the media time scale) to presentation
/// times in seconds, applying the edit list (ISO/IEC 14496-12 §8.6.6): empty edits delay the
/// track, `media_time` skips the start of the media (encoder priming, stream-copy cuts), and
/// several edits play several media ranges in turn. Rates other than 1 are treated as 1.
public struct Timeline: Sendable, Hashable {
    /// One edit: media times `[mediaStart, mediaStart + mediaDuration)` play from
    /// `presentationStart` seconds.
    public struct Segment: Sendable, Hashable {
        public var presentationStart: Double
        public var mediaStart: Int64
        /// Media duration in media units; `nil` for "to the end of the media".
        public var mediaDuration: Int64?
    }

    /// The media time scale.
    public let mediaTimescale: UInt32
    /// Where the edit list's last edit ends, seconds; `nil` without an edit list or when the
    /// last edit runs to the end of the media.
    public let presentationEnd: Double?
    /// Non-empty edits in presentation order (one identity segment without an edit list).
    public let segments: [Segment]

    /// A timeline from an edit list (or none), the movie and media time scales.
    public init(editList: EditListBox?, movieTimescale: UInt32, mediaTimescale: UInt32) {
        self.mediaTimescale = mediaTimescale
        guard let entries = editList?.entries, !entries.isEmpty, movieTimescale > 0, mediaTimescale > 0 else {
            segments = [Segment(presentationStart: 0, mediaStart: 0, mediaDuration: nil)]
            presentationEnd = nil
            return
        }
        var segments: [Segment] = []
        var start = 0.0
        for (i, entry) in entries.enumerated() {
            let seconds = Double(entry.segmentDuration) / Double(movieTimescale)
            if !entry.isEmpty {
                // A zero duration on the last edit (common in fragmented files) means "to the end".
                let open = entry.segmentDuration == 0 && i == entries.count - 1
                let media = open ? nil : Self.clampedInt64(seconds * Double(mediaTimescale))
                segments.append(Segment(presentationStart: start, mediaStart: entry.mediaTime, mediaDuration: media))
            }
            start += seconds
        }
        // An edit list whose edits all have a duration ends where the last one does.
        presentationEnd = segments.last.map { $0.mediaDuration == nil } ?? true ? nil : start
        self.segments = segments.isEmpty ? [Segment(presentationStart: start, mediaStart: 0, mediaDuration: nil)] : segments
    }

    /// Presentation time in seconds of media time `time`, through the first edit that plays
    /// it; times before the first edit's media start map before its presentation start
    /// (negative for priming samples). Differences of file-derived 64-bit values are taken
    /// in floating point, so no input can overflow.
    public func presentationTime(ofMediaTime time: Int64) -> Double {
        let scale = Double(max(mediaTimescale, 1))
        func offset(_ segment: Segment) -> Double { (Double(time) - Double(segment.mediaStart)) / scale }
        for segment in segments where time >= segment.mediaStart {
            if let length = segment.mediaDuration {
                let (end, overflow) = segment.mediaStart.addingReportingOverflow(length)
                if !overflow && time >= end { continue }
            }
            return segment.presentationStart + offset(segment)
        }
        let first = segments[0]
        if time < first.mediaStart { return first.presentationStart + offset(first) }
        let last = segments[segments.count - 1]
        return last.presentationStart + offset(last)
    }

    /// The media time shown at presentation time `seconds` (clamped into the edits).
    public func mediaTime(atPresentation seconds: Double) -> Int64 {
        let scale = Double(max(mediaTimescale, 1))
        var chosen = segments[0]
        for segment in segments where segment.presentationStart <= seconds { chosen = segment }
        return Self.clampedInt64(Double(chosen.mediaStart) + (seconds - chosen.presentationStart) * scale)
    }

    /// The shift ffprobe applies to this track's timestamps (media units): ffprobe reports
    /// `time + shift` for a single leading edit.
    public var ffprobeShift: Int64 {
        let first = segments[0]
        return Self.clampedInt64(first.presentationStart * Double(mediaTimescale) - Double(first.mediaStart))
    }

    /// `value` rounded down into the Int64 range (NaN gives 0): never traps.
    static func clampedInt64(_ value: Double) -> Int64 {
        guard !value.isNaN else { return 0 }
        return Int64(max(min(value, 9.2e18), -9.2e18).rounded(.down))
    }
}
