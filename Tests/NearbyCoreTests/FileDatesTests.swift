import Crypto
import Foundation
import NIOCore
import Testing
@testable import NearbyBase
@testable import NearbyTransfer
@testable import NearbyWire

/// nearby's own protocol keeps a file's modification time (issue 50): in an `open`, and in each
/// bundle record to a receiver that lists `dates`; an older peer neither sends nor reads one.
@Suite struct FileDatesTests {
    static let time: UInt64 = 981_173_106_123_456_789  // 2001-02-03 04:05:06.123456789 UTC

    @Test func anOpenCarriesItsTimeAndAnOlderReaderSkipsIt() throws {
        let open = FrameBody.Open(kind: .file, path: "a.jpg", size: 3, key: "k", modified: Self.time)
        let frame = FrameBody.frame(.open, open)
        #expect(String(buffer: frame.payload).contains(#""modified":981173106123456789"#))
        #expect(try FlatJSON.decode(FrameBody.Open.self, from: frame.payload) == open)
        #expect(try JSONDecoder().decode(FrameBody.Open.self, from: Data(frame.payload.readableBytesView)) == open)
        // Without one, the frame is what an older node sends, byte for byte.
        let old = FrameBody.frame(.open, FrameBody.Open(kind: .file, path: "a.jpg", size: 3, key: "k"))
        #expect(!String(buffer: old.payload).contains("modified"))
        #expect(FrameBody.features.contains(FrameBody.datesFeature))
    }

    @Test func bundleRecordsCarryTimesOnlyWhenBothSidesSayDates() throws {
        let content: [UInt8] = [1, 2, 3]
        var dated = ByteBuffer(), plain = ByteBuffer()
        NearbyTransfer.Bundle.writeRecord(path: "d/a", key: "k", modified: Self.time, content: ByteBuffer(bytes: content), digest: SHA256.hash(data: content), into: &dated)
        NearbyTransfer.Bundle.writeRecord(path: "d/a", key: "k", content: ByteBuffer(bytes: content), digest: SHA256.hash(data: content), into: &plain)
        #expect(dated.readableBytes == plain.readableBytes + 8)
        for cut in [1, 2, 5, 64] {
            var decoder = BundleDecoder(announced: 3, dates: true)
            var rest = dated, entries: [NearbyTransfer.Bundle.Entry] = []
            while let piece = rest.readSlice(length: min(cut, rest.readableBytes)), piece.readableBytes > 0 {
                for case let .begin(entry) in try decoder.feed(piece) { entries.append(entry) }
            }
            try decoder.close()
            #expect(entries.map(\.modified) == [Self.time], "cut every \(cut) bytes")
        }
        var older = BundleDecoder(announced: 3)
        let entries = try older.feed(plain).compactMap { if case let .begin(entry) = $0 { entry } else { nil } }
        #expect(entries.map(\.modified) == [nil])
    }

    @Test func aTimeIsGivenAsFutimensTakesItAndNoneIsLeftAlone() {
        let times = FileTimes.modification(Self.time)
        #expect(times?.count == 2)
        #expect(times?[1].tv_sec == 981_173_106 && times?[1].tv_nsec == 123_456_789)
        #expect(FileTimes.modification(nil) == nil)
        #expect(FileTimes.modification(0) == nil)
        #expect(FileTimes.modification(UInt64.max)?[1].tv_nsec == Int(UInt64.max % 1_000_000_000))
    }

    @Test func aSentFileReadsItsOwnTimeToTheNanosecond() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-dates-\(UUID().uuidString)").path
        #expect(FileManager.default.createFile(atPath: path, contents: Data([1])))
        defer { unlink(path) }
        let fd = open(path, O_RDWR)
        defer { close(fd) }
        guard let times = FileTimes.modification(Self.time) else { return #expect(Bool(false)) }
        #expect(futimens(fd, times) == 0)
        let file = try FileList.describe(path, relative: "a")
        #expect(file.modifiedNanoseconds == Self.time)
    }
}
