import Foundation
import NIOCore
import PropertyBased
import Testing
@testable import NearbyCore
@testable import NearbyWire

/// `FlatJSON` against Foundation's `JSONDecoder` on the same bytes: a value from it must be the one
/// JSONDecoder gives, a refusal must be one JSONDecoder makes too; `undecided` (JSONDecoder then
/// answers) is taken but counted, and never happens for what peers send.
@Suite struct FlatJSONTests {
    /// Agreed on a value, agreed on a refusal, or left to JSONDecoder.
    enum Verdict: Equatable { case read, refused, undecided }

    static func verdict<T: FlatJSONDecodable & Equatable>(_: T.Type, _ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) -> Verdict {
        let foundation = try? JSONDecoder().decode(T.self, from: Data(bytes))
        do {
            let flat = try FlatJSON.decode(T.self, from: ByteBuffer(bytes: bytes))
            #expect(flat == foundation, "\(String(decoding: bytes, as: UTF8.self).debugDescription)", sourceLocation: sourceLocation)
            return .read
        } catch .malformed {
            #expect(foundation == nil, "refused what JSONDecoder reads as \(String(describing: foundation)): \(String(decoding: bytes, as: UTF8.self).debugDescription)", sourceLocation: sourceLocation)
            return .refused
        } catch {
            return .undecided
        }
    }

    /// Every hot body type on the same bytes.
    @discardableResult
    static func allAgree(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) -> [Verdict] {
        [
            verdict(FrameBody.Open.self, bytes, sourceLocation: sourceLocation),
            verdict(FrameBody.OpenReply.self, bytes, sourceLocation: sourceLocation),
            verdict(FrameBody.Start.self, bytes, sourceLocation: sourceLocation),
            verdict(FrameBody.Close.self, bytes, sourceLocation: sourceLocation),
            verdict(FrameBody.Reset.self, bytes, sourceLocation: sourceLocation),
        ]
    }

    @Test(arguments: [
        #"{"offset":1}"#, #"{"offset":0}"#, #"{"offset":18446744073709551615}"#, #"{"offset":18446744073709551616}"#,
        #"{"offset":1.0}"#, #"{"offset":1e2}"#, #"{"offset":-0}"#, #"{"offset":-1}"#, #"{"offset":01}"#, #"{"offset":1.5}"#,
        #"{"offset":1,"offset":2}"#, #"{"offset":1,"offset":"x"}"#, #"{"offset":"x","offset":1}"#, #"{"offset":1,}"#,
        #"{"offset":1,,}"#, #"{,}"#, #"{}"#, "", " ", "{", #"{"offset":1} x"#, #"{"offset":1}{"#, " \n{\"offset\" : 7 } \r\n",
        #"{"offset":null}"#, #"{"offset":true}"#, #"{"offset":"1"}"#, #"[{"offset":1}]"#, #"{"offset":[1]}"#,
        #"{"offset":1,"x":[1,{"y":tru}]}"#, #"{"offset":1,"x":01}"#, #"{"offset":1,"x":1.}"#, #"{"offset":1,"x":-}"#,
        #"{"offset":1,"x":"\x"}"#, #"{"offset":1,"x":"\ud800"}"#, #"{"offset":1,"x":"\u12"}"#, #"{"offset":1,"x":[1,]}"#,
        #"{"offset":1,"x":[,]}"#, #"{"offset":1,"x":{"a":1,}}"#, #"{"offset":1,"x":{"a"}}"#, #"{"offset":1,"x":{1:2}}"#,
        #"{"offs\u0065t":1}"#, #"{"offset\u0000":1}"#, #"{"\ud800":1,"offset":1}"#, "{\"offset\":1,\"x\":\"\t\"}",
        "{\"offset\":1,\"x\t\":1}", "\u{FEFF}{\"offset\":1}", #"{"offset":1,"x":nul}"#, #"{"offset":1,"x":[[[]]]}"#,
    ])
    func examples(_ body: String) {
        Self.allAgree(Array(body.utf8))
    }

    @Test(arguments: [
        #"{"sha256":"\u00e9\n\/\"\\\b\f\r\t","bytes":3}"#, #"{"sha256":"\ud83d\ude00","bytes":3}"#, #"{"sha256":"\uD83D\uDE00","bytes":3}"#,
        #"{"sha256":"\ud800","bytes":3}"#, #"{"sha256":"\udc00","bytes":3}"#, #"{"sha256":"\ud800\u0041","bytes":3}"#,
        #"{"sha256":"\ud800\ud800","bytes":3}"#, #"{"sha256":"\u0000","bytes":3}"#, #"{"sha256":"\uZZZZ","bytes":3}"#,
        #"{"sha256":"\q","bytes":3}"#, "{\"sha256\":\"\t\",\"bytes\":3}", "{\"sha256\":\"\u{7f}é😀\",\"bytes\":3}",
        #"{"sha256":"x","bytes":3,"alreadyThere":true,"savedAs":"a (1).txt"}"#, #"{"sha256":"x","bytes":3,"alreadyThere":null}"#,
        #"{"sha256":"x","bytes":3,"alreadyThere":1}"#, #"{"sha256":"x","bytes":3,"savedAs":3}"#, #"{"sha256":"x"}"#,
        #"{"kind":"file","path":"a/b","size":5,"key":"k"}"#, #"{"kind":"weird","path":"a","size":5,"key":"k"}"#,
        #"{"accept":false,"offset":0,"reason":"no","code":"no-save-dir"}"#, #"{"accept":true,"offset":0,"code":null}"#,
        #"{"reason":"gone","code":"connection-lost"}"#, #"{"reason":"gone","code":"new-code"}"#, #"{"reason":"gone"}"#,
    ])
    func stringExamples(_ body: String) {
        Self.allAgree(Array(body.utf8))
    }

