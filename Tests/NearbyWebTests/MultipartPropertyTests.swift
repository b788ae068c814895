import NIOCore
import PropertyBased
import Testing
@testable import NearbyBase
@testable import NearbyWeb

/// The streaming parser against a reference that reads the whole body at once with a naive search:
/// however a body is cut into chunks, the parts (or the failure) are the same.
@Suite struct MultipartPropertyTests {
    typealias Part = MultipartParserTests.Part
    static let boundary = MultipartParserTests.boundary
    static let delimiter = Array("\r\n--\(boundary)".utf8)

    /// Bytes that tempt the search: CR, LF, dashes, the boundary's beginning, a near-miss delimiter.
    static let pieces: [[UInt8]] = [
        [13], [10], [45], [13, 10], Array("--".utf8), Array("\r\n--".utf8), Array("\r\n--\(boundary.dropLast())".utf8),
        Array("\r\n--\(boundary.dropLast())x".utf8), Array("\r\n\r\n".utf8), [0], [255], Array("a".utf8),
    ]

    /// Random bytes to take slices of: drawing each byte of each sample costs a debug build seconds
    /// of the cooperative threads every other test needs (the suite must not starve them).
    static let noise: [UInt8] = {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        return (0..<16_384).map { _ in
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return UInt8(truncatingIfNeeded: state)
        }
    }()

    static func data(_ rng: inout some RandomNumberGenerator) -> [UInt8] {
        var out: [UInt8] = []
        for _ in 0..<Int.random(in: 0...40, using: &rng) {
            if Bool.random(using: &rng), let piece = pieces.randomElement(using: &rng) {
                out += piece
            } else {
                let count = Int.random(in: 0...300, using: &rng)
                let start = Int.random(in: 0...(noise.count - count), using: &rng)
                out += noise[start..<(start + count)]
            }
        }
        // Never the whole delimiter: a body with one in a part's data is another body.
        while let whole = out.firstRange(of: delimiter) { out[whole.lowerBound] = 0 }
        return out
    }

    /// A browser-style body with a preamble and an epilogue, and where to cut it.
    static func sample(_ rng: inout some RandomNumberGenerator) -> (parts: [Part], body: [UInt8], cuts: [Int]) {
        let parts = (0..<Int.random(in: 0...5, using: &rng)).map { index -> Part in
            ("f\(index)", Bool.random(using: &rng) ? "file \(index).bin" : nil, data(&rng))
        }
        let preamble = Bool.random(using: &rng) ? Array("ignored\r\n".utf8) : []
        let body = preamble + MultipartParserTests.body(parts) + (Bool.random(using: &rng) ? data(&rng) : [])
        let cuts = (0..<Int.random(in: 0...12, using: &rng)).map { _ in Int.random(in: 0...body.count, using: &rng) }.sorted()
        return (parts, body, cuts)
    }

    /// The parts of a whole body, read the simplest way: the whole body in one array, each
    /// delimiter and blank line found by comparing at every index.
    static func reference(_ body: [UInt8]) -> [Part]? {
        let whole = [13, 10] + body
        func find(_ needle: [UInt8], from: Int) -> Int? {
            guard from <= whole.count - needle.count else { return nil }
            return whole[from...].firstRange(of: needle)?.lowerBound
        }
        var parts: [Part] = []
        guard var at = find(delimiter, from: 0) else { return nil }
        while true {
            let after = at + delimiter.count
            guard whole.count >= after + 2 else { return nil }
            if whole[after] == 45, whole[after + 1] == 45 { return parts }
            guard whole[after] == 13, whole[after + 1] == 10, let blank = find([13, 10, 13, 10], from: after + 2),
                  let (field, filename, _) = try? MultipartParser.partHeader(Array(whole[(after + 2)..<blank])),
                  let next = find(delimiter, from: blank + 4)
            else { return nil }
            parts.append((field, filename, Array(whole[(blank + 4)..<next])))
            at = next
        }
    }

