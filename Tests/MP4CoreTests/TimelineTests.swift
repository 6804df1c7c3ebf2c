import Testing
@testable import MP4Core

@Suite struct TimelineTests {
    typealias Entry = EditListBox.Entry

    @Test func singleEditSkipsPriming() {
        let t = Timeline(editList: EditListBox(entries: [Entry(segmentDuration: 2000, mediaTime: 1024, mediaRate: 1)]), movieTimescale: 1000, mediaTimescale: 48000)
        #expect(t.presentationTime(ofMediaTime: 1024) == 0)
        #expect(t.presentationTime(ofMediaTime: 0) == -1024.0 / 48000)
        #expect(t.mediaTime(atPresentation: 1) == 48000 + 1024)
        #expect(t.ffprobeShift == -1024)
    }

    @Test func emptyEditDelaysAndSecondEditContinues() {
        let t = Timeline(editList: EditListBox(entries: [
            Entry(segmentDuration: 500, mediaTime: -1, mediaRate: 1),
            Entry(segmentDuration: 1000, mediaTime: 0, mediaRate: 1),
            Entry(segmentDuration: 1000, mediaTime: 90000, mediaRate: 1),
        ]), movieTimescale: 1000, mediaTimescale: 90000)
        #expect(t.presentationTime(ofMediaTime: 0) == 0.5)
        #expect(t.presentationTime(ofMediaTime: 90000 + 45000) == 2.0)
        #expect(t.mediaTime(atPresentation: 1.75) == 90000 + 22500)
        #expect(t.ffprobeShift == 45000)
    }

    /// Edit values are attacker-controlled 64-bit numbers: extreme ones must not trap.
    @Test func extremeEditValuesDoNotTrap() {
        let hostile: [[Entry]] = [
            [Entry(segmentDuration: UInt64.max, mediaTime: Int64.max - 10, mediaRate: 1)],
            [Entry(segmentDuration: UInt64.max, mediaTime: Int64.min, mediaRate: 1)],
            [Entry(segmentDuration: UInt64.max, mediaTime: -1, mediaRate: 1), Entry(segmentDuration: UInt64.max, mediaTime: 5, mediaRate: 1)],
            [Entry(segmentDuration: 1, mediaTime: Int64.min + 1, mediaRate: 1), Entry(segmentDuration: 0, mediaTime: Int64.max, mediaRate: 1)],
        ]
        for entries in hostile {
            let t = Timeline(editList: EditListBox(entries: entries), movieTimescale: 1, mediaTimescale: UInt32.max)
            for media: Int64 in [Int64.min, -1, 0, 1, Int64.max] {
                #expect(!t.presentationTime(ofMediaTime: media).isNaN)
            }
            for seconds in [-1e300, 0, 1e300] { _ = t.mediaTime(atPresentation: seconds) }
            _ = t.ffprobeShift
        }
    }
}