    @Test func invalidUTF8() {
        for bad: [UInt8] in [[0xFF], [0xC0, 0x80], [0xE0, 0x9F, 0xBF], [0xED, 0xA0, 0x80], [0xF0, 0x8F, 0xBF, 0xBF], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82], [0xF0, 0x9F, 0x98], [0x80]] {
            for key in ["sha256", "x"] {
                Self.allAgree(Array(#"{"bytes":1,"\#(key)":""#.utf8) + bad + Array(#""}"#.utf8))
                Self.allAgree(Array(#"{"bytes":1,"sha256":"a","\#(key)"#.utf8) + bad + Array(#"":1}"#.utf8))
            }
        }
    }

    /// The UTF-8 check against the standard library's decoder, on bytes near every boundary.
    @Test func utf8CheckIsTheStandardLibrarys() async {
        let edges: [UInt8] = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF]
        await propertyCheck(count: 20000, input: Gen.element(of: edges).compactMap { $0 }.array(of: 0...6)) { bytes in
            var iterator = bytes.makeIterator()
            var decoder = UTF8()
            var valid = true
            decoding: while true {
                switch decoder.decode(&iterator) {
                case .scalarValue: continue
                case .emptyInput: break decoding
                case .error: valid = false; break decoding
                }
            }
            #expect(bytes.withUnsafeBytes { FlatJSONString.isWellFormedUTF8($0, 0..<bytes.count) } == valid, "\(bytes)")
        }
    }

    @Test func nestingIsBoundedAsJSONDecoderBoundsIt() {
        for depth in [1, 100, 510, 511, 512, 513, 2000] {
            let body = #"{"offset":1,"x":"# + String(repeating: "[", count: depth) + String(repeating: "]", count: depth) + "}"
            #expect(Self.verdict(FrameBody.Start.self, Array(body.utf8)) == (depth < 512 ? .read : .refused))
            let objects = #"{"offset":1,"x":"# + String(repeating: #"{"a":"#, count: depth) + "0" + String(repeating: "}", count: depth) + "}"
            #expect(Self.verdict(FrameBody.Start.self, Array(objects.utf8)) == (depth < 512 ? .read : .refused))
        }
    }

    /// What this version sends, and JSONEncoder's form of it: always decided here.
    @Test func whatPeersSendIsDecided() async {
        await propertyCheck(count: 300, input: Generator(run: { rng in FlatJSONSamples.bodies(&rng) })) { bodies in
            for bytes in bodies {
                let verdicts = Self.allAgree(bytes)
                #expect(!verdicts.contains(.undecided))
                #expect(verdicts.contains(.read))
            }
        }
    }

    /// Bodies in every form JSON allows: keys reordered, unknown keys with nested values, duplicates,
    /// escapes, whitespace, nulls, wrong types.
    @Test func generatedBodiesAgree() async {
        var counts: [Verdict: Int] = [:]
        defer { print("generated bodies:", counts) }
        await propertyCheck(count: 2000, input: Generator(run: { rng in FlatJSONSamples.noisy(&rng) })) { bytes in
            for verdict in Self.allAgree(bytes) { counts[verdict, default: 0] += 1 }
        }
        // Both answers are exercised; only numbers other than plain integers are left to JSONDecoder.
        #expect(counts[.read, default: 0] > 500 && counts[.refused, default: 0] > 500)
        #expect(counts[.undecided, default: 0] < counts[.read, default: 0] / 2)
    }

    /// The same bodies with bytes changed, dropped, added or cut: refused by both, or read alike.
    @Test func mutatedBodiesAgree() async {
        var counts: [Verdict: Int] = [:]
        await propertyCheck(count: 3000, input: Generator(run: { rng in FlatJSONSamples.mutated(FlatJSONSamples.noisy(&rng), &rng) })) { bytes in
            for verdict in Self.allAgree(bytes) { counts[verdict, default: 0] += 1 }
        }
        print("mutated bodies:", counts)
        #expect(counts[.read, default: 0] > 300)
    }

    @Test func wireMessageLeavesOddNumbersToJSONDecoder() throws {
        var frame = Frame(kind: .start, payload: ByteBuffer(string: #"{"offset":1e2}"#))
        frame.channel = 3
        #expect(try WireMessage(frame) == .channel(3, .start(FrameBody.Start(offset: 100))))
        frame.payload = ByteBuffer(string: #"{"offset":-1}"#)
        #expect(throws: ProtocolViolation.self) { try WireMessage(frame) }
    }
}
