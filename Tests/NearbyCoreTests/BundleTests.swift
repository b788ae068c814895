import Crypto
import NIOCore
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyTransfer

/// Issue 43: the bundle's records and results as pure state machines — whatever way the frames
/// cut them — and every bound a hostile sender or receiver could break.
@Suite struct BundleTests {
    /// `files` as the sender writes them: their records, one buffer.
    static func records(_ files: [(path: String, content: [UInt8])]) -> ByteBuffer {
        var out = ByteBuffer()
        for file in files {
            let content = ByteBuffer(bytes: file.content)
            Bundle.writeRecord(path: file.path, key: "0123456789abcdef", content: content, digest: SHA256.hash(data: file.content), into: &out)
        }
        return out
    }

    /// Feeds `data` cut into pieces of `cut` bytes; the pieces that come out, with adjacent bytes joined.
    static func decode(_ data: ByteBuffer, announced: UInt64, cut: Int) throws -> (entries: [Bundle.Entry], contents: [[UInt8]], digests: [[UInt8]]) {
        var decoder = BundleDecoder(announced: announced)
        var entries: [Bundle.Entry] = [], contents: [[UInt8]] = [], digests: [[UInt8]] = []
        var rest = data
        while rest.readableBytes > 0 {
            guard let piece = rest.readSlice(length: min(cut, rest.readableBytes)) else { break }
            for out in try decoder.feed(piece) {
                switch out {
                case let .begin(entry):
                    entries.append(entry)
                    contents.append([])
                case let .bytes(bytes): contents[contents.count - 1] += Array(bytes.readableBytesView)
                case let .end(digest): digests.append(digest)
                }
            }
        }
        try decoder.close()
        return (entries, contents, digests)
    }

    @Test(arguments: [1, 2, 3, 7, 64, 4096, 1 << 20])
    func recordsComeOutWholeHoweverTheFramesCutThem(cut: Int) throws {
        let files: [(path: String, content: [UInt8])] = [
            ("a/one.txt", Array("hello".utf8)), ("a/empty", []), ("b/ünï.bin", (0..<5000).map { UInt8($0 % 251) }), ("last", [42]),
        ]
        let total = UInt64(files.reduce(0) { $0 + $1.content.count })
        let (entries, contents, digests) = try Self.decode(Self.records(files), announced: total, cut: cut)
        #expect(entries.map(\.path) == files.map(\.path))
        #expect(entries.map(\.index) == [0, 1, 2, 3])
        #expect(entries.allSatisfy { $0.key == "0123456789abcdef" })
        #expect(contents == files.map(\.content))
        #expect(digests == files.map { Array(SHA256.hash(data: $0.content)) })
    }

    @Test func aBundleShortOfItsOfferOrCutInAFileIsRefusedAtClose() throws {
        let data = Self.records([("x", [1, 2, 3])])
        #expect(throws: BundleDecoder.Illegal.unfinished) { _ = try Self.decode(data, announced: 4, cut: 100) }
        var decoder = BundleDecoder(announced: 3)
        var head = data
        _ = try decoder.feed(head.readSlice(length: data.readableBytes - 5) ?? ByteBuffer())
        #expect(throws: BundleDecoder.Illegal.unfinished) { try decoder.close() }
        var empty = BundleDecoder(announced: 0)
        #expect(throws: BundleDecoder.Illegal.empty) { try empty.close() }
    }

    @Test func everyBoundIsCheckedBeforeAByteIsTaken() throws {
        // More bytes than the offer announced.
        #expect(throws: BundleDecoder.Illegal.pastOffer(2)) { _ = try Self.decode(Self.records([("x", [1, 2, 3])]), announced: 2, cut: 100) }
        // A file over the bound, told by its head alone.
        var big = ByteBuffer()
        big.writeInteger(UInt16(1)); big.writeString("x"); big.writeInteger(UInt8(0)); big.writeInteger(Bundle.maxFileBytes + 1)
        var decoder = BundleDecoder(announced: Bundle.maxBytes)
        #expect(throws: BundleDecoder.Illegal.tooBig(Bundle.maxFileBytes + 1)) { _ = try decoder.feed(big) }
        // A path of 0 bytes, one over the bound, one not UTF-8; a key over the bound or not ASCII.
        for length in [0, Bundle.maxPathBytes + 1] {
            var bad = ByteBuffer()
            bad.writeInteger(UInt16(length))
            var check = BundleDecoder(announced: 10)
            #expect(throws: BundleDecoder.Illegal.badPath) { _ = try check.feed(bad) }
        }
        var notUTF8 = ByteBuffer()
        notUTF8.writeInteger(UInt16(2)); notUTF8.writeBytes([0xC3, 0x28]); notUTF8.writeInteger(UInt8(0)); notUTF8.writeInteger(UInt64(0))
        var check = BundleDecoder(announced: 10)
        #expect(throws: BundleDecoder.Illegal.badPath) { _ = try check.feed(notUTF8) }
        var longKey = ByteBuffer()
        longKey.writeInteger(UInt16(1)); longKey.writeString("x"); longKey.writeInteger(UInt8(Bundle.maxKeyBytes + 1))
        check = BundleDecoder(announced: 10)
        #expect(throws: BundleDecoder.Illegal.badKey) { _ = try check.feed(longKey) }
        // More files than a bundle may hold.
        let many = Self.records((0...Bundle.maxFiles).map { ("f\($0)", [UInt8]()) })
        #expect(throws: BundleDecoder.Illegal.tooMany) { _ = try Self.decode(many, announced: 0, cut: 1000) }
        // Data after the close.
        var closed = BundleDecoder(announced: 1)
        _ = try closed.feed(Self.records([("x", [9])]))
        try closed.close()
        #expect(throws: BundleDecoder.Illegal.afterClose) { _ = try closed.feed(ByteBuffer(bytes: [0])) }
    }

