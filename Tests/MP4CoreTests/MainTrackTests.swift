import Testing
@testable import MP4Core

/// The one "main track" rule (issue 34: it was written four times): the first video track,
/// else the first audio track, else the first.
@Suite struct MainTrackTests {
    @Test func videoThenAudioThenTheFirst() {
        let cases: [([Track.Kind], Int?)] = [
            ([.audio, .video, .video], 1),
            ([.text, .audio, .audio], 1),
            ([.text, .other], 0),
            ([.audio], 0),
            ([], nil),
        ]
        for (kinds, expected) in cases {
            #expect(Array(kinds.enumerated()).mainTrack { $0.element }?.offset == expected, "\(kinds)")
        }
    }
}