    /// Feeds `body` cut at `cuts`; the parts, or the failure.
    static func parse(_ body: [UInt8], cuts: [Int]) -> Result<[Part], MultipartParser.Failure> {
        guard var parser = MultipartParser(boundary: boundary) else { return .failure(.malformed("boundary")) }
        var parts: [Part] = []
        do throws(MultipartParser.Failure) {
            for (start, end) in zip([0] + cuts, cuts + [body.count]) where start < end {
                for event in try parser.feed(ByteBuffer(bytes: body[start..<end])) {
                    MultipartParserTests.collect(event, into: &parts)
                }
            }
            try parser.finish()
            return .success(parts)
        } catch {
            return .failure(error)
        }
    }

    static func same(_ a: [Part], _ b: [Part]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 && $0.2 == $1.2 }
    }

    /// `work` on the blocking pool: a debug build's parsing is CPU-bound, and on the cooperative
    /// threads (as many as cores) it would hold up every other test's waits and deadlines.
    static func offThePool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        do { return try await Blocking.run { _ in work() } } catch { return work() }
    }

    @Test func randomBodiesCutAtRandomGiveTheReferenceParts() async {
        await propertyCheck(count: 400, input: Generator(run: { rng in Self.sample(&rng) })) { sample in
            let (reference, parsed) = await Self.offThePool { (Self.reference(sample.body), Self.parse(sample.body, cuts: sample.cuts)) }
            guard let expected = reference else {
                return #expect(Bool(false), "the reference could not read a generated body")
            }
            guard case let .success(parts) = parsed else {
                return #expect(Bool(false), "refused a well-formed body cut at \(sample.cuts)")
            }
            #expect(Self.same(parts, expected), "cut at \(sample.cuts)")
            #expect(Self.same(expected, sample.parts), "the reference did not read what was written")
        }
    }

    @Test func damagedBodiesGiveTheSameAnswerHoweverTheyAreCut() async {
        let damaged = Generator(run: { rng in
            var sample = Self.sample(&rng)
            for _ in 0..<Int.random(in: 1...4, using: &rng) where !sample.body.isEmpty {
                sample.body[Int.random(in: 0..<sample.body.count, using: &rng)] = [13, 10, 45, 0, 34].randomElement(using: &rng) ?? 0
            }
            return sample
        })
        await propertyCheck(count: 400, input: damaged) { sample in
            let (whole, cut, reference) = await Self.offThePool {
                (Self.parse(sample.body, cuts: []), Self.parse(sample.body, cuts: sample.cuts), Self.reference(sample.body))
            }
            switch (whole, cut) {
            case let (.success(a), .success(b)): #expect(Self.same(a, b), "cut at \(sample.cuts)")
            case let (.failure(a), .failure(b)): #expect(a == b, "cut at \(sample.cuts)")
            default: #expect(Bool(false), "\(whole) whole, \(cut) cut at \(sample.cuts)")
            }
            if case let .success(parts) = whole, let expected = reference { #expect(Self.same(parts, expected)) }
        }
    }

    @Test func aDelimiterCutAtEveryPositionIsFound() async throws {
        let data = Array("x\r\n--\(Self.boundary.dropLast())\r".utf8)
        let body = MultipartParserTests.body([("a", "a.bin", data), ("b", nil, []), ("c", "c", data)])
        guard let expected = Self.reference(body) else { return #expect(Bool(false)) }
        // Each cut, and a second cut within a delimiter's length: a chunk that holds only part of one.
        let wrong = await Self.offThePool {
            (0...body.count).filter { first in
                let second = min(body.count, first + 1 + first % Self.delimiter.count)
                guard case let .success(once) = Self.parse(body, cuts: [first]),
                      case let .success(twice) = Self.parse(body, cuts: [first, second])
                else { return true }
                return !Self.same(once, expected) || !Self.same(twice, expected)
            }
        }
        #expect(wrong.isEmpty, "cut at \(wrong)")
    }
}