    @Test(arguments: [1, 3, 1000])
    func resultsComeOutWholeHoweverTheFramesCutThem(cut: Int) throws {
        var out = ByteBuffer()
        let sent: [(Int, Bundle.Result)] = [
            (2, .placed(savedAs: nil)), (0, .placed(savedAs: "x (1).txt")), (3, .alreadyThere(savedAs: nil)),
            (1, .failed(code: .quota, reason: "the node's room is full")),
        ]
        for (index, result) in sent { Bundle.writeResult(index, result, into: &out) }
        var results = BundleResults(files: 4)
        var got: [(Int, Bundle.Result)] = []
        while out.readableBytes > 0, let piece = out.readSlice(length: min(cut, out.readableBytes)) {
            got += try results.feed(piece).map { ($0.index, $0.result) }
        }
        #expect(got.map(\.0) == sent.map(\.0))
        #expect(got.map(\.1) == sent.map(\.1))
        #expect(results.complete)
    }

    @Test func aReceiverThatAnswersForAFileTwiceOrOneThereIsNotIsCaught() throws {
        var twice = ByteBuffer()
        Bundle.writeResult(0, .placed(savedAs: nil), into: &twice)
        Bundle.writeResult(0, .placed(savedAs: nil), into: &twice)
        var results = BundleResults(files: 2)
        #expect(throws: BundleResults.Illegal.twice(0)) { _ = try results.feed(twice) }
        var unknown = ByteBuffer()
        Bundle.writeResult(5, .placed(savedAs: nil), into: &unknown)
        results = BundleResults(files: 2)
        #expect(throws: BundleResults.Illegal.unknownFile(5)) { _ = try results.feed(unknown) }
        var long = ByteBuffer()
        long.writeInteger(UInt32(0)); long.writeInteger(UInt8(0)); long.writeInteger(UInt8(0)); long.writeInteger(UInt16(Bundle.maxTextBytes + 1))
        results = BundleResults(files: 1)
        #expect(throws: BundleResults.Illegal.tooLong) { _ = try results.feed(long) }
        var status = ByteBuffer()
        status.writeInteger(UInt32(0)); status.writeInteger(UInt8(9)); status.writeInteger(UInt8(0)); status.writeInteger(UInt16(0))
        results = BundleResults(files: 1)
        #expect(throws: BundleResults.Illegal.badStatus) { _ = try results.feed(status) }
    }

    @Test func smallFilesAreGatheredInOrderWithinTheBounds() {
        func file(_ size: UInt64) -> OutgoingFile { OutgoingFile(source: "/x", relative: "x", size: size, modified: 0) }
        var files = (0..<130).map { _ in file(100) }
        files.insert(file(Bundle.maxFileBytes + 1), at: 10)
        let units = FolderSender.units(files, bundling: true)
        #expect(units.first == .one(10), "a big file goes alone")
        let bundles = units.compactMap { if case let .bundle(indices) = $0 { indices } else { nil } }
        #expect(bundles.map(\.count) == [64, 64, 2])
        #expect(bundles.flatMap { $0 } == files.indices.filter { $0 != 10 }, "every small file once, in order")
        let big = (0..<40).map { _ in file(Bundle.maxFileBytes) }
        #expect(FolderSender.units(big, bundling: true).allSatisfy {
            if case let .bundle(indices) = $0 { UInt64(indices.count) * Bundle.maxFileBytes <= Bundle.maxBytes } else { false }
        })
        #expect(FolderSender.units(files, bundling: false) == files.indices.map { .one($0) })
        let long = OutgoingFile(source: "/x", relative: String(repeating: "d/", count: Bundle.maxPathBytes / 2) + "x", size: 1, modified: 0)
        #expect(FolderSender.units([file(1), long, file(1)], bundling: true) == [.one(1), .bundle([0, 2])], "a path too long for a record goes alone")
    }
}

@Suite struct StartPermitsManyTests {
    @Test func severalPlacesAreTakenTogetherSoTwoTakersCannotStarveEachOther() async {
        let permits = StartPermits(4)
        #expect(await permits.take(3))
        // Two takers of 3 each: whichever is first gets all it needs once 3 are free, never 1 each.
        async let first = permits.take(3)
        while permits.waitingCount < 1 { await Task.yield() }
        async let second = permits.take(3)
        while permits.waitingCount < 2 { await Task.yield() }
        permits.release(3)
        #expect(await first)
        #expect(permits.waitingCount == 1, "the second still waits for 3")
        permits.release(3)
        #expect(await second)
        #expect(permits.available == 1)
    }

    @Test func aWaiterForSeveralIsNotPassedByOneForFewer() async {
        let permits = StartPermits(4)
        #expect(await permits.take(4))
        async let many = permits.take(3)
        while permits.waitingCount < 1 { await Task.yield() }
        async let one = permits.take(1)
        while permits.waitingCount < 2 { await Task.yield() }
        permits.release(1)
        #expect(permits.waitingCount == 2, "one place: the taker of 3 is first, and the taker of 1 waits behind it")
        permits.release(2)
        #expect(await many)
        permits.release(1)
        #expect(await one)
    }
}
