/// JSON strings as `JSONDecoder` reads the ones it decodes (keys, and the values asked for): every
/// run of plain bytes well-formed UTF-8, no raw control character (below U+0020), escapes only
/// `\" \\ \/ \b \f \n \r \t \uXXXX`, a high surrogate only with a low one after it, no lone low
/// surrogate. `\u0000` is taken, as `JSONDecoder` takes it.
enum FlatJSONString {
    /// The string whose content (between the quotes) is `range`; `simple` when the scanner saw
    /// neither a backslash nor a control character in it.
    static func decode(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, simple: Bool) throws(FlatJSONFailure) -> String {
        if simple {
            guard isWellFormedUTF8(bytes, range) else { throw .malformed }
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
        }
        return String(decoding: try unescaped(bytes, range), as: UTF8.self)
    }

    /// Which of `keys` the key at `range` is, after checking it as `JSONDecoder` checks every key.
    static func index(of bytes: UnsafeRawBufferPointer, _ range: Range<Int>, simple: Bool, in keys: [StaticString]) throws(FlatJSONFailure) -> Int? {
        if simple {
            guard isWellFormedUTF8(bytes, range) else { throw .malformed }
            return index(of: UnsafeRawBufferPointer(rebasing: bytes[range]), in: keys)
        }
        let key = try unescaped(bytes, range)
        return key.withUnsafeBytes { index(of: $0, in: keys) }
    }

    private static func index(of key: UnsafeRawBufferPointer, in keys: [StaticString]) -> Int? {
        keys.firstIndex { wanted in
            wanted.utf8CodeUnitCount == key.count
                && (0..<key.count).allSatisfy { wanted.utf8Start[$0] == key[$0] }
        }
    }

    /// The UTF-8 bytes of a string with escapes.
    private static func unescaped(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) throws(FlatJSONFailure) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(range.count)
        var index = range.lowerBound
        var chunk = index
        while index < range.upperBound {
            let byte = bytes[index]
            if byte < 0x20 { throw .malformed }
            guard byte == UInt8(ascii: "\\") else {
                index += 1
                continue
            }
            guard isWellFormedUTF8(bytes, chunk..<index) else { throw .malformed }
            output.append(contentsOf: bytes[chunk..<index])
            // The scanner saw a byte after each backslash, and four after each `\u`.
            index += 1
            guard index < range.upperBound else { throw .malformed }
            let escaped = bytes[index]
            index += 1
            switch escaped {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): output.append(escaped)
            case UInt8(ascii: "b"): output.append(0x08)
            case UInt8(ascii: "f"): output.append(0x0C)
            case UInt8(ascii: "n"): output.append(0x0A)
            case UInt8(ascii: "r"): output.append(0x0D)
            case UInt8(ascii: "t"): output.append(0x09)
            case UInt8(ascii: "u"):
                let unit = try hex4(bytes, at: index, end: range.upperBound)
                index += 4
                let scalar: Unicode.Scalar?
                if UTF16.isLeadSurrogate(unit) {
                    guard range.upperBound - index >= 2, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                        throw .malformed
                    }
                    let low = try hex4(bytes, at: index + 2, end: range.upperBound)
                    guard UTF16.isTrailSurrogate(low) else { throw .malformed }
                    index += 6
                    scalar = Unicode.Scalar(0x10000 + (UInt32(unit - 0xD800) << 10) + UInt32(low - 0xDC00))
                } else {
                    scalar = Unicode.Scalar(unit)
                }
                guard let scalar else { throw .malformed }
                if let encoded = UTF8.encode(scalar) { output.append(contentsOf: encoded) }
            default:
                throw .malformed
            }
            chunk = index
        }
        guard isWellFormedUTF8(bytes, chunk..<index) else { throw .malformed }
        output.append(contentsOf: bytes[chunk..<index])
        return output
    }

    private static func hex4(_ bytes: UnsafeRawBufferPointer, at start: Int, end: Int) throws(FlatJSONFailure) -> UInt16 {
        guard end - start >= 4 else { throw .malformed }
        var value: UInt16 = 0
        for index in start..<(start + 4) {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw .malformed
            }
            value = value << 4 | UInt16(digit)
        }
        return value
    }

    /// Well-formed UTF-8 as the Unicode standard's table 3-7 says (no overlong forms, no
    /// surrogates, nothing above U+10FFFF): what Swift's own validation takes.
    static func isWellFormedUTF8(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Bool {
        var index = range.lowerBound
        let end = range.upperBound
        while index < end {
            let lead = bytes[index]
            if lead < 0x80 {
                index += 1
                continue
            }
            let count: Int
            var second: ClosedRange<UInt8> = 0x80...0xBF
            switch lead {
            case 0xC2...0xDF: count = 2
            case 0xE0: count = 3; second = 0xA0...0xBF
            case 0xE1...0xEC, 0xEE...0xEF: count = 3
            case 0xED: count = 3; second = 0x80...0x9F
            case 0xF0: count = 4; second = 0x90...0xBF
            case 0xF1...0xF3: count = 4
            case 0xF4: count = 4; second = 0x80...0x8F
            default: return false
            }
            guard end - index >= count, second.contains(bytes[index + 1]) else { return false }
            for offset in 2..<max(count, 2) where !(0x80...0xBF).contains(bytes[index + offset]) { return false }
            index += count
        }
        return true
    }
}
